// One 7-point Jacobi step on an nz x ny x nx grid (x fastest), the boundary copied; one
// point a thread, block sizes as constexpr, the index a macro.
// Launch: grid = ((nx + 31) / 32, (ny + 3) / 4, (nz + 1) / 2), block = (32, 4, 2).
constexpr int BX = 32, BY = 4, BZ = 2;
#define IDX(i, j, k) (((long long)(k) * ny + (j)) * nx + (i))

extern "C" __global__ void v2_jacobi3d_macro_ldg(float* dst, const float* src, int nx, int ny,
                                                 int nz) {
  const int i = blockIdx.x * BX + threadIdx.x;
  const int j = blockIdx.y * BY + threadIdx.y;
  const int k = blockIdx.z * BZ + threadIdx.z;
  if (i >= nx || j >= ny || k >= nz) return;
  if (i == 0 || j == 0 || k == 0 || i == nx - 1 || j == ny - 1 || k == nz - 1) {
    dst[IDX(i, j, k)] = __ldg(&src[IDX(i, j, k)]);
    return;
  }
  const float sides = __ldg(&src[IDX(i - 1, j, k)]) + __ldg(&src[IDX(i + 1, j, k)]) +
                      __ldg(&src[IDX(i, j - 1, k)]) + __ldg(&src[IDX(i, j + 1, k)]) +
                      __ldg(&src[IDX(i, j, k - 1)]) + __ldg(&src[IDX(i, j, k + 1)]);
  dst[IDX(i, j, k)] = 0.4f * __ldg(&src[IDX(i, j, k)]) + 0.1f * sides;
}
