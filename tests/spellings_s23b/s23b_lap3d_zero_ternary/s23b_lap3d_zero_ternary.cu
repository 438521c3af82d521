// out = 6 u - (sum of the six neighbours), a neighbour outside the grid read as 0; one
// point a thread, the strides size_t locals.
// Launch: grid = ((nx + 31) / 32, (ny + 3) / 4, (nz + 3) / 4), block = (32, 4, 4).
extern "C" __global__ void s23b_lap3d_zero_ternary(float* out, const float* u, int nx, int ny,
                                                   int nz) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  const int k = blockIdx.z * blockDim.z + threadIdx.z;
  if (i < nx && j < ny && k < nz) {
    const size_t sy = (size_t)nx;
    const size_t sz = (size_t)nx * ny;
    const size_t at = k * sz + j * sy + i;
    const float xm = i > 0 ? u[at - 1] : 0.0f;
    const float xp = i < nx - 1 ? u[at + 1] : 0.0f;
    const float ym = j > 0 ? u[at - sy] : 0.0f;
    const float yp = j < ny - 1 ? u[at + sy] : 0.0f;
    const float zm = k > 0 ? u[at - sz] : 0.0f;
    const float zp = k < nz - 1 ? u[at + sz] : 0.0f;
    out[at] = 6.0f * u[at] - (xm + xp + ym + yp + zm + zp);
  }
}
