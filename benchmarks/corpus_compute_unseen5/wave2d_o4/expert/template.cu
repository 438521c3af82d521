// One leapfrog step of the 2-D wave equation, fourth-order 9-point star (radius 2), a
// 2-point fixed boundary. Expert parameterization (hand-written): a BLOCK_X x BLOCK_Y block;
// each thread computes ITEMS_Y outputs of its column, BLOCK_Y rows apart, so a block covers
// BLOCK_X x (BLOCK_Y * ITEMS_Y) points. USE_SMEM 1 stages the block's patch of u with its
// 2-point apron in shared memory with one flat loop (as written, one output a thread, the
// patch is 16 x 16); 0 reads the star's points from global memory through the read-only
// path (neighbouring threads share them in the L1 cache).
// Launch: grid = (ceil(nx / BLOCK_X), ceil(ny / (BLOCK_Y * ITEMS_Y))),
// block = (BLOCK_X, BLOCK_Y). Defaults: the kernel as written.
#ifndef BLOCK_X
#define BLOCK_X 16
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 16
#endif
#ifndef ITEMS_Y
#define ITEMS_Y 1
#endif
#ifndef USE_SMEM
#define USE_SMEM 1
#endif
#define R 2
#define OUT_H (BLOCK_Y * ITEMS_Y)
#define TILE_W (BLOCK_X + 2 * R)
#define TILE_H (OUT_H + 2 * R)

__device__ __forceinline__ float load_or_zero(const float* __restrict__ u, int y, int x, int ny,
                                              int nx) {
  return (y >= 0 && y < ny && x >= 0 && x < nx) ? __ldg(u + (size_t)y * nx + x) : 0.0f;
}

// the star's fourth-order Laplacian from its nine points
__device__ __forceinline__ float star9(float c, float w2, float w1, float e1, float e2, float n2,
                                       float n1, float s1, float s2) {
  return (-(w2 + e2) + 16.0f * (w1 + e1) - (n2 + s2) + 16.0f * (n1 + s1) - 60.0f * c) / 12.0f;
}

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, 1)
wave2d_o4(float* __restrict__ u_next, const float* __restrict__ u,
          const float* __restrict__ u_prev, float c2, int ny, int nx) {
  const int gx = blockIdx.x * BLOCK_X + threadIdx.x;
  const int gy0 = blockIdx.y * OUT_H + threadIdx.y;
#if USE_SMEM
  __shared__ float tile[TILE_H][TILE_W];
  const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
  const int top = blockIdx.y * OUT_H - R, left = blockIdx.x * BLOCK_X - R;
  for (int e = tid; e < TILE_H * TILE_W; e += BLOCK_X * BLOCK_Y) {
    const int ty = e / TILE_W, tx = e % TILE_W;
    tile[ty][tx] = load_or_zero(u, top + ty, left + tx, ny, nx);
  }
  __syncthreads();
#endif
  if (gx >= nx) return;
#pragma unroll
  for (int v = 0; v < ITEMS_Y; ++v) {
    const int gy = gy0 + v * BLOCK_Y;
    if (gy >= ny) break;
    const size_t idx = (size_t)gy * nx + gx;
#if USE_SMEM
    const int ly = threadIdx.y + v * BLOCK_Y + R, lx = threadIdx.x + R;
    const float c = tile[ly][lx];
#else
    const float c = __ldg(u + idx);
#endif
    if (gx < R || gy < R || gx >= nx - R || gy >= ny - R) {
      u_next[idx] = c;
      continue;
    }
#if USE_SMEM
    const float lap = star9(c, tile[ly][lx - 2], tile[ly][lx - 1], tile[ly][lx + 1],
                            tile[ly][lx + 2], tile[ly - 2][lx], tile[ly - 1][lx],
                            tile[ly + 1][lx], tile[ly + 2][lx]);
#else
    const size_t row = (size_t)nx;
    const float lap = star9(c, __ldg(u + idx - 2), __ldg(u + idx - 1), __ldg(u + idx + 1),
                            __ldg(u + idx + 2), __ldg(u + idx - 2 * row), __ldg(u + idx - row),
                            __ldg(u + idx + row), __ldg(u + idx + 2 * row));
#endif
    u_next[idx] = 2.0f * c - __ldg(u_prev + idx) + c2 * lap;
  }
}
