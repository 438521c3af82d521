// Each element integrates a forced, damped Duffing oscillator
//   x'' + DAMP x' + x + STIFF x^3 = drive[i] cos(OMEGA t)
// from (x0[i], v0[i]) at t = 0 through `steps` classical Runge-Kutta steps of dt and writes
// where it ends (x_end[i], v_end[i]). The right-hand side is a lambda that captures the
// element's drive; the steps run in a do-while.
// Launch: grid = (n + 127) / 128, block = 128.

constexpr float DAMP = 0.25f;
constexpr float STIFF = 0.5f;
constexpr float OMEGA = 1.3f;

extern "C" __global__ void rk4_duffing(float* x_end, float* v_end, const float* x0,
                                       const float* v0, const float* drive, int n, int steps,
                                       float dt) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = drive[i];
  auto accel = [g](float x, float v, float t) {
    return g * cosf(OMEGA * t) - DAMP * v - x - STIFF * x * x * x;
  };
  const float half = 0.5f * dt;
  float x = x0[i], v = v0[i];
  int s = 0;
  do {
    const float t = s * dt;
    const float k1x = v;
    const float k1v = accel(x, v, t);
    const float k2x = v + half * k1v;
    const float k2v = accel(x + half * k1x, v + half * k1v, t + half);
    const float k3x = v + half * k2v;
    const float k3v = accel(x + half * k2x, v + half * k2v, t + half);
    const float k4x = v + dt * k3v;
    const float k4v = accel(x + dt * k3x, v + dt * k3v, t + dt);
    x += dt / 6.0f * (k1x + 2.0f * k2x + 2.0f * k3x + k4x);
    v += dt / 6.0f * (k1v + 2.0f * k2v + 2.0f * k3v + k4v);
    ++s;
  } while (s < steps);
  x_end[i] = x;
  v_end[i] = v;
}
