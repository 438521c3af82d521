// int8 -> float dequantization with one scale per group of 64 consecutive values.
// Launch: grid = (n + 255) / 256, block = 256.
#include <cstdint>

extern "C" __global__ void dequant_int8(float* __restrict__ out, const int8_t* __restrict__ q,
                                        const float* __restrict__ scales, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) out[i] = (float)q[i] * scales[i / 64];
}
