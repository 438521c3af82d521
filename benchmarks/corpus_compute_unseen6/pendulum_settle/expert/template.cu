// A damped pendulum per element integrated with RK4 steps until its energy is below SETTLED
// or MAX_STEPS steps are done. Expert parameterization (hand-written): THREADS threads a
// block (a multiple of 32); each thread integrates ITEMS pendulums THREADS apart side by side
// with independent state (instruction-level parallelism across the long sin chains), each
// stopping at its own step as written; the step loop is unrolled UNROLL times (the settled
// test stays in every step). FAST_SIN 1 uses the hardware __sinf.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS. Defaults: as written.
#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef FAST_SIN
#define FAST_SIN 0
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
// #pragma unroll takes a constant expression, not a macro (nvcc does not expand it there)
constexpr int kUnrollSteps = UNROLL;
#define DT 0.02f
#define MAX_STEPS 1000
#define SETTLED 1.0e-4f

__device__ __forceinline__ float sin_of(float v) {
#if FAST_SIN
  return __sinf(v);
#else
  return sinf(v);
#endif
}

__device__ __forceinline__ float angular_accel(float theta, float omega, float gamma) {
  return -sin_of(theta) - gamma * omega;
}

__device__ __forceinline__ float energy(float theta, float omega) {
  const float s = sin_of(0.5f * theta);
  return 0.5f * omega * omega + 2.0f * s * s;
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
pendulum_settle(float* __restrict__ theta_out, float* __restrict__ omega_out,
                const float* __restrict__ theta0, const float* __restrict__ omega0,
                const float* __restrict__ damping, int n) {
  const int first = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  float th[ITEMS], om[ITEMS], g[ITEMS];
  bool live[ITEMS];
#pragma unroll
  for (int u = 0; u < ITEMS; ++u) {
    const int i = first + u * THREADS;
    const bool in = i < n;
    th[u] = in ? theta0[i] : 0.0f;
    om[u] = in ? omega0[i] : 0.0f;
    g[u] = in ? damping[i] : 0.0f;
    live[u] = in;
  }
#pragma unroll (kUnrollSteps)
  for (int step = 0; step < MAX_STEPS; ++step) {
    bool any = false;
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) {
      live[u] = live[u] && energy(th[u], om[u]) >= SETTLED;
      if (!live[u]) continue;
      any = true;
      const float t = th[u], w = om[u], gu = g[u];
      const float a1 = angular_accel(t, w, gu);
      const float v2 = w + 0.5f * DT * a1;
      const float a2 = angular_accel(t + 0.5f * DT * w, v2, gu);
      const float v3 = w + 0.5f * DT * a2;
      const float a3 = angular_accel(t + 0.5f * DT * v2, v3, gu);
      const float v4 = w + DT * a3;
      const float a4 = angular_accel(t + DT * v3, v4, gu);
      th[u] = t + (DT / 6.0f) * (w + 2.0f * v2 + 2.0f * v3 + v4);
      om[u] = w + (DT / 6.0f) * (a1 + 2.0f * a2 + 2.0f * a3 + a4);
    }
    if (!any) break;
  }
#pragma unroll
  for (int u = 0; u < ITEMS; ++u) {
    const int i = first + u * THREADS;
    if (i < n) {
      theta_out[i] = th[u];
      omega_out[i] = om[u];
    }
  }
}
