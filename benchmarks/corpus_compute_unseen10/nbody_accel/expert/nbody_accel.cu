// Accelerations of one N-body step under softened gravity: for every body i,
//   acc[i] = sum over j of m_j (p_j - p_i) / (|p_j - p_i|^2 + EPS2)^(3/2)
// (the j = i term is zero). Bodies are float4 records (x, y, z, mass); acc is [n, 3]. Each
// block of TILE threads walks all bodies in tiles of TILE staged in shared memory (a
// massless body pads the last one), one body per thread; the pair term is a lambda over
// the thread's running sums.
// Launch: grid = (n + 255) / 256, block = 256.
#define TILE 256
#define EPS2 1e-3f

extern "C" __global__ void nbody_accel(float* acc, const float* bodies, int n) {
  __shared__ float4 tile[TILE];
  const float4* body = reinterpret_cast<const float4*>(bodies);
  const int i = blockIdx.x * TILE + threadIdx.x;
  const float4 me = i < n ? body[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  auto pull = [&](const float4 other) {
    const float dx = other.x - me.x, dy = other.y - me.y, dz = other.z - me.z;
    const float inv = rsqrtf(dx * dx + dy * dy + dz * dz + EPS2);
    const float w = other.w * inv * inv * inv;
    ax += w * dx;
    ay += w * dy;
    az += w * dz;
  };
  for (int base = 0; base < n; base += TILE) {
    const int j = base + threadIdx.x;
    tile[threadIdx.x] = j < n ? body[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    __syncthreads();
#pragma unroll 8
    for (int k = 0; k < TILE; ++k) pull(tile[k]);
    __syncthreads();
  }
  if (i < n) {
    acc[3 * i + 0] = ax;
    acc[3 * i + 1] = ay;
    acc[3 * i + 2] = az;
  }
}
