// One heat-equation step with the fourth-order 13-point Laplacian on an nz x ny x nx float
// grid (2-point boundary kept). Expert parameterization (hand-written, 2.5-D blocking): a
// (BLOCK_X, BLOCK_Y) block marches through z, each thread holding Y_ITEMS columns (rows
// ty + k * BLOCK_Y of the block's tile) and, per column, a queue of the five values
// z-2 .. z+2 in registers: every value of u is loaded from global memory once per column
// instead of five times. USE_SMEM 1 shares the current plane through a shared tile with a
// 2-point halo for the x and y neighbours; 0 reads them through the read-only path.
// Z_SPLIT cuts z into that many chunks, one per grid slice, for more blocks in flight (each
// chunk re-reads the 4 planes around its ends).
// Launch: grid = (ceil(nx / BLOCK_X), ceil(ny / (BLOCK_Y * Y_ITEMS)), Z_SPLIT),
//         block = (BLOCK_X, BLOCK_Y). Defaults: the kernel as written.
#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif
#ifndef Y_ITEMS
#define Y_ITEMS 1
#endif
#ifndef Z_SPLIT
#define Z_SPLIT 1
#endif
#ifndef USE_SMEM
#define USE_SMEM 0
#endif

#define TILE_Y (BLOCK_Y * Y_ITEMS)  // rows of the grid per block

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
heat_step13(float* __restrict__ out, const float* __restrict__ u, float r, int nx, int ny,
            int nz) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x = blockIdx.x * BLOCK_X + tx;
  const int y0 = blockIdx.y * TILE_Y;
  const int chunk = (nz + Z_SPLIT - 1) / Z_SPLIT;
  const int zbeg = blockIdx.z * chunk;
  const int zend = min(nz, zbeg + chunk);
  const size_t sy = nx;
  const size_t sz = (size_t)nx * ny;
  const float c0 = -90.0f / 12.0f;  // -30 / 12 for each of the three axes
  const float c1 = 16.0f / 12.0f;
  const float c2 = -1.0f / 12.0f;
#if USE_SMEM
  __shared__ float plane[TILE_Y + 4][BLOCK_X + 4];
#endif

  // q[k][d]: u at (z - 2 + d, y_k, x), d = 0 .. 4, for the thread's k-th column
  float q[Y_ITEMS][5];
  bool inxy[Y_ITEMS];
  size_t col[Y_ITEMS];
#pragma unroll
  for (int k = 0; k < Y_ITEMS; ++k) {
    const int y = y0 + ty + k * BLOCK_Y;
    inxy[k] = x < nx && y < ny;
    col[k] = y * sy + x;
#pragma unroll
    for (int d = 0; d < 4; ++d) {
      const int zz = zbeg - 2 + d;
      q[k][d] = (inxy[k] && zz >= 0 && zz < nz) ? __ldg(u + zz * sz + col[k]) : 0.0f;
    }
  }

  for (int z = zbeg; z < zend; ++z) {
#pragma unroll
    for (int k = 0; k < Y_ITEMS; ++k)
      q[k][4] = (inxy[k] && z + 2 < nz) ? __ldg(u + (z + 2) * sz + col[k]) : 0.0f;
#if USE_SMEM
    __syncthreads();  // the previous plane's reads of the tile are done
#pragma unroll
    for (int k = 0; k < Y_ITEMS; ++k) plane[ty + k * BLOCK_Y + 2][tx + 2] = q[k][2];
    // the halo: 2 columns left and right, 2 rows above and below
    for (int e = ty * BLOCK_X + tx; e < (TILE_Y + 4) * (BLOCK_X + 4); e += BLOCK_X * BLOCK_Y) {
      const int rr = e / (BLOCK_X + 4), cc = e % (BLOCK_X + 4);
      if (rr >= 2 && rr < TILE_Y + 2 && cc >= 2 && cc < BLOCK_X + 2) continue;
      const int gx = blockIdx.x * BLOCK_X + cc - 2, gy = y0 + rr - 2;
      plane[rr][cc] = (gx >= 0 && gx < nx && gy >= 0 && gy < ny)
                          ? __ldg(u + z * sz + gy * sy + gx) : 0.0f;
    }
    __syncthreads();
#endif
#pragma unroll
    for (int k = 0; k < Y_ITEMS; ++k) {
      const int y = y0 + ty + k * BLOCK_Y;
      if (inxy[k]) {
        const size_t i = z * sz + col[k];
        const bool interior = x >= 2 && x < nx - 2 && y >= 2 && y < ny - 2 && z >= 2 &&
                              z < nz - 2;
        if (interior) {
#if USE_SMEM
          const int ly = ty + k * BLOCK_Y + 2, lx = tx + 2;
          const float near = plane[ly][lx - 1] + plane[ly][lx + 1] + plane[ly - 1][lx] +
                             plane[ly + 1][lx];
          const float far = plane[ly][lx - 2] + plane[ly][lx + 2] + plane[ly - 2][lx] +
                            plane[ly + 2][lx];
#else
          const float near = __ldg(u + i - 1) + __ldg(u + i + 1) + __ldg(u + i - sy) +
                             __ldg(u + i + sy);
          const float far = __ldg(u + i - 2) + __ldg(u + i + 2) + __ldg(u + i - 2 * sy) +
                            __ldg(u + i + 2 * sy);
#endif
          const float lap = c0 * q[k][2] + c1 * (near + q[k][1] + q[k][3]) +
                            c2 * (far + q[k][0] + q[k][4]);
          out[i] = q[k][2] + r * lap;
        } else {
          out[i] = q[k][2];
        }
      }
#pragma unroll
      for (int d = 0; d < 4; ++d) q[k][d] = q[k][d + 1];
    }
  }
}
