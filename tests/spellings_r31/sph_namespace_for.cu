// SPH density: rho_i = sum_j m_j W(|r_i - r_j|, h) over all particles (i included), with the
// 3-D cubic spline of support 2h. Particles are float4 (x, y, z, mass). The block stages
// kTile particles at a time in shared memory (tile by tile) and each thread sums over the
// staged tile.

namespace sph {
constexpr int kTile = 256;
constexpr float kPi = 3.14159265358979f;

__device__ __forceinline__ float spline(float r, float h) {
  const float q = r / h;
  const float sigma = 1.0f / (kPi * h * h * h);
  if (q >= 2.0f) return 0.0f;
  if (q >= 1.0f) {
    const float t = 2.0f - q;
    return sigma * 0.25f * t * t * t;
  }
  return sigma * (1.0f - 1.5f * q * q + 0.75f * q * q * q);
}
}  // namespace sph

extern "C" __global__ void sph_density_tiles(float* rho, const float* pos_mass, int n,
                                             float h) {
  __shared__ float4 staged[sph::kTile];
  const float4* p = reinterpret_cast<const float4*>(pos_mass);
  const int self = blockIdx.x * sph::kTile + threadIdx.x;
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  const float4 mine = self < n ? p[self] : zero;

  float acc = 0.0f;
  const int tiles = (n + sph::kTile - 1) / sph::kTile;
  for (int t = 0; t < tiles; ++t) {
    const int base = t * sph::kTile;
    const int j = base + threadIdx.x;
    staged[threadIdx.x] = j < n ? p[j] : zero;
    __syncthreads();
    const int len = min(n - base, sph::kTile);
    for (int k = 0; k < len; ++k) {
      const float4 q = staged[k];
      const float dx = mine.x - q.x;
      const float dy = mine.y - q.y;
      const float dz = mine.z - q.z;
      acc += q.w * sph::spline(sqrtf(dx * dx + dy * dy + dz * dz), h);
    }
    __syncthreads();
  }
  if (self < n) rho[self] = acc;
}
