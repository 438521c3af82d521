// J0 by Miller's backward recurrence from order 60 in double (float in and out).
// Expert parameterization (hand-written): THREADS a block, ITEMS elements a thread strided
// by THREADS (independent recurrences in flight), RCP=1 taking 2 / x once and multiplying
// instead of dividing every step, and PAIR=1 stepping two orders at a time (odd then even,
// the parity branch gone; the rescale checked once a pair).
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written.

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef RCP
#define RCP 0
#endif
#ifndef PAIR
#define PAIR 0
#endif
#define ORDER 60

__device__ __forceinline__ double ratio(int k, double x, double twox) {
#if RCP
  return k * twox;
#else
  return 2.0 * k / x;
#endif
}

__device__ __forceinline__ void rescale(double& j, double& jp, double& even) {
  if (fabs(j) > 1.0e60) {
    j *= 1.0e-60;
    jp *= 1.0e-60;
    even *= 1.0e-60;
  }
}

extern "C" __global__ void __launch_bounds__(THREADS) besselj0_miller_f64(
    float* __restrict__ out, const float* __restrict__ x, int n) {
  const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  double xv[ITEMS], twox[ITEMS], jp[ITEMS], j[ITEMS], even[ITEMS];
#pragma unroll
  for (int q = 0; q < ITEMS; ++q) {
    const int i = base + q * THREADS;
    xv[q] = i < n ? (double)x[i] : 1.0;
    twox[q] = 2.0 / xv[q];
    jp[q] = 0.0;
    j[q] = 1.0e-30;
    even[q] = 0.0;
  }
#if PAIR
#pragma unroll 1
  for (int k = ORDER; k > 0; k -= 2) {
#pragma unroll
    for (int q = 0; q < ITEMS; ++q) {
      const double odd = ratio(k, xv[q], twox[q]) * j[q] - jp[q];      // j_{k-1}, k-1 odd
      const double ev = ratio(k - 1, xv[q], twox[q]) * odd - j[q];     // j_{k-2}, even
      jp[q] = odd;
      j[q] = ev;
      if (k - 2 > 0) even[q] += ev;
      rescale(j[q], jp[q], even[q]);
    }
  }
#else
#pragma unroll 1
  for (int k = ORDER; k > 0; --k) {
#pragma unroll
    for (int q = 0; q < ITEMS; ++q) {
      const double jm = ratio(k, xv[q], twox[q]) * j[q] - jp[q];
      jp[q] = j[q];
      j[q] = jm;
      if ((k - 1) % 2 == 0 && k - 1 > 0) even[q] += jm;
      rescale(j[q], jp[q], even[q]);
    }
  }
#endif
#pragma unroll
  for (int q = 0; q < ITEMS; ++q) {
    const int i = base + q * THREADS;
    if (i < n) out[i] = (float)(j[q] / (j[q] + 2.0 * even[q]));
  }
}
