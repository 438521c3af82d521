// Energy of each probe in the field of the ions of probe_energy. Expert parameterization
// (hand-written): each thread evaluates ITEMS probes (BLOCK_THREADS apart) with independent
// accumulators, so one ion's parameters serve ITEMS probes and ITEMS chains of divisions,
// roots and exponentials overlap; the ion loop is unrolled UNROLL times; TABLE 1 builds a
// per-block shared table once (sigma^2, 4 epsilon, and the per-ion shift lj(RCUT^2), which
// the kernel as written recomputes for every pair in range), TABLE 0 reads the constant
// table as written; BRANCHLESS 1 evaluates every pair and selects (no divergence at the
// cutoff); RSQRT 1 takes 1/r from rsqrtf and r as r^2 / r (no square root, no division).
// Launch: grid = ceil(n / (BLOCK_THREADS * ITEMS)), block = BLOCK_THREADS.
// Defaults: the kernel as written.
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef TABLE
#define TABLE 0
#endif
#ifndef BRANCHLESS
#define BRANCHLESS 0
#endif
#ifndef RSQRT
#define RSQRT 0
#endif
#define NSRC 96
#define RCUT 2.5f
#define SOFT2 0.01f
#define KAPPA 0.8f
// `#pragma unroll N` takes a constant expression, not a macro (the pragma's text is not
// macro-expanded)
constexpr int ion_unroll = UNROLL;

__constant__ float ions[NSRC * 6];  // per ion: x, y, z, charge, epsilon, sigma

__device__ __forceinline__ float lj(float r2, float sig, float eps) {
  const float sr2 = sig * sig / r2;
  const float sr6 = sr2 * sr2 * sr2;
  return 4.0f * eps * (sr6 * sr6 - sr6);
}

__device__ __forceinline__ float yukawa(float r) {
  return expf(-KAPPA * r) / r;
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
probe_energy(float* __restrict__ energy, const float* __restrict__ pos,
             const float* __restrict__ q, int n) {
#if TABLE
  // per ion: (x, y, z, charge) and (sigma^2, 4 epsilon, lj(RCUT^2), unused)
  __shared__ float4 where_q[NSRC];
  __shared__ float4 lj_terms[NSRC];
  for (int s = threadIdx.x; s < NSRC; s += BLOCK_THREADS) {
    const float* ion = &ions[6 * s];
    where_q[s] = make_float4(ion[0], ion[1], ion[2], ion[3]);
    lj_terms[s] = make_float4(ion[5] * ion[5], 4.0f * ion[4], lj(RCUT * RCUT, ion[5], ion[4]),
                              0.0f);
  }
  __syncthreads();
  const float yukawa_cut = yukawa(RCUT);
#endif
  const int base = blockIdx.x * (BLOCK_THREADS * ITEMS) + threadIdx.x;
  float x[ITEMS], y[ITEMS], z[ITEMS], qi[ITEMS], e[ITEMS];
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * BLOCK_THREADS;
    const bool in = i < n;
    x[it] = in ? pos[3 * i] : 0.0f;
    y[it] = in ? pos[3 * i + 1] : 0.0f;
    z[it] = in ? pos[3 * i + 2] : 0.0f;
    qi[it] = in ? q[i] : 0.0f;
    e[it] = 0.0f;
  }
#pragma unroll ion_unroll
  for (int s = 0; s < NSRC; ++s) {
#if TABLE
    const float4 a = where_q[s];
    const float4 b = lj_terms[s];
    const float ix = a.x, iy = a.y, iz = a.z, qs = a.w;
#else
    const float* ion = &ions[6 * s];
    const float ix = ion[0], iy = ion[1], iz = ion[2], qs = ion[3];
#endif
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      const float dx = x[it] - ix, dy = y[it] - iy, dz = z[it] - iz;
      const float r2 = dx * dx + dy * dy + dz * dz + SOFT2;
#if !BRANCHLESS
      if (r2 < RCUT * RCUT) {
#endif
#if RSQRT
        const float inv_r = rsqrtf(r2);
        const float yk = expf(-KAPPA * (r2 * inv_r)) * inv_r;
#else
        const float yk = yukawa(sqrtf(r2));
#endif
#if TABLE
        const float sr2 = b.x / r2;
        const float sr6 = sr2 * sr2 * sr2;
        const float term = b.y * (sr6 * sr6 - sr6) - b.z + qi[it] * qs * (yk - yukawa_cut);
#else
        const float shift = lj(RCUT * RCUT, ion[5], ion[4]) + qi[it] * qs * yukawa(RCUT);
        const float term = lj(r2, ion[5], ion[4]) + qi[it] * qs * yk - shift;
#endif
#if BRANCHLESS
        e[it] += r2 < RCUT * RCUT ? term : 0.0f;
#else
        e[it] += term;
      }
#endif
    }
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * BLOCK_THREADS;
    if (i < n) energy[i] = e[it];
  }
}
