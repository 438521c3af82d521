// diffuse7_var, another hand: an index macro, the body wrapped in an if, the boundary
// test as a named bool, restrict pointers.
#define IDX(i, j, k) (((size_t)(k) * ny + (j)) * nx + (i))

extern "C" __global__ void diffuse7_var(float* __restrict__ u_next, const float* __restrict__ u,
                                        const float* __restrict__ kappa, int nx, int ny, int nz) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  const int k = blockIdx.z * blockDim.z + threadIdx.z;
  if (i < nx && j < ny && k < nz) {
    const float center = u[IDX(i, j, k)];
    const bool edge = i == 0 || j == 0 || k == 0 || i == nx - 1 || j == ny - 1 || k == nz - 1;
    if (edge) {
      u_next[IDX(i, j, k)] = center;
    } else {
      const float lap = (u[IDX(i - 1, j, k)] + u[IDX(i + 1, j, k)]) +
                        (u[IDX(i, j - 1, k)] + u[IDX(i, j + 1, k)]) +
                        (u[IDX(i, j, k - 1)] + u[IDX(i, j, k + 1)]) - 6.0f * center;
      u_next[IDX(i, j, k)] = center + kappa[IDX(i, j, k)] * lap;
    }
  }
}
