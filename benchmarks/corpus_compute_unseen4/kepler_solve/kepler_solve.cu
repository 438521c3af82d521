// Eccentric anomaly E of each orbit from its mean anomaly M (in [0, 2 pi)) and eccentricity
// e (in [0, 0.95)): Kepler's equation E - e sin E = M solved by Newton's method, stopping
// once a step is smaller than TOL (or after MAX_ITER steps). Highly eccentric orbits
// (e > 0.8) start from pi, the others from M.
// Launch: grid = (n + THREADS_PER_BLOCK - 1) / THREADS_PER_BLOCK, block = THREADS_PER_BLOCK.
#ifndef THREADS_PER_BLOCK
#define THREADS_PER_BLOCK 128
#endif

static constexpr int MAX_ITER = 30;
static constexpr float TOL = 1.0e-6f;

// One Newton step for f(E) = E - e sin E - M: f / f'.
__device__ float newton_step(float E, float M, float e) {
  const float f = E - e * sinf(E) - M;
  const float df = 1.0f - e * cosf(E);
  return f / df;
}

extern "C" __global__ void kepler_solve(float* ecc_anom, const float* mean_anom,
                                        const float* ecc, int n) {
  const int idx = blockIdx.x * THREADS_PER_BLOCK + threadIdx.x;
  if (idx >= n) return;
  const float M = mean_anom[idx];
  const float e = ecc[idx];
  float E = (e > 0.8f) ? 3.14159265f : M;
  for (int it = 0; it < MAX_ITER; ++it) {
    const float step = newton_step(E, M, e);
    E -= step;
    if (fabsf(step) < TOL) break;
  }
  ecc_anom[idx] = E;
}
