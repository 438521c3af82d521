// diffuse7_var, another hand: a grid struct with index and boundary members built on entry,
// the neighbours read through a pointer to the cell with signed strides.
struct Grid3 {
  int nx, ny, nz;
  __device__ size_t at(int i, int j, int k) const { return ((size_t)k * ny + j) * nx + i; }
  __device__ bool edge(int i, int j, int k) const {
    return i == 0 || j == 0 || k == 0 || i == nx - 1 || j == ny - 1 || k == nz - 1;
  }
};

extern "C" __global__ void diffuse7_var(float* u_next, const float* u, const float* kappa, int nx,
                                        int ny, int nz) {
  const Grid3 g{nx, ny, nz};
  const int i = threadIdx.x + blockIdx.x * blockDim.x;
  const int j = threadIdx.y + blockIdx.y * blockDim.y;
  const int k = threadIdx.z + blockIdx.z * blockDim.z;
  if (i >= g.nx || j >= g.ny || k >= g.nz) return;
  const size_t c = g.at(i, j, k);
  const float* uc = u + c;
  const float center = *uc;
  if (g.edge(i, j, k)) {
    u_next[c] = center;
    return;
  }
  const long long sy = nx, sz = (long long)nx * ny;
  const float lap = (uc[-1] + uc[1]) + (uc[-sy] + uc[sy]) + (uc[-sz] + uc[sz]) - 6.0f * center;
  u_next[c] = center + kappa[c] * lap;
}
