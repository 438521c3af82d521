// y[i] = I0(x[i]) from its power series in double, summed until a term < 1e-17 of the sum.
// Expert parameterization (hand-written): a block of THREADS threads owns THREADS * ITEMS
// points, ITEMS a thread strided by THREADS (coalesced), whose series run interleaved in
// one loop (independent double chains in flight) until each has stopped; the stopping test
// runs every CHECK terms (the extra terms are below 1e-17 of the sum); RECIP 1 multiplies
// by 1 / k^2 from a table in shared memory (filled once a block up to KMAX terms, a
// division past it) instead of dividing.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written (256 threads, one point each, a division a term).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef CHECK
#define CHECK 1
#endif
#ifndef RECIP
#define RECIP 0
#endif
#define TERM_EPS 1e-17
#define KMAX 128

extern "C" __global__ void __launch_bounds__(THREADS)
bessel_i0_series(float* __restrict__ y, const float* __restrict__ x, int n) {
#if RECIP
  __shared__ double inv_k2[KMAX + 1];
  for (int k = threadIdx.x; k <= KMAX; k += THREADS)
    inv_k2[k] = k == 0 ? 0.0 : 1.0 / ((double)k * (double)k);
  __syncthreads();
#endif
  const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  double q[ITEMS], term[ITEMS], sum[ITEMS];
  bool live[ITEMS];
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    const double half = i < n ? 0.5 * (double)x[i] : 0.0;
    q[it] = half * half;
    term[it] = 1.0;
    sum[it] = 1.0;
    live[it] = i < n;
  }
  int k = 1;
  bool any = true;
  while (any) {
#pragma unroll
    for (int c = 0; c < CHECK; ++c, ++k) {
#if RECIP
      const double r = k <= KMAX ? inv_k2[k] : 1.0 / ((double)k * (double)k);
#endif
#pragma unroll
      for (int it = 0; it < ITEMS; ++it) {
        if (live[it]) {
#if RECIP
          term[it] *= q[it] * r;
#else
          term[it] *= q[it] / ((double)k * (double)k);
#endif
          sum[it] += term[it];
        }
      }
    }
    any = false;
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      live[it] = live[it] && term[it] > TERM_EPS * sum[it];
      any = any || live[it];
    }
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    if (i < n) y[i] = (float)sum[it];
  }
}
