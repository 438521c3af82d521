// Ragged rows scaled to unit L1 norm.
// Expert parameterization (hand-written): LANES lanes a row (32 / LANES rows a warp, the
// shuffle tree over groups of LANES), WARPS warps a block, and ACC independent partial sums
// a lane in the summing pass (ACC * LANES elements a step, the rest one stride at a time).
// Launch: grid = ceil(rows / (WARPS * 32 / LANES)), block = WARPS * 32.
// Defaults: the kernel's launch as written.

#include <cstdint>

#ifndef WARPS
#define WARPS 4
#endif
#ifndef LANES
#define LANES 32
#endif
#ifndef ACC
#define ACC 1
#endif
#define EPS 1e-6f
#define ROWS_PER_BLOCK (WARPS * (32 / LANES))

extern "C" __global__ void __launch_bounds__(WARPS * 32) rowl1_scale_warp(
    float* __restrict__ out, const float* __restrict__ x, const int* __restrict__ offs,
    int rows) {
  __shared__ float scale[ROWS_PER_BLOCK];
  const unsigned lane = threadIdx.x % LANES, group = threadIdx.x / LANES;
  const int row = blockIdx.x * ROWS_PER_BLOCK + (int)group;
  const bool live = row < rows;
  const int64_t begin = live ? offs[row] : 0;
  const int64_t end = live ? offs[row + 1] : 0;
  float acc[ACC];
#pragma unroll
  for (int a = 0; a < ACC; ++a) acc[a] = 0.0f;
  int64_t j = begin + lane;
  for (; j + (ACC - 1) * LANES < end; j += ACC * LANES) {
#pragma unroll
    for (int a = 0; a < ACC; ++a) acc[a] += fabsf(x[j + a * LANES]);
  }
  for (; j < end; j += LANES) acc[0] += fabsf(x[j]);
  float s = acc[0];
#pragma unroll
  for (int a = 1; a < ACC; ++a) s += acc[a];
#pragma unroll
  for (int o = LANES / 2; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o, LANES);
  if (lane == 0) scale[group] = 1.0f / (s + EPS);
  __syncthreads();
  if (!live) return;
  const float k = scale[group];
  for (j = begin + lane; j < end; j += LANES) out[j] = x[j] * k;
}
