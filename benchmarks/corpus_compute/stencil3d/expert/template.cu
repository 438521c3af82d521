// One 7-point Jacobi step on an nz x ny x nx float grid (boundary copied). Expert
// parameterization (hand-written, 2.5-D blocking): a (BLOCK_X, BLOCK_Y, BLOCK_Z) block,
// each thread marching Z_ITEMS consecutive planes with the z-1, z, z+1 values in
// registers (each input value loaded once per column instead of three times);
// USE_SMEM 1 (with BLOCK_Z = 1) shares the current plane through a shared tile with a
// one-point halo for the x and y neighbours, 0 reads them through the read-only path.
// Launch: grid = (ceil(nx / BLOCK_X), ceil(ny / BLOCK_Y), ceil(nz / (BLOCK_Z * Z_ITEMS))),
//         block = (BLOCK_X, BLOCK_Y, BLOCK_Z). Defaults: the kernel as written.
#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 4
#endif
#ifndef BLOCK_Z
#define BLOCK_Z 4
#endif
#ifndef Z_ITEMS
#define Z_ITEMS 1
#endif
#ifndef USE_SMEM
#define USE_SMEM 0
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y * BLOCK_Z)
stencil3d(float* __restrict__ out, const float* __restrict__ in, int nx, int ny, int nz) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x = blockIdx.x * BLOCK_X + tx;
  const int y = blockIdx.y * BLOCK_Y + ty;
  const int z0 = (blockIdx.z * BLOCK_Z + threadIdx.z) * Z_ITEMS;
  const bool inxy = x < nx && y < ny;
  const bool edge_xy = x == 0 || y == 0 || x == nx - 1 || y == ny - 1;
  const long long plane = (long long)nx * ny;
  const long long col = (long long)y * nx + x;
#if USE_SMEM
  __shared__ float tile[BLOCK_Y + 2][BLOCK_X + 2];
#endif

  float below = (inxy && z0 >= 1 && z0 - 1 < nz) ? __ldg(in + (z0 - 1) * plane + col) : 0.0f;
  float center = (inxy && z0 < nz) ? __ldg(in + z0 * plane + col) : 0.0f;
#pragma unroll
  for (int k = 0; k < Z_ITEMS; ++k) {
    const int z = z0 + k;
    const long long i = z * plane + col;
    const bool here = inxy && z < nz;
    const bool interior = here && !edge_xy && z > 0 && z < nz - 1;
    const float above = (inxy && z + 1 < nz) ? __ldg(in + i + plane) : 0.0f;
    float xm = 0.0f, xp = 0.0f, ym = 0.0f, yp = 0.0f;
#if USE_SMEM
    __syncthreads();  // the previous plane's reads of the tile are done
    tile[ty + 1][tx + 1] = center;
    const bool zin = z < nz;
    if (tx == 0) tile[ty + 1][0] = (zin && y < ny && x >= 1 && x - 1 < nx) ? __ldg(in + i - 1) : 0.0f;
    if (tx == BLOCK_X - 1) tile[ty + 1][BLOCK_X + 1] = (zin && y < ny && x + 1 < nx) ? __ldg(in + i + 1) : 0.0f;
    if (ty == 0) tile[0][tx + 1] = (zin && x < nx && y >= 1 && y - 1 < ny) ? __ldg(in + i - nx) : 0.0f;
    if (ty == BLOCK_Y - 1) tile[BLOCK_Y + 1][tx + 1] = (zin && x < nx && y + 1 < ny) ? __ldg(in + i + nx) : 0.0f;
    __syncthreads();
    xm = tile[ty + 1][tx];
    xp = tile[ty + 1][tx + 2];
    ym = tile[ty][tx + 1];
    yp = tile[ty + 2][tx + 1];
#else
    if (interior) {
      xm = __ldg(in + i - 1);
      xp = __ldg(in + i + 1);
      ym = __ldg(in + i - nx);
      yp = __ldg(in + i + nx);
    }
#endif
    if (interior) {
      out[i] = 0.4f * center + 0.1f * (xm + xp + ym + yp + below + above);
    } else if (here) {
      out[i] = center;
    }
    below = center;
    center = above;
  }
}
