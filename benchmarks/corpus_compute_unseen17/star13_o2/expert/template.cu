// 13-point 3-D star stencil of order 2, zero outside the grid.
// Expert parameterization (hand-written): a BX x BY block of (x, y) columns, z split into
// ZSPLIT chunks over the grid's third dimension (more blocks in flight on short grids), and
// QUEUE=1 keeping the five z values around the current point in registers, shifted a step
// (one new global read a step for the z ring instead of five).
// Launch: grid = (ceil(nx / BX), ceil(ny / BY), ZSPLIT), block = (BX, BY).
// Defaults: the kernel's launch as written.

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef ZSPLIT
#define ZSPLIT 1
#endif
#ifndef QUEUE
#define QUEUE 0
#endif

__device__ __forceinline__ float load(const float* __restrict__ u, int nx, int ny, int nz,
                                      int z, int y, int x) {
  return (x >= 0 && x < nx && y >= 0 && y < ny && z >= 0 && z < nz)
             ? u[((size_t)z * ny + y) * nx + x] : 0.0f;
}

extern "C" __global__ void __launch_bounds__(BX * BY) star13_o2(
    float* __restrict__ out, const float* __restrict__ u, int nx, int ny, int nz, float c0,
    float c1, float c2) {
  const int x = blockIdx.x * BX + threadIdx.x;
  const int y = blockIdx.y * BY + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const int zlen = (nz + ZSPLIT - 1) / ZSPLIT;
  const int z0 = blockIdx.z * zlen;
  const int z1 = min(nz, z0 + zlen);
#if QUEUE
  float m2 = load(u, nx, ny, nz, z0 - 2, y, x), m1 = load(u, nx, ny, nz, z0 - 1, y, x);
  float cz = load(u, nx, ny, nz, z0, y, x), p1 = load(u, nx, ny, nz, z0 + 1, y, x);
  float p2 = load(u, nx, ny, nz, z0 + 2, y, x);
#endif
  for (int z = z0; z < z1; ++z) {
#if QUEUE
    const float c = cz, zr1 = m1 + p1, zr2 = m2 + p2;
#else
    const float c = load(u, nx, ny, nz, z, y, x);
    const float zr1 = load(u, nx, ny, nz, z - 1, y, x) + load(u, nx, ny, nz, z + 1, y, x);
    const float zr2 = load(u, nx, ny, nz, z - 2, y, x) + load(u, nx, ny, nz, z + 2, y, x);
#endif
    const float r1 = load(u, nx, ny, nz, z, y, x - 1) + load(u, nx, ny, nz, z, y, x + 1) +
                     load(u, nx, ny, nz, z, y - 1, x) + load(u, nx, ny, nz, z, y + 1, x) + zr1;
    const float r2 = load(u, nx, ny, nz, z, y, x - 2) + load(u, nx, ny, nz, z, y, x + 2) +
                     load(u, nx, ny, nz, z, y - 2, x) + load(u, nx, ny, nz, z, y + 2, x) + zr2;
    out[((size_t)z * ny + y) * nx + x] = c0 * c + c1 * r1 + c2 * r2;
#if QUEUE
    m2 = m1;
    m1 = cz;
    cz = p1;
    p1 = p2;
    p2 = load(u, nx, ny, nz, z + 3, y, x);
#endif
  }
}
