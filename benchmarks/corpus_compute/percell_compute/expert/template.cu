// The plane field of percell_compute. Expert parameterization (hand-written): each thread
// evaluates ITEMS points (BLOCK_THREADS apart: coalesced) with independent accumulators,
// so each plane's table entry is read once per ITEMS points and the ITEMS chains of
// transcendental calls overlap; BRANCHLESS 1 evaluates both sides and selects (no
// divergence inside a warp); USE_FAST_MATH is the kernel's own method switch.
// Launch: grid = ceil(n / (BLOCK_THREADS * ITEMS)), block = BLOCK_THREADS.
// Defaults: the kernel as written.
#ifndef USE_FAST_MATH
#define USE_FAST_MATH 0
#endif
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef BRANCHLESS
#define BRANCHLESS 0
#endif
#define NPLANES 16

__constant__ float planes[NPLANES * 6];

#if USE_FAST_MATH
#define EXP_(v) __expf(v)
#define SIN_(v) __sinf(v)
#define COS_(v) __cosf(v)
#else
#define EXP_(v) expf(v)
#define SIN_(v) sinf(v)
#define COS_(v) cosf(v)
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
percell_compute(float* __restrict__ out, const float* __restrict__ px,
                const float* __restrict__ py, const float* __restrict__ pz, int n) {
  const int base = blockIdx.x * (BLOCK_THREADS * ITEMS) + threadIdx.x;
  float x[ITEMS], y[ITEMS], z[ITEMS], acc[ITEMS];
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * BLOCK_THREADS;
    const bool in = i < n;
    x[it] = in ? px[i] : 0.0f;
    y[it] = in ? py[i] : 0.0f;
    z[it] = in ? pz[i] : 0.0f;
    acc[it] = 0.0f;
  }
#pragma unroll
  for (int p = 0; p < NPLANES; ++p) {
    const float nx = planes[p * 6 + 0], ny = planes[p * 6 + 1], nz = planes[p * 6 + 2];
    const float d = planes[p * 6 + 3], wt = planes[p * 6 + 4], k = planes[p * 6 + 5];
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      const float s = nx * x[it] + ny * y[it] + nz * z[it] - d;
#if BRANCHLESS
      const float front = wt * EXP_(-k * s * s);
      const float back = wt * (1.0f + SIN_(s) * COS_(k * s));
      acc[it] += s > 0.0f ? front : back;
#else
      if (s > 0.0f) {
        acc[it] += wt * EXP_(-k * s * s);
      } else {
        acc[it] += wt * (1.0f + SIN_(s) * COS_(k * s));
      }
#endif
    }
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * BLOCK_THREADS;
    if (i < n) out[i] = acc[it];
  }
}
