// Running maximum along each row of a rows x cols row-major matrix: out[r][c] =
// max(in[r][0..c]). A warp a row in chunks of 32 columns, written with the __shfl_*_sync
// intrinsics: an inclusive max-scan by __shfl_up_sync, the carry from lane 31 by
// __shfl_sync. Lane and warp by shifts and masks.
// Launch: grid = ((rows + 7) / 8), block = (256).

#define WARPS_PER_BLOCK 8
#define FULL 0xffffffffu

extern "C" __global__ void cummax_rows_cg(float* out, const float* in, int rows, int cols) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
  if (row >= rows) return;
  const float* src = in + (size_t)row * cols;
  float* dst = out + (size_t)row * cols;
  float carry = -INFINITY;
  for (int base = 0; base < cols; base += 32) {
    const int c = base + lane;
    float v = -INFINITY;
    if (c < cols) v = src[c];
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const float up = __shfl_up_sync(FULL, v, d);
      if (lane >= d) v = fmaxf(v, up);
    }
    v = fmaxf(v, carry);
    if (c < cols) dst[c] = v;
    carry = __shfl_sync(FULL, v, 31);
  }
}
