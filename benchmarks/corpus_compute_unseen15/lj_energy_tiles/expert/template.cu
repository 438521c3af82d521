// energy[i] = Lennard-Jones energy of particle i against every other within the cutoff.
// Expert parameterization (hand-written): a block of THREADS threads owns THREADS * ITEMS
// particles, ITEMS a thread strided by THREADS, and stages THREADS * ITEMS positions a tile
// (ITEMS loads a thread), each read once from shared memory and used for all ITEMS
// particles; the pair loop over a full tile is unrolled by UNROLL, a partial last tile runs
// one pair at a time. BRANCHLESS 1 computes every pair's term and selects it (no divergence);
// 0 branches past the cutoff as written (added 2026-11-29: the first expert was branchless
// only, 0.54x of the kernel as written on the H100 and the H200).
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written (128 threads, one particle each, no unrolling).

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef BRANCHLESS
#define BRANCHLESS 0
#endif
#define TILE (THREADS * ITEMS)
#define CUTOFF2 6.25f

__device__ __forceinline__ float lj_term(float4 p, float4 q) {
  const float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
  const float r2 = dx * dx + dy * dy + dz * dz;
#if BRANCHLESS
  const float s2 = 1.f / r2;
  const float s6 = s2 * s2 * s2;
  return r2 < CUTOFF2 ? 4.f * (s6 * s6 - s6) : 0.f;
#else
  // most pairs lie past the cutoff: a branch skips their division
  if (r2 >= CUTOFF2) return 0.f;
  const float s2 = 1.f / r2;
  const float s6 = s2 * s2 * s2;
  return 4.f * (s6 * s6 - s6);
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS) lj_energy_tiles(float* energy,
                                                                       const float* xyzw,
                                                                       int n) {
  const float4* pos = reinterpret_cast<const float4*>(xyzw);
  __shared__ float4 tile[TILE];
  const int base = blockIdx.x * TILE + threadIdx.x;
  float4 me[ITEMS];
  float e[ITEMS];
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    me[it] = i < n ? pos[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    e[it] = 0.f;
  }
  for (int start = 0; start < n; start += TILE) {
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      const int j = start + threadIdx.x + it * THREADS;
      tile[threadIdx.x + it * THREADS] = j < n ? pos[j] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    __syncthreads();
    const int count = n - start < TILE ? n - start : TILE;
    int k = 0;
    for (; k + UNROLL <= count; k += UNROLL) {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const float4 q = tile[k + u];
#pragma unroll
        for (int it = 0; it < ITEMS; ++it)
          if (start + k + u != base + it * THREADS) e[it] += lj_term(me[it], q);
      }
    }
    for (; k < count; ++k) {
      const float4 q = tile[k];
#pragma unroll
      for (int it = 0; it < ITEMS; ++it)
        if (start + k != base + it * THREADS) e[it] += lj_term(me[it], q);
    }
    __syncthreads();
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    if (i < n) energy[i] = e[it];
  }
}
