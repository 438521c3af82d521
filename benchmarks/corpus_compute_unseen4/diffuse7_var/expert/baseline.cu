// One explicit step of variable-coefficient diffusion on an nx x ny x nz grid (x fastest):
// an interior cell becomes u + kappa * (the sum of its six face neighbours - 6 u); the
// boundary layer keeps its values (fixed boundary). One cell per thread, a 3-D block of
// 32 x 4 x 4 threads.
// Launch: grid = ((nx + 31) / 32, (ny + 3) / 4, (nz + 3) / 4), block = (32, 4, 4).
__device__ __forceinline__ size_t cell_index(int i, int j, int k, int nx, int ny) {
  return ((size_t)k * ny + j) * nx + i;
}

extern "C" __global__ void diffuse7_var(float* u_next, const float* u, const float* kappa,
                                        int nx, int ny, int nz) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  const int k = blockIdx.z * blockDim.z + threadIdx.z;
  if (i >= nx || j >= ny || k >= nz) return;
  const size_t c = cell_index(i, j, k, nx, ny);
  const float center = u[c];
  if (i == 0 || j == 0 || k == 0 || i == nx - 1 || j == ny - 1 || k == nz - 1) {
    u_next[c] = center;
    return;
  }
  const size_t sy = (size_t)nx, sz = (size_t)nx * ny;
  const float lap = (u[c - 1] + u[c + 1]) + (u[c - sy] + u[c + sy]) + (u[c - sz] + u[c + sz]) -
                    6.0f * center;
  u_next[c] = center + kappa[c] * lap;
}
