#include <cstdint>
__global__ void __launch_bounds__(256) quant(const float* __restrict__ x, int8_t* q,
                                             float* scales, int rows, int cols) {
  int r = blockIdx.x;
  __shared__ float partial[256];
  float m = 0.f;
  for (int j = threadIdx.x; j < cols; j += 256) m = fmaxf(m, fabsf(x[r * cols + j]));
  partial[threadIdx.x] = m;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + s]);
    __syncthreads();
  }
  float scale = fmaxf(partial[0], 1e-12f) / 127.f;
  if (threadIdx.x == 0) scales[r] = scale;
  for (int j = threadIdx.x; j < cols; j += 256) q[r * cols + j] = (int8_t)rintf(x[r * cols + j] / scale);
}
