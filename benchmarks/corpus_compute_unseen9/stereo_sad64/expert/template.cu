// Stereo block matching: per left pixel, the disparity d in [0, 64) with the smallest
// 5 x 5 SAD against the right image shifted left by d (the smallest d on a tie), every
// coordinate clamped to the image on its own. Expert parameterization (hand-written): a
// BX x BY block; each thread takes ITEMS_X consecutive pixels of one row, keeps their
// 5 x (ITEMS_X + 4) left window in registers (read once, not once per d) and, per d and
// window row, forms the ITEMS_X + 4 absolute differences once and slides the 5-tap sum
// over them (5 differences a pixel-row become 1 + 4 / ITEMS_X). USE_SMEM 1 stages the
// block's clamped left tile and its right tile (63 more columns to the left) in shared
// memory first; USE_SMEM 0 reads through the read-only cache. Costs are exact integers and
// d runs upwards with a strict compare, so every config picks the kernel's disparity.
// Launch: grid = (ceil(W / (BX * ITEMS_X)), ceil(H / BY)), block = (BX, BY).
// Defaults: the kernel as written (16 x 16, one pixel a thread, global reads).
#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 16
#endif
#ifndef ITEMS_X
#define ITEMS_X 1
#endif
#ifndef USE_SMEM
#define USE_SMEM 0
#endif
#define MAX_DISP 64
#define RADIUS 2
#define WIN (2 * RADIUS + 1)
#define SPAN (ITEMS_X + 2 * RADIUS)               // window columns a thread reads a row
#define TILE_W (BX * ITEMS_X)                     // pixels a block covers along x
#define LEFT_W (TILE_W + 2 * RADIUS)              // the left tile's columns
#define RIGHT_W (TILE_W + 2 * RADIUS + MAX_DISP - 1)  // the right tile's columns
#define TILE_H (BY + 2 * RADIUS)

__device__ __forceinline__ int clamp_to(int v, int hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

extern "C" __global__ void __launch_bounds__(BX * BY)
stereo_sad64(int* __restrict__ disp, const unsigned char* __restrict__ left,
             const unsigned char* __restrict__ right, int H, int W) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x0 = blockIdx.x * TILE_W, y0 = blockIdx.y * BY;
  const int xs = x0 + tx * ITEMS_X;  // the thread's first pixel
  const int y = y0 + ty;
#if USE_SMEM
  __shared__ unsigned char ltile[TILE_H][LEFT_W];
  __shared__ unsigned char rtile[TILE_H][RIGHT_W];
  for (int e = ty * BX + tx; e < TILE_H * RIGHT_W; e += BX * BY) {
    const int r = e / RIGHT_W, c = e % RIGHT_W;
    const int gy = clamp_to(y0 - RADIUS + r, H - 1);
    // right column x0 - RADIUS - (MAX_DISP - 1) + c; the left tile is its last LEFT_W
    rtile[r][c] = __ldg(right + (size_t)gy * W +
                        clamp_to(x0 - RADIUS - (MAX_DISP - 1) + c, W - 1));
    if (c < LEFT_W) ltile[r][c] = __ldg(left + (size_t)gy * W + clamp_to(x0 - RADIUS + c, W - 1));
  }
  __syncthreads();
#endif
  if (y >= H || xs >= W) return;

  int lv[WIN][SPAN];
#pragma unroll
  for (int r = 0; r < WIN; ++r) {
#pragma unroll
    for (int j = 0; j < SPAN; ++j) {
#if USE_SMEM
      lv[r][j] = ltile[ty + r][tx * ITEMS_X + j];
#else
      lv[r][j] = __ldg(left + (size_t)clamp_to(y - RADIUS + r, H - 1) * W +
                       clamp_to(xs - RADIUS + j, W - 1));
#endif
    }
  }
  int best_cost[ITEMS_X], best_d[ITEMS_X];
#pragma unroll
  for (int i = 0; i < ITEMS_X; ++i) {
    best_cost[i] = 0x7fffffff;
    best_d[i] = 0;
  }
  for (int d = 0; d < MAX_DISP; ++d) {
    int cost[ITEMS_X];
#pragma unroll
    for (int i = 0; i < ITEMS_X; ++i) cost[i] = 0;
#pragma unroll
    for (int r = 0; r < WIN; ++r) {
#if !USE_SMEM
      const unsigned char* rrow = right + (size_t)clamp_to(y - RADIUS + r, H - 1) * W;
#endif
      int diff[SPAN];
#pragma unroll
      for (int j = 0; j < SPAN; ++j) {
#if USE_SMEM
        const int rv = rtile[ty + r][tx * ITEMS_X + j + (MAX_DISP - 1) - d];
#else
        const int rv = __ldg(rrow + clamp_to(xs - RADIUS + j - d, W - 1));
#endif
        diff[j] = abs(lv[r][j] - rv);
      }
#pragma unroll
      for (int i = 0; i < ITEMS_X; ++i)
#pragma unroll
        for (int k = 0; k < WIN; ++k) cost[i] += diff[i + k];
    }
#pragma unroll
    for (int i = 0; i < ITEMS_X; ++i) {
      if (cost[i] < best_cost[i]) {
        best_cost[i] = cost[i];
        best_d[i] = d;
      }
    }
  }
#pragma unroll
  for (int i = 0; i < ITEMS_X; ++i)
    if (xs + i < W) disp[(size_t)y * W + xs + i] = best_d[i];
}
