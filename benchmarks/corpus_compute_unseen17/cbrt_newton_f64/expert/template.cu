// Cube root by a fixed 40 Newton steps in double (float in and out).
// Expert parameterization (hand-written): THREADS a block, ITEMS elements a thread strided
// by THREADS (independent divide chains in flight), the step loop unrolled by UNROLL, and
// RCP=1 taking one reciprocal of 3 y^2 and multiplying instead of dividing.
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
#ifndef RCP
#define RCP 0
#endif
#define STEPS 40

__device__ __forceinline__ double newton_step(double y, double x) {
#if RCP
  return y - (y * y * y - x) * (1.0 / (3.0 * y * y));
#else
  return y - (y * y * y - x) / (3.0 * y * y);
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS) cbrt_newton_f64(
    float* __restrict__ out, const float* __restrict__ in, unsigned n) {
  const unsigned base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  double x[ITEMS], y[ITEMS];
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const unsigned i = base + j * THREADS;
    x[j] = i < n ? fabs((double)in[i]) : 0.0;
    y[j] = 1.0 + x[j] / 3.0;
  }
#pragma unroll 1
  for (int s = 0; s < STEPS; s += UNROLL) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) y[j] = newton_step(y[j], x[j]);
  }
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const unsigned i = base + j * THREADS;
    if (i < n) {
      const float v = in[i];
      out[i] = v == 0.0f ? 0.0f : (float)(v < 0.0f ? -y[j] : y[j]);
    }
  }
}
