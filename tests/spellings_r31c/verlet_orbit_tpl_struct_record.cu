// Velocity-Verlet test particles around a unit mass, a third hand (beside the round's two):
// the record a struct read and written whole through reinterpret_cast, the force a helper
// reading the struct by const reference and writing through references, constexpr sizes.
struct Particle { float x, y, vx, vy; };
constexpr int kSteps = 400;
constexpr float kDt = 0.01f;

__device__ void force(const Particle& p, float& ax, float& ay) {
  const float r2 = p.x * p.x + p.y * p.y;
  const float inv = 1.0f / sqrtf(r2);
  const float inv3 = inv * inv * inv;
  ax = -p.x * inv3;
  ay = -p.y * inv3;
}

extern "C" __global__ void verlet_orbit_tpl(float* out, const float* state, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  Particle p = reinterpret_cast<const Particle*>(state)[i];
  float ax, ay;
  force(p, ax, ay);
  for (int s = 0; s < kSteps; ++s) {
    p.vx += 0.5f * kDt * ax;
    p.vy += 0.5f * kDt * ay;
    p.x += kDt * p.vx;
    p.y += kDt * p.vy;
    force(p, ax, ay);
    p.vx += 0.5f * kDt * ax;
    p.vy += 0.5f * kDt * ay;
  }
  reinterpret_cast<Particle*>(out)[i] = p;
}
