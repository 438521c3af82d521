// A 512-term Fourier series at each sample in double, by the rotation recurrence.
// Expert parameterization (hand-written): THREADS a block, ITEMS samples a thread strided by
// THREADS (independent recurrences sharing each coefficient's load), SMEM=1 staging the
// coefficients once a block in shared memory as doubles, and the term loop unrolled by
// UNROLL.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written.

#include <cstdint>

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef SMEM
#define SMEM 0
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#define TERMS 512

extern "C" __global__ void __launch_bounds__(THREADS) fourier_synth_f64(
    float* __restrict__ out, const float* __restrict__ t, const float* __restrict__ a,
    const float* __restrict__ b, int64_t n) {
#if SMEM
  __shared__ double ab[TERMS][2];
  for (int k = threadIdx.x; k < TERMS; k += THREADS) {
    ab[k][0] = a[k];
    ab[k][1] = b[k];
  }
  __syncthreads();
#endif
  const int64_t first = (int64_t)blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  double c1[ITEMS], s1[ITEMS], ck[ITEMS], sk[ITEMS], acc[ITEMS];
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int64_t i = first + j * THREADS;
    const double theta = t[i < n ? i : n - 1];
    c1[j] = cos(theta);
    s1[j] = sin(theta);
    ck[j] = c1[j];
    sk[j] = s1[j];
    acc[j] = 0.0;
  }
#pragma unroll 1
  for (int k0 = 0; k0 < TERMS; k0 += UNROLL) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
#if SMEM
      const double ak = ab[k0 + u][0], bk = ab[k0 + u][1];
#else
      const double ak = a[k0 + u], bk = b[k0 + u];
#endif
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        acc[j] += ak * ck[j] + bk * sk[j];
        const double cn = ck[j] * c1[j] - sk[j] * s1[j];
        sk[j] = sk[j] * c1[j] + ck[j] * s1[j];
        ck[j] = cn;
      }
    }
  }
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int64_t i = first + j * THREADS;
    if (i < n) out[i] = (float)acc[j];
  }
}
