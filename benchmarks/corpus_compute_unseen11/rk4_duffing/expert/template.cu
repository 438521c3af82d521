// A forced, damped Duffing oscillator per element, x'' + DAMP x' + x + STIFF x^3 =
// drive[i] cos(OMEGA t), through `steps` RK4 steps of dt from (x0[i], v0[i]).
// Expert parameterization (hand-written): a block of THREADS threads, each stepping ITEMS
// oscillators (threadIdx.x + m * THREADS of the block's THREADS * ITEMS) side by side, so
// their independent chains overlap; the forcing cos(OMEGA t) depends on the step alone, so
// a thread computes it once a stage for all its oscillators, and with REUSE 1 carries the
// step's end value into the next step (two cosines a step instead of four). UNROLL unrolls
// the step loop; MIN_BLOCKS is __launch_bounds__' minimum of resident blocks. Every
// oscillator takes the kernel's stages in its order.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written (128 threads, one oscillator each, four cosines a step).

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef REUSE
#define REUSE 0
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
// #pragma unroll takes a constant expression, not a macro (nvcc does not expand it there)
constexpr int kUnrollSteps = UNROLL;

constexpr float DAMP = 0.25f;
constexpr float STIFF = 0.5f;
constexpr float OMEGA = 1.3f;

__device__ __forceinline__ float duffing_accel(float g, float force, float x, float v) {
  return g * force - DAMP * v - x - STIFF * x * x * x;
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
rk4_duffing(float* __restrict__ x_end, float* __restrict__ v_end,
            const float* __restrict__ x0, const float* __restrict__ v0,
            const float* __restrict__ drive, int n, int steps, float dt) {
  const int first = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  float x[ITEMS], v[ITEMS], g[ITEMS];
#pragma unroll
  for (int m = 0; m < ITEMS; ++m) {
    const int i = min(first + m * THREADS, n - 1);  // past the end: a copy of the last, not stored
    x[m] = x0[i];
    v[m] = v0[i];
    g[m] = drive[i];
  }
  const float half = 0.5f * dt;
  float f_start = cosf(OMEGA * 0.0f);
  int s = 0;
#pragma unroll (kUnrollSteps)
  do {
    const float t = s * dt;
#if !REUSE
    f_start = cosf(OMEGA * t);
#endif
    const float f_mid = cosf(OMEGA * (t + half));
    const float f_end = cosf(OMEGA * (t + dt));
#pragma unroll
    for (int m = 0; m < ITEMS; ++m) {
      const float k1x = v[m];
      const float k1v = duffing_accel(g[m], f_start, x[m], v[m]);
      const float k2x = v[m] + half * k1v;
      const float k2v = duffing_accel(g[m], f_mid, x[m] + half * k1x, v[m] + half * k1v);
      const float k3x = v[m] + half * k2v;
      const float k3v = duffing_accel(g[m], f_mid, x[m] + half * k2x, v[m] + half * k2v);
      const float k4x = v[m] + dt * k3v;
      const float k4v = duffing_accel(g[m], f_end, x[m] + dt * k3x, v[m] + dt * k3v);
      x[m] += dt / 6.0f * (k1x + 2.0f * k2x + 2.0f * k3x + k4x);
      v[m] += dt / 6.0f * (k1v + 2.0f * k2v + 2.0f * k3v + k4v);
    }
    f_start = f_end;
    ++s;
  } while (s < steps);
#pragma unroll
  for (int m = 0; m < ITEMS; ++m) {
    const int i = first + m * THREADS;
    if (i < n) {
      x_end[i] = x[m];
      v_end[i] = v[m];
    }
  }
}
