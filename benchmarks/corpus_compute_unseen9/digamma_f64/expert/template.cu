// psi(x) per element, float in and out, double inside: reflection for x <= 0, the
// recurrence psi(x) = psi(x + 1) - 1 / x up to SHIFT, then the asymptotic series (its first
// omitted term, 691 / (32760 x^12), is below 1e-11 from x = 6: far under a float's
// rounding, so SHIFT 6 or 8 serves a float result as well as the 10 as written). Expert
// parameterization (hand-written): THREADS per block (multiples of 32), ITEMS elements per
// thread (element k at k * THREADS past the thread's first: coalesced) stepped in lockstep
// with independent state, so one element's double divide latency hides behind the others'
// (an element past its shift is masked, not stepped), and PAIRED 1 takes two recurrence
// steps with one divide: 1 / x + 1 / (x + 1) = (2x + 1) / (x (x + 1)).
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written (128 threads, one element a thread, shift to 10, one
// divide a step).
#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef SHIFT
#define SHIFT 10
#endif
#ifndef PAIRED
#define PAIRED 0
#endif

__device__ __forceinline__ double series_tail(double x) {
  const double r = 1.0 / x;
  const double r2 = r * r;
  const double series =
      r2 * (1.0 / 12 - r2 * (1.0 / 120 - r2 * (1.0 / 252 - r2 * (1.0 / 240 - r2 * (1.0 / 132)))));
  return log(x) - 0.5 * r - series;
}

extern "C" __global__ void __launch_bounds__(THREADS)
digamma_f64(float* __restrict__ psi, const float* __restrict__ x, int n) {
  const double pi = 3.14159265358979323846;
  const double shift = SHIFT;
  const int first = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  double xv[ITEMS], acc[ITEMS];
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = first + k * THREADS;
    xv[k] = i < n ? (double)__ldg(x + i) : 1.0;  // a spare element computes psi(1)
    acc[k] = 0.0;
    if (xv[k] <= 0.0) {
      acc[k] = -pi / tan(pi * xv[k]);
      xv[k] = 1.0 - xv[k];
    }
  }
  bool any = true;
  while (any) {
    any = false;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
#if PAIRED
      if (xv[k] + 1.0 < shift) {
        acc[k] -= (2.0 * xv[k] + 1.0) / (xv[k] * (xv[k] + 1.0));
        xv[k] += 2.0;
        any = true;
      } else if (xv[k] < shift) {
        acc[k] -= 1.0 / xv[k];
        xv[k] += 1.0;
      }
#else
      if (xv[k] < shift) {
        acc[k] -= 1.0 / xv[k];
        xv[k] += 1.0;
        any = true;
      }
#endif
    }
  }
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = first + k * THREADS;
    if (i < n) psi[i] = (float)(acc[k] + series_tail(xv[k]));
  }
}
