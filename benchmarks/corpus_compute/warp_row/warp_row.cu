// Row-wise symmetric int8 quantization, one warp per row, lanes striding the row:
//   scales[r] = max |x[r, :]| / 127,  q[r, c] = round(x[r, c] * 127 / max |x[r, :]|)
// Launch: grid = (rows + 3) / 4, block = 128 (four warps, four rows per block).
#include <cstdint>

#define WARPS_PER_BLOCK 4

extern "C" __global__ void warp_row(int8_t* q, float* scales, const float* x, int rows,
                                    int cols) {
  int row = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* xr = x + (long long)row * cols;
  float amax = 0.0f;
  for (int c = lane; c < cols; c += 32) amax = fmaxf(amax, fabsf(xr[c]));
  for (int off = 16; off > 0; off >>= 1)
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  int8_t* qr = q + (long long)row * cols;
  for (int c = lane; c < cols; c += 32) qr[c] = (int8_t)__float2int_rn(xr[c] * inv);
  if (lane == 0) scales[row] = amax / 127.0f;
}
