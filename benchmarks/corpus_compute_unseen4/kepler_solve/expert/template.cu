// Kepler's equation E - e sin E = M solved for E by Newton's method with an early exit.
// Expert parameterization (hand-written): THREADS threads a block (any multiple of 32);
// each thread solves ITEMS orbits THREADS apart with independent state, stepping all of
// them together until each has converged (instruction-level parallelism over the long
// sin/cos/divide chain; an orbit stops changing once its own step fell below TOL, as
// written). SINCOS 1 computes sin E and cos E in one call; FAST_TRIG 1 uses the hardware
// approximations __sinf/__cosf. STARTER 0 starts from pi when e > 0.8, else from M (as
// written); 1 from M + 0.85 e (toward pi) for every orbit, which needs fewer steps.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS. Defaults: as written.
#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef SINCOS
#define SINCOS 0
#endif
#ifndef FAST_TRIG
#define FAST_TRIG 0
#endif
#ifndef STARTER
#define STARTER 0
#endif

static constexpr int MAX_ITER = 30;
static constexpr float TOL = 1.0e-6f;

__device__ __forceinline__ void sin_cos(float v, float* s, float* c) {
#if FAST_TRIG
  *s = __sinf(v);
  *c = __cosf(v);
#elif SINCOS
  sincosf(v, s, c);
#else
  *s = sinf(v);
  *c = cosf(v);
#endif
}

__device__ __forceinline__ float start_value(float M, float e) {
#if STARTER == 1
  return M + (M < 3.14159265f ? 0.85f * e : -0.85f * e);
#else
  return (e > 0.8f) ? 3.14159265f : M;
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
kepler_solve(float* __restrict__ ecc_anom, const float* __restrict__ mean_anom,
             const float* __restrict__ ecc, int n) {
  const int first = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  float M[ITEMS], e[ITEMS], E[ITEMS];
  bool live[ITEMS];
#pragma unroll
  for (int u = 0; u < ITEMS; ++u) {
    const int idx = first + u * THREADS;
    live[u] = idx < n;
    M[u] = live[u] ? mean_anom[idx] : 0.0f;
    e[u] = live[u] ? ecc[idx] : 0.0f;
    E[u] = start_value(M[u], e[u]);
  }
  for (int it = 0; it < MAX_ITER; ++it) {
    bool any = false;
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) {
      if (!live[u]) continue;
      float s, c;
      sin_cos(E[u], &s, &c);
      const float step = (E[u] - e[u] * s - M[u]) / (1.0f - e[u] * c);
      E[u] -= step;
      live[u] = !(fabsf(step) < TOL);
      any = any || live[u];
    }
    if (!any) break;
  }
#pragma unroll
  for (int u = 0; u < ITEMS; ++u) {
    const int idx = first + u * THREADS;
    if (idx < n) ecc_anom[idx] = E[u];
  }
}
