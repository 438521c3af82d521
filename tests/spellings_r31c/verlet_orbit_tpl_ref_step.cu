// Velocity-Verlet test particles around a unit mass, a fourth hand (beside the round's two):
// the step a helper updating position, velocity and force through references, calling the
// force helper (a reference out-parameter) in turn, float2 state built by make_float2.
#define STEPS 400
__device__ void accel(float2 r, float2& a) {
  const float inv = 1.0f / sqrtf(r.x * r.x + r.y * r.y);
  const float inv3 = inv * inv * inv;
  a.x = -r.x * inv3;
  a.y = -r.y * inv3;
}
__device__ void kick_drift_kick(float2& r, float2& v, float2& a, float dt) {
  v.x += 0.5f * dt * a.x;
  v.y += 0.5f * dt * a.y;
  r.x += dt * v.x;
  r.y += dt * v.y;
  accel(r, a);
  v.x += 0.5f * dt * a.x;
  v.y += 0.5f * dt * a.y;
}
extern "C" __global__ void verlet_orbit_tpl(float* out, const float* state, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float2 r = make_float2(state[4 * i], state[4 * i + 1]);
  float2 v = make_float2(state[4 * i + 2], state[4 * i + 3]);
  float2 a;
  accel(r, a);
  for (int s = 0; s < STEPS; ++s) kick_drift_kick(r, v, a, 0.01f);
  out[4 * i] = r.x;
  out[4 * i + 1] = r.y;
  out[4 * i + 2] = v.x;
  out[4 * i + 3] = v.y;
}
