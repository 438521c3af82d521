// Lennard-Jones energy of every particle against all others (sigma = epsilon = 1):
// e[i] = sum over j != i with r^2 < 6.25 of 4 (r^-12 - r^-6), positions pos [n, 4] (x, y, z,
// unused). All pairs in tiles: the block stages TILE positions in shared memory at a time.
// The body is a function template instantiated once, TILE = 128 threads a block.
// Launch: grid = ((n + 127) / 128), block = (128).

constexpr float kCutoff2 = 6.25f;

template <int TILE>
__device__ void lj_tile_body(float* energy, const float4* pos, int n) {
  __shared__ float4 tile[TILE];
  const int i = blockIdx.x * TILE + threadIdx.x;
  const float4 me = i < n ? pos[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  float e = 0.f;
  for (int start = 0; start < n; start += TILE) {
    const int j = start + threadIdx.x;
    tile[threadIdx.x] = j < n ? pos[j] : make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
    const int count = n - start < TILE ? n - start : TILE;
    for (int k = 0; k < count; ++k) {
      const float dx = tile[k].x - me.x;
      const float dy = tile[k].y - me.y;
      const float dz = tile[k].z - me.z;
      const float r2 = dx * dx + dy * dy + dz * dz;
      if (r2 < kCutoff2 && start + k != i) {
        const float s2 = 1.f / r2;
        const float s6 = s2 * s2 * s2;
        e += 4.f * (s6 * s6 - s6);
      }
    }
    __syncthreads();
  }
  if (i < n) energy[i] = e;
}

extern "C" __global__ void lj_energy_tiles(float* energy, const float* pos, int n) {
  lj_tile_body<128>(energy, reinterpret_cast<const float4*>(pos), n);
}
