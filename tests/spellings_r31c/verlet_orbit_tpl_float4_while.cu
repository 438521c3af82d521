// Velocity-Verlet test particles around a unit mass, another hand: float4 records through
// reinterpret_cast, the force a helper returning float2 by value, a while over the steps,
// constexpr constants in a namespace, blockDim.x in the index, a wrapping if.
namespace orbit {
constexpr int kSteps = 400;
constexpr float kDt = 1.0f / 100.0f;
constexpr float kHalfDt = 0.5f * kDt;
}  // namespace orbit

__device__ inline float2 gravity(float2 r) {
  const float inv = 1.0f / sqrtf(r.x * r.x + r.y * r.y);
  const float inv3 = inv * inv * inv;
  return make_float2(-r.x * inv3, -r.y * inv3);
}

extern "C" __global__ void verlet_orbit_tpl(float* out, const float* state, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float4 s = reinterpret_cast<const float4*>(state)[i];
    float2 r = make_float2(s.x, s.y);
    float2 v = make_float2(s.z, s.w);
    float2 a = gravity(r);
    int step = 0;
    while (step < orbit::kSteps) {
      v.x += orbit::kHalfDt * a.x;
      v.y += orbit::kHalfDt * a.y;
      r.x += orbit::kDt * v.x;
      r.y += orbit::kDt * v.y;
      a = gravity(r);
      v.x += orbit::kHalfDt * a.x;
      v.y += orbit::kHalfDt * a.y;
      ++step;
    }
    reinterpret_cast<float4*>(out)[i] = make_float4(r.x, r.y, v.x, v.y);
  }
}
