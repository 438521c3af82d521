// Electrostatic potential at each probe point from a set of point charges, softened:
// out[i] = sum_j q_j / sqrt(|p_i - c_j|^2 + 0.01), summed in charge order.
// probes[i] = (x, y, z) read as a Vec3; charges[j] = (x, y, z, q) read as a float4. One probe a thread, 128
// threads a block, every charge read from global memory.
// Launch: grid = ((n + 127) / 128), block = (128).

struct Vec3 {
  float x, y, z;
};

__device__ inline Vec3 operator-(const Vec3& a, const Vec3& b) {
  return Vec3{a.x - b.x, a.y - b.y, a.z - b.z};
}

__device__ inline float dot(const Vec3& a, const Vec3& b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}

__device__ inline Vec3 xyz(const float4& v) { return Vec3{v.x, v.y, v.z}; }

constexpr float kSoftening2 = 0.01f;

extern "C" __global__ void coulomb_pot_tiles(float* out, const float* probe_data,
                                             const float* charge_data, int n, int m) {
  const Vec3* probes = reinterpret_cast<const Vec3*>(probe_data);
  const float4* charges = reinterpret_cast<const float4*>(charge_data);
  const int id = blockIdx.x * blockDim.x + threadIdx.x;
  if (id >= n) return;
  const Vec3 p = probes[id];
  float phi = 0.0f;
  for (int j = 0; j < m; j++) {
    const float4 c = charges[j];
    const Vec3 d = p - xyz(c);
    phi += c.w * rsqrtf(dot(d, d) + kSoftening2);
  }
  out[id] = phi;
}
