// Test particles around a unit central mass (GM = 1), integrated by velocity Verlet for
// Steps steps of dt = 1/100. state[i] = (x, y, vx, vy); out[i] = the final (x, y, vx, vy).
// The integrator is a template over the step count, the block size and the scalar type;
// an extern "C" kernel instantiates it for float.
// Launch: grid = ((n + 127) / 128), block = (128).

template <typename T>
struct Vec2 {
  T x, y;
};

template <typename T>
__device__ constexpr T half_of(T v) { return v * T(0.5); }

template <typename T>
__device__ inline Vec2<T> gravity(const Vec2<T>& r) {
  const T inv = T(1) / sqrt(r.x * r.x + r.y * r.y);
  const T inv3 = inv * inv * inv;
  return Vec2<T>{-r.x * inv3, -r.y * inv3};
}

template <int Steps, int Block, typename T>
__device__ void verlet_orbits(T* out, const T* state, int n) {
  constexpr T dt = T(1) / T(100);
  const int i = blockIdx.x * Block + threadIdx.x;
  if (i >= n) return;
  Vec2<T> r{state[4 * i + 0], state[4 * i + 1]};
  Vec2<T> v{state[4 * i + 2], state[4 * i + 3]};
  Vec2<T> a = gravity(r);
  for (int s = 0; s < Steps; ++s) {
    v.x += half_of(dt) * a.x;
    v.y += half_of(dt) * a.y;
    r.x += dt * v.x;
    r.y += dt * v.y;
    a = gravity(r);
    v.x += half_of(dt) * a.x;
    v.y += half_of(dt) * a.y;
  }
  out[4 * i + 0] = r.x;
  out[4 * i + 1] = r.y;
  out[4 * i + 2] = v.x;
  out[4 * i + 3] = v.y;
}

extern "C" __global__ void verlet_orbit_tpl(float* out, const float* state, int n) {
  verlet_orbits<400, 128, float>(out, state, n);
}
