// Softmax cross-entropy of each row of half logits [rows, cols] against its label:
// loss[r] = log(sum_c exp(z[r][c] - max_r)) + max_r - z[r][label[r]], accumulated in float.
// One warp a row (a max pass, then a sum-of-exponentials pass, each reduced by butterfly
// shuffles), 4 warps a block, the row being the warp's index.
// Launch: grid = ((rows + 3) / 4), block = (128).
#include <cuda_fp16.h>

#define WARPS_PER_BLOCK 4

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void xent_rows_f16(float* loss, const __half* logits, const int* label,
                                         int rows, int cols) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
  if (row >= rows) return;
  const __half* z = logits + (size_t)row * cols;
  float m = -3.0e38f;
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, __half2float(z[c]));
  m = warp_max(m);
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += expf(__half2float(z[c]) - m);
  s = warp_sum(s);
  if (lane == 0) loss[row] = logf(s) + m - __half2float(z[label[row]]);
}
