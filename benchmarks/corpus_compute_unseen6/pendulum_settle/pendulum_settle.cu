// A damped pendulum per element, theta'' = -sin(theta) - gamma * theta', integrated with
// classical Runge-Kutta steps of DT from (theta0, omega0) until it has settled (its energy
// omega^2 / 2 + 2 sin^2(theta / 2) below SETTLED) or MAX_STEPS steps are done; the final
// angle and angular velocity are written. Lightly damped pendulums run every step, heavily
// damped ones stop early.
// Launch: grid = (n + 255) / 256, block = 256.
#define DT 0.02f
#define MAX_STEPS 1000
#define SETTLED 1.0e-4f

__device__ float angular_accel(float theta, float omega, float gamma) {
  return -sinf(theta) - gamma * omega;
}

__device__ float energy(float theta, float omega) {
  const float s = sinf(0.5f * theta);
  return 0.5f * omega * omega + 2.0f * s * s;
}

extern "C" __global__ void pendulum_settle(float* theta_out, float* omega_out,
                                           const float* theta0, const float* omega0,
                                           const float* damping, int n) {
  const int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i < n) {
    float th = theta0[i], om = omega0[i];
    const float g = damping[i];
    int step = 0;
    while (step < MAX_STEPS && energy(th, om) >= SETTLED) {
      const float a1 = angular_accel(th, om, g);
      const float v2 = om + 0.5f * DT * a1;
      const float a2 = angular_accel(th + 0.5f * DT * om, v2, g);
      const float v3 = om + 0.5f * DT * a2;
      const float a3 = angular_accel(th + 0.5f * DT * v2, v3, g);
      const float v4 = om + DT * a3;
      const float a4 = angular_accel(th + DT * v3, v4, g);
      th += (DT / 6.0f) * (om + 2.0f * v2 + 2.0f * v3 + v4);
      om += (DT / 6.0f) * (a1 + 2.0f * a2 + 2.0f * a3 + a4);
      step++;
    }
    theta_out[i] = th;
    omega_out[i] = om;
  }
}
