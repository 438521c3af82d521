// q[i] = midpoint-rule integral over [a[i], a[i] + 1] of a rectified degree-8 polynomial.
// Expert parameterization (hand-written): a block of THREADS threads owns THREADS * ITEMS
// intervals, ITEMS a thread strided by THREADS (coalesced), stepped together so their Horner
// chains overlap; the panel loop is unrolled by UNROLL; COEF_REGS holds the coefficients in
// registers. Each interval sums its panels in the kernel's order.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written.

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef COEF_REGS
#define COEF_REGS 0
#endif
#define DEGREE 8
#define PANELS 64

__constant__ float coef[DEGREE + 1];

extern "C" __global__ void __launch_bounds__(THREADS) poly_quad_rect(float* q, const float* a,
                                                                     int n) {
  const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  const float h = 1.0f / PANELS;
#if COEF_REGS
  float c[DEGREE + 1];
#pragma unroll
  for (int k = 0; k <= DEGREE; ++k) c[k] = coef[k];
#define COEF(k) c[k]
#else
#define COEF(k) coef[k]
#endif
  float t[ITEMS], sum[ITEMS];
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    t[it] = (i < n ? a[i] : 0.0f) + 0.5f * h;
    sum[it] = 0.0f;
  }
  for (int j = 0; j < PANELS; j += UNROLL) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
      for (int it = 0; it < ITEMS; ++it) {
        float p = COEF(DEGREE);
#pragma unroll
        for (int k = DEGREE - 1; k >= 0; --k) p = p * t[it] + COEF(k);
        sum[it] += p > 0.0f ? p : -0.5f * p;
        t[it] += h;
      }
    }
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    if (i < n) q[i] = sum[it] * h;
  }
}
