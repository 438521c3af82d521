// One explicit Euler step of the heat equation u_t = alpha * laplacian(u) on an
// nz x ny x nx float grid (x fastest), with the fourth-order 13-point Laplacian (radius 2
// along each axis):
//   out = u + r * sum over x, y, z of (-u[-2] + 16 u[-1] - 30 u[0] + 16 u[+1] - u[+2]) / 12
// where r = alpha * dt / h^2. Points within 2 of a face keep their value (a fixed boundary).
// A 2-D block covers an (x, y) patch of columns; each thread walks its column through z.
// Launch: grid = ((nx + 31) / 32, (ny + 7) / 8), block = (32, 8).
extern "C" __global__ void heat_step13(float* out, const float* u, float r, int nx, int ny,
                                       int nz) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const size_t sy = nx;
  const size_t sz = (size_t)nx * ny;
  const float c0 = -90.0f / 12.0f;  // -30 / 12 for each of the three axes
  const float c1 = 16.0f / 12.0f;
  const float c2 = -1.0f / 12.0f;
  bool edge = x < 2 || y < 2 || x >= nx - 2 || y >= ny - 2;
  for (int z = 0; z < nz; ++z) {
    size_t i = z * sz + y * sy + x;
    if (edge || z < 2 || z >= nz - 2) {
      out[i] = u[i];
      continue;
    }
    float lap = c0 * u[i]
              + c1 * (u[i - 1] + u[i + 1] + u[i - sy] + u[i + sy] + u[i - sz] + u[i + sz])
              + c2 * (u[i - 2] + u[i + 2] + u[i - 2 * sy] + u[i + 2 * sy] + u[i - 2 * sz] +
                      u[i + 2 * sz]);
    out[i] = u[i] + r * lap;
  }
}
