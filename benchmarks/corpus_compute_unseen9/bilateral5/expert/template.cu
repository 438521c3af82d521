// 5 x 5 bilateral filter (sigma_s 1.5 px, sigma_r 0.1), clamped borders, float image.
// Expert parameterization (hand-written): a BX x BY block; each thread filters ITEMS_Y
// consecutive rows of one column, reading each input row of their joint window once (5
// values) and adding it to every output row within two rows of it (ITEMS_Y + 4 row reads
// for ITEMS_Y outputs instead of 5 ITEMS_Y). USE_SMEM 1 stages the block's clamped tile
// (its rows and columns plus two each side) in shared memory first; USE_SMEM 0 reads
// through the read-only cache. FAST_EXP 1 takes the hardware exponential (__expf). Every
// output adds its 25 taps in the kernel's order (tap row, then tap column).
// Launch: grid = (ceil(W / BX), ceil(H / (BY * ITEMS_Y))), block = (BX, BY).
// Defaults: the kernel as written (32 x 8, one pixel a thread, global reads, expf).
#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef ITEMS_Y
#define ITEMS_Y 1
#endif
#ifndef USE_SMEM
#define USE_SMEM 0
#endif
#ifndef FAST_EXP
#define FAST_EXP 0
#endif
#define RADIUS 2
#define ROWS_IN (ITEMS_Y + 2 * RADIUS)   // input rows a thread reads
#define TILE_H (BY * ITEMS_Y + 2 * RADIUS)
#define TILE_W (BX + 2 * RADIUS)
#if FAST_EXP
#define EXP(v) __expf(v)
#else
#define EXP(v) expf(v)
#endif

constexpr float INV_2SIGMA_S2 = 1.0f / (2.0f * 1.5f * 1.5f);
constexpr float INV_2SIGMA_R2 = 1.0f / (2.0f * 0.1f * 0.1f);

__device__ __forceinline__ int clamp_to(int v, int hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

extern "C" __global__ void __launch_bounds__(BX * BY)
bilateral5(float* __restrict__ out, const float* __restrict__ img, int H, int W) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x = blockIdx.x * BX + tx;
  const int y0 = (blockIdx.y * BY + ty) * ITEMS_Y;  // the thread's first row
#if USE_SMEM
  __shared__ float tile[TILE_H][TILE_W];
  const int tile_x0 = blockIdx.x * BX - RADIUS, tile_y0 = blockIdx.y * BY * ITEMS_Y - RADIUS;
  for (int e = ty * BX + tx; e < TILE_H * TILE_W; e += BX * BY) {
    const int r = e / TILE_W, c = e % TILE_W;
    tile[r][c] = __ldg(img + (size_t)clamp_to(tile_y0 + r, H - 1) * W +
                       clamp_to(tile_x0 + c, W - 1));
  }
  __syncthreads();
#define AT(r, dx) tile[ty * ITEMS_Y + (r)][tx + RADIUS + (dx)]
#else
#define AT(r, dx) __ldg(img + (size_t)clamp_to(y0 - RADIUS + (r), H - 1) * W + \
                        clamp_to(x + (dx), W - 1))
#endif
  if (x >= W || y0 >= H) return;
  float center[ITEMS_Y], num[ITEMS_Y], den[ITEMS_Y];
#pragma unroll
  for (int i = 0; i < ITEMS_Y; ++i) {
    center[i] = AT(i + RADIUS, 0);
    num[i] = 0.0f;
    den[i] = 0.0f;
  }
#pragma unroll
  for (int r = 0; r < ROWS_IN; ++r) {
    float v[2 * RADIUS + 1];
#pragma unroll
    for (int dx = -RADIUS; dx <= RADIUS; ++dx) v[dx + RADIUS] = AT(r, dx);
#pragma unroll
    for (int i = 0; i < ITEMS_Y; ++i) {
      const int dy = r - i - RADIUS;  // this input row is output row i's tap row dy
      if (dy < -RADIUS || dy > RADIUS) continue;
#pragma unroll
      for (int dx = -RADIUS; dx <= RADIUS; ++dx) {
        const float diff = v[dx + RADIUS] - center[i];
        const float w = EXP(-(float)(dx * dx + dy * dy) * INV_2SIGMA_S2 -
                            diff * diff * INV_2SIGMA_R2);
        num[i] += w * v[dx + RADIUS];
        den[i] += w;
      }
    }
  }
#pragma unroll
  for (int i = 0; i < ITEMS_Y; ++i)
    if (y0 + i < H) out[(size_t)(y0 + i) * W + x] = num[i] / den[i];
}
