// Ragged rows scaled to unit L1 norm: row r is x[offs[r] .. offs[r + 1]) and
// out[j] = x[j] / (sum of |x| over the row + 1e-6). One warp a row, four warps a block:
// the lanes stride the row summing |x|, a hand-written shuffle tree leaves the sum in lane
// 0, which posts the row's scale to shared memory for the second pass.
// Launch: grid = ((rows + 3) / 4), block = (128).

#include <cstdint>

#define ROWS_PER_BLOCK 4
#define EPS 1e-6f

extern "C" __global__ void rowl1_scale_warp(float* __restrict__ out, const float* __restrict__ x,
                                            const int* __restrict__ offs, int rows) {
  __shared__ float scale[ROWS_PER_BLOCK];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const int row = blockIdx.x * ROWS_PER_BLOCK + (int)warp;
  const bool live = row < rows;
  const int64_t begin = live ? offs[row] : 0;
  const int64_t end = live ? offs[row + 1] : 0;
  float s = 0.0f;
  int64_t j = begin + lane;
  while (j < end) {
    s += fabsf(x[j]);
    j += 32;
  }
  s += __shfl_down_sync(0xffffffffu, s, 16);
  s += __shfl_down_sync(0xffffffffu, s, 8);
  s += __shfl_down_sync(0xffffffffu, s, 4);
  s += __shfl_down_sync(0xffffffffu, s, 2);
  s += __shfl_down_sync(0xffffffffu, s, 1);
  if (lane == 0) scale[warp] = 1.0f / (s + EPS);
  __syncthreads();
  if (!live) return;
  const float k = scale[warp];
  for (j = begin + lane; j < end; j += 32) out[j] = x[j] * k;
}
