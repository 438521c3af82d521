// poly_root: per element the root in [0, 1] of p_sel(x) = y by safeguarded Newton (see
// the kernel as written). Expert parameterization (hand-written): each thread solves
// ITEMS elements (BLOCK_THREADS apart: coalesced) in lockstep, each chain stopping on its
// own test, so independent Horner chains overlap; TABLE_SMEM 1 copies the 64-float table
// to shared memory (divergent rows of a __constant__ array serialize per distinct
// address); FAST_DIV 1 uses __fdividef for the Newton step.
// Launch: grid = ceil(n / (BLOCK_THREADS * ITEMS)), block = BLOCK_THREADS.
// Defaults: the kernel as written.
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef TABLE_SMEM
#define TABLE_SMEM 0
#endif
#ifndef FAST_DIV
#define FAST_DIV 0
#endif
#define NPOLY 8
#define DEG 7
#define MAX_STEPS 60
#define TOL 1e-6f

__constant__ float coef[NPOLY * (DEG + 1)];

#if FAST_DIV
#define DIV_(a, b) __fdividef(a, b)
#else
#define DIV_(a, b) ((a) / (b))
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
poly_root(float* __restrict__ root, const float* __restrict__ y, const int* __restrict__ sel,
          int n) {
#if TABLE_SMEM
  __shared__ float table[NPOLY * (DEG + 1)];
  for (int k = threadIdx.x; k < NPOLY * (DEG + 1); k += BLOCK_THREADS) table[k] = coef[k];
  __syncthreads();
#else
  const float* table = coef;
#endif
  const int base = blockIdx.x * (BLOCK_THREADS * ITEMS) + threadIdx.x;
  const float* c[ITEMS];
  float target[ITEMS], lo[ITEMS], hi[ITEMS], x[ITEMS];
  bool live[ITEMS];
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * BLOCK_THREADS;
    live[it] = i < n;
    c[it] = &table[(live[it] ? sel[i] : 0) * (DEG + 1)];
    target[it] = live[it] ? y[i] : 0.0f;
    lo[it] = 0.0f;
    hi[it] = 1.0f;
    x[it] = 0.5f;
  }
  for (int step = 0; step < MAX_STEPS; step++) {
    bool any = false;
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      if (!live[it]) continue;
      const float* ci = c[it];
      const float xi = x[it];
      float p = ci[DEG], dp = 0.0f;
#pragma unroll
      for (int k = DEG - 1; k >= 0; k--) {
        dp = dp * xi + p;
        p = p * xi + ci[k];
      }
      const float f = p - target[it];
      if (f < 0.0f)
        lo[it] = xi;
      else
        hi[it] = xi;
      float xn = xi - DIV_(f, dp);
      if (!(xn > lo[it] && xn < hi[it])) xn = 0.5f * (lo[it] + hi[it]);
      const float dx = fabsf(xn - xi);
      x[it] = xn;
      if (dx < TOL) live[it] = false;
      any = any || live[it];
    }
    if (!any) break;
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * BLOCK_THREADS;
    if (i < n) root[i] = x[it];
  }
}
