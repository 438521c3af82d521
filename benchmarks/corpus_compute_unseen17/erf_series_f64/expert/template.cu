// erf by its Maclaurin series over 64 terms in double (float in and out).
// Expert parameterization (hand-written): THREADS a block, ITEMS elements a thread strided
// by THREADS (independent series in flight, no grid-stride loop), the term loop unrolled
// by UNROLL, and RCP=1 multiplying by reciprocals of 2k + 1 and k + 1 shared by the ITEMS
// series (constants where the loop is unrolled).
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel's 128 threads.

#include <cstdint>

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef RCP
#define RCP 0
#endif
#define TERMS 64
#define TWO_OVER_SQRT_PI 1.1283791670955126

extern "C" __global__ void __launch_bounds__(THREADS) erf_series_f64(
    float* __restrict__ out, const float* __restrict__ in, int64_t n) {
  const int64_t base = (int64_t)blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  double x2[ITEMS], term[ITEMS], sum[ITEMS];
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int64_t i = base + (int64_t)j * THREADS;
    const double x = i < n ? (double)in[i] : 0.0;
    x2[j] = x * x;
    term[j] = x;
    sum[j] = 0.0;
  }
#pragma unroll 1
  for (int k0 = 0; k0 < TERMS; k0 += UNROLL) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int k = k0 + u;
#if RCP
      const double inv_odd = 1.0 / (2 * k + 1);
      const double inv_next = 1.0 / (k + 1);
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        sum[j] += term[j] * inv_odd;
        term[j] *= -x2[j] * inv_next;
      }
#else
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        sum[j] += term[j] / (2 * k + 1);
        term[j] *= -x2[j] / (k + 1);
      }
#endif
    }
  }
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int64_t i = base + (int64_t)j * THREADS;
    if (i < n) {
      const float x = in[i];
      out[i] = x >= 3.5f ? 1.0f : (x <= -3.5f ? -1.0f : (float)(TWO_OVER_SQRT_PI * sum[j]));
    }
  }
}
