// Velocity Verlet around a unit mass in double (the state read and written as float): the
// integrator a template over the scalar type, C89-style declarations, a while over the
// steps, 1 / sqrt spelled in the template's type, an early return.
#define STEPS 400

template <typename Real>
__device__ void integrate(float* out, const float* state, int n) {
  int i, step;
  Real x, y, vx, vy, ax, ay, inv;
  const Real dt = Real(0.01);

  i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  x = state[4 * i];
  y = state[4 * i + 1];
  vx = state[4 * i + 2];
  vy = state[4 * i + 3];
  inv = Real(1) / sqrt(x * x + y * y);
  ax = -x * inv * inv * inv;
  ay = -y * inv * inv * inv;
  step = 0;
  while (step < STEPS) {
    vx += Real(0.5) * dt * ax;
    vy += Real(0.5) * dt * ay;
    x += dt * vx;
    y += dt * vy;
    inv = Real(1) / sqrt(x * x + y * y);
    ax = -x * inv * inv * inv;
    ay = -y * inv * inv * inv;
    vx += Real(0.5) * dt * ax;
    vy += Real(0.5) * dt * ay;
    step++;
  }
  out[4 * i] = (float)x;
  out[4 * i + 1] = (float)y;
  out[4 * i + 2] = (float)vx;
  out[4 * i + 3] = (float)vy;
}

extern "C" __global__ void verlet_orbit_tpl(float* out, const float* state, int n) {
  integrate<double>(out, state, n);
}
