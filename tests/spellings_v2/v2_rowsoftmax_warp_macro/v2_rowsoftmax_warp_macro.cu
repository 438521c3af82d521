// y[r, :] = softmax(x[r, :]): one warp a row, four rows a block; the lane and the warp
// from masks and macros, an early return past the last row, __ldg through a row pointer,
// the max and the sum folded with down shuffles and broadcast from lane 0.
// Launch: grid = (rows + 3) / 4, block = 128.
#define WARP 32
#define ROWS_PER_BLOCK 4

extern "C" __global__ void v2_rowsoftmax_warp_macro(float* y, const float* x, int rows,
                                                    int cols) {
  const int lane = threadIdx.x & (WARP - 1);
  const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP;
  if (row >= rows) return;
  const float* xr = x + (size_t)row * cols;
  float m = -INFINITY;
  for (int c = lane; c < cols; c += WARP) m = fmaxf(m, __ldg(xr + c));
#pragma unroll
  for (int o = WARP / 2; o > 0; o >>= 1) m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, o));
  m = __shfl_sync(0xffffffffu, m, 0);
  float s = 0.0f;
  for (int c = lane; c < cols; c += WARP) s += expf(__ldg(xr + c) - m);
#pragma unroll
  for (int o = WARP / 2; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  s = __shfl_sync(0xffffffffu, s, 0);
  float* yr = y + (size_t)row * cols;
  for (int c = lane; c < cols; c += WARP) yr[c] = expf(xr[c] - m) / s;
}
