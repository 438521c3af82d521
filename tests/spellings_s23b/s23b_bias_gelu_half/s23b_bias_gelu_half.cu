// y = gelu(x + b) (tanh form), x and b half, y float; a grid-stride loop of 264 blocks.
// Launch: grid = 264, block = 256.
#include <cuda_fp16.h>

__device__ __forceinline__ float gelu_tanh(float v) {
  const float k = 0.7978845608f;
  return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}

extern "C" __global__ void s23b_bias_gelu_half(float* y, const __half* x, const __half* b,
                                               int n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n;
       i += (size_t)gridDim.x * blockDim.x)
    y[i] = gelu_tanh(__half2float(x[i]) + __half2float(b[i]));
}
