// Velocity Verlet around a unit mass: a plain struct passed by value to the force, the
// inverse cube written with rsqrtf, the step loop counting down, the work in an if-block.
struct P2 {
  float x;
  float y;
};

__device__ P2 accel(P2 r) {
  const float inv = rsqrtf(r.x * r.x + r.y * r.y);
  const float inv3 = inv * inv * inv;
  P2 g;
  g.x = -r.x * inv3;
  g.y = -r.y * inv3;
  return g;
}

extern "C" __global__ void verlet_orbit_tpl(float* out, const float* state, int n) {
  const float dt = 0.01f;
  const float hdt = 0.5f * dt;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    P2 r, v;
    r.x = state[4 * i];
    r.y = state[4 * i + 1];
    v.x = state[4 * i + 2];
    v.y = state[4 * i + 3];
    P2 a = accel(r);
    for (int left = 400; left > 0; --left) {
      v.x += hdt * a.x;
      v.y += hdt * a.y;
      r.x += dt * v.x;
      r.y += dt * v.y;
      a = accel(r);
      v.x += hdt * a.x;
      v.y += hdt * a.y;
    }
    out[4 * i] = r.x;
    out[4 * i + 1] = r.y;
    out[4 * i + 2] = v.x;
    out[4 * i + 3] = v.y;
  }
}
