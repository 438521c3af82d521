// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + 1e-6): one warp a row on a (32, 8) block,
// the lane threadIdx.x, the row from threadIdx.y; the sum of squares walks a pointer.
// Launch: grid = (rows + 7) / 8, block = (32, 8).
extern "C" __global__ void v2_rownorm_warp2d(float* y, const float* x, int rows, int cols) {
  const int row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row < rows) {
    const float* src = x + (size_t)row * cols + threadIdx.x;
    const float* end = x + (size_t)(row + 1) * cols;
    float ss = 0.0f;
    while (src < end) {
      ss += *src * *src;
      src += 32;
    }
#pragma unroll
    for (int m = 16; m >= 1; m /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, m);
    const float inv = rsqrtf(ss / cols + 1e-6f);
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    for (int c = threadIdx.x; c < cols; c += warpSize) yr[c] = xr[c] * inv;
  }
}
