// Per-row mean and population variance by Welford's update and Chan's merge.
// Expert parameterization (hand-written): WARPS warps a block, LANES lanes a row (a warp
// takes 32 / LANES rows), ACC independent Welford accumulators a lane (more loads in
// flight, merged before the shuffle tree), and VEC=1 reading float4s where cols is a
// multiple of 4.
// Launch: grid = ceil(rows / (WARPS * 32 / LANES)), block = WARPS * 32.
// Defaults: the kernel as written.

#ifndef WARPS
#define WARPS 8
#endif
#ifndef LANES
#define LANES 32
#endif
#ifndef ACC
#define ACC 1
#endif
#ifndef VEC
#define VEC 0
#endif
#define ROWS_PER_BLOCK (WARPS * 32 / LANES)

struct Stats {
  float n, mean, m2;
};

__device__ __forceinline__ void push(Stats& s, float v) {
  s.n += 1.0f;
  const float d = v - s.mean;
  s.mean += d / s.n;
  s.m2 += d * (v - s.mean);
}

__device__ __forceinline__ void merge(Stats& a, float nb, float meanb, float m2b) {
  const float nt = a.n + nb;
  if (nt == 0.0f) return;
  const float d = meanb - a.mean;
  a.mean += d * (nb / nt);
  a.m2 += m2b + d * d * (a.n * nb / nt);
  a.n = nt;
}

extern "C" __global__ void __launch_bounds__(WARPS * 32) welford_rows_warp(
    float* __restrict__ mean_out, float* __restrict__ var_out, const float* __restrict__ x,
    int rows, int cols) {
  const int lane = threadIdx.x % LANES;
  const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / LANES;
  const bool live = row < rows;
  const float* p = x + (size_t)(live ? row : 0) * cols;
  Stats acc[ACC];
#pragma unroll
  for (int a = 0; a < ACC; ++a) acc[a] = Stats{0.0f, 0.0f, 0.0f};
  if (VEC && (cols & 3) == 0) {
    const float4* p4 = reinterpret_cast<const float4*>(p);
    const int units = live ? cols / 4 : 0;
    for (int u = lane; u < units; u += LANES * ACC) {
#pragma unroll
      for (int a = 0; a < ACC; ++a) {
        const int k = u + a * LANES;
        if (k < units) {
          const float4 v = p4[k];
          push(acc[a], v.x);
          push(acc[a], v.y);
          push(acc[a], v.z);
          push(acc[a], v.w);
        }
      }
    }
  } else {
    const int units = live ? cols : 0;
    for (int u = lane; u < units; u += LANES * ACC) {
#pragma unroll
      for (int a = 0; a < ACC; ++a) {
        const int k = u + a * LANES;
        if (k < units) push(acc[a], p[k]);
      }
    }
  }
#pragma unroll
  for (int a = 1; a < ACC; ++a) merge(acc[0], acc[a].n, acc[a].mean, acc[a].m2);
  Stats s = acc[0];
#pragma unroll
  for (int off = LANES / 2; off > 0; off /= 2) {
    const float nb = __shfl_down_sync(0xffffffffu, s.n, off, LANES);
    const float meanb = __shfl_down_sync(0xffffffffu, s.mean, off, LANES);
    const float m2b = __shfl_down_sync(0xffffffffu, s.m2, off, LANES);
    merge(s, nb, meanb, m2b);
  }
  if (live && lane == 0) {
    mean_out[row] = s.mean;
    var_out[row] = s.m2 / (float)cols;
  }
}
