// One explicit variable-coefficient diffusion step (7-point Laplacian, boundary layer
// copied). Expert parameterization (hand-written): a BLOCK_X x BLOCK_Y x BLOCK_Z block;
// each thread marches up a column of Z_ITEMS consecutive cells, keeping the cells below,
// at and above its own in registers (each u value of the column read once instead of three
// times). USE_SMEM 1 (with BLOCK_Z 1) also stages each plane of the block with a one-cell
// apron in shared memory for the four in-plane neighbours; 0 reads them from global
// memory through the read-only path (as written).
// Launch: grid = (ceil(nx / BLOCK_X), ceil(ny / BLOCK_Y), ceil(nz / (BLOCK_Z * Z_ITEMS))),
// block = (BLOCK_X, BLOCK_Y, BLOCK_Z). Defaults: the kernel as written (32 x 4 x 4, a
// cell per thread).
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

__device__ __forceinline__ size_t cell_index(int i, int j, int k, int nx, int ny) {
  return ((size_t)k * ny + j) * nx + i;
}

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y * BLOCK_Z, 1)
diffuse7_var(float* __restrict__ u_next, const float* __restrict__ u,
             const float* __restrict__ kappa, int nx, int ny, int nz) {
  const int i = blockIdx.x * BLOCK_X + threadIdx.x;
  const int j = blockIdx.y * BLOCK_Y + threadIdx.y;
  const int k_begin = (blockIdx.z * BLOCK_Z + threadIdx.z) * Z_ITEMS;
  const int k_end = min(k_begin + Z_ITEMS, nz);
  const bool inside = i < nx && j < ny;
  const bool edge_xy = i == 0 || j == 0 || i == nx - 1 || j == ny - 1;
  const size_t sy = (size_t)nx, sz = (size_t)nx * ny;
#if USE_SMEM
  // BLOCK_Z is 1: k_begin and k_end are the block's, every thread runs every step
  __shared__ float plane[BLOCK_Y + 2][BLOCK_X + 2];
  const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
#endif
  float below = 0.0f, center = 0.0f;
  if (inside && k_begin < nz) {
    const size_t c0 = cell_index(i, j, k_begin, nx, ny);
    center = __ldg(u + c0);
    if (k_begin > 0) below = __ldg(u + c0 - sz);
  }
  for (int k = k_begin; k < k_end; ++k) {
    const size_t c = inside ? cell_index(i, j, k, nx, ny) : 0;
    const float above = (inside && k + 1 < nz) ? __ldg(u + c + sz) : 0.0f;
#if USE_SMEM
    __syncthreads();  // the previous plane's readers are done
    for (int e = tid; e < (BLOCK_Y + 2) * (BLOCK_X + 2); e += BLOCK_X * BLOCK_Y) {
      const int ty = e / (BLOCK_X + 2), tx = e % (BLOCK_X + 2);
      const int gi = blockIdx.x * BLOCK_X + tx - 1, gj = blockIdx.y * BLOCK_Y + ty - 1;
      plane[ty][tx] = (gi >= 0 && gi < nx && gj >= 0 && gj < ny)
                          ? __ldg(u + cell_index(gi, gj, k, nx, ny)) : 0.0f;
    }
    __syncthreads();
#endif
    if (inside) {
      if (edge_xy || k == 0 || k == nz - 1) {
        u_next[c] = center;
      } else {
#if USE_SMEM
        const int ty = threadIdx.y + 1, tx = threadIdx.x + 1;
        const float lap = (plane[ty][tx - 1] + plane[ty][tx + 1]) +
                          (plane[ty - 1][tx] + plane[ty + 1][tx]) + (below + above) -
                          6.0f * center;
#else
        const float lap = (__ldg(u + c - 1) + __ldg(u + c + 1)) +
                          (__ldg(u + c - sy) + __ldg(u + c + sy)) + (below + above) -
                          6.0f * center;
#endif
        u_next[c] = center + __ldg(kappa + c) * lap;
      }
    }
    below = center;
    center = above;
  }
}
