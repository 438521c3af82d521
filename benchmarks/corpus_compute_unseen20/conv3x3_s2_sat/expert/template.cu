// Stride-2 3x3 filter (zero outside, weights in __constant__) through 1.25 v - 0.1
// saturated to [0, 1]; src H x W, dst (H / 2) x (W / 2).
// Expert parameterization (hand-written): a BX x BY block, RY output rows a thread strided
// by BY; SMEM=1 stages the block's (2 BY RY + 1) x (2 BX + 1) source window in shared memory
// (rows padded by PAD floats) so each source texel is read from DRAM once, coalesced;
// SMEM=0 reads the neighbourhood from global memory through the read-only cache.
// Launch: grid = (ceil((W / 2) / BX), ceil((H / 2) / (BY * RY))), block = (BX, BY).
// Defaults: the kernel as written (16 x 16, one texel a thread, from global).

#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 16
#endif
#ifndef RY
#define RY 1
#endif
#ifndef SMEM
#define SMEM 0
#endif
#ifndef PAD
#define PAD 0
#endif
#define TROWS (2 * BY * RY + 1)
#define TCOLS (2 * BX + 1)

__constant__ float c_weights[9];

extern "C" __global__ void __launch_bounds__(BX * BY) conv3x3_s2_sat(
    float* __restrict__ dst, const float* __restrict__ src, int W, int H) {
  const int wo = W / 2, ho = H / 2;
  const int ox = blockIdx.x * BX + threadIdx.x;
  const int oy0 = blockIdx.y * (BY * RY);
#if SMEM
  __shared__ float tile[TROWS][TCOLS + PAD];
  const int sy0 = 2 * oy0 - 1, sx0 = 2 * blockIdx.x * BX - 1;
  for (int e = threadIdx.y * BX + threadIdx.x; e < TROWS * TCOLS; e += BX * BY) {
    const int ty = e / TCOLS, tx = e % TCOLS, y = sy0 + ty, x = sx0 + tx;
    tile[ty][tx] = y >= 0 && y < H && x >= 0 && x < W ? __ldg(src + (size_t)y * W + x) : 0.0f;
  }
  __syncthreads();
#endif
  if (ox >= wo) return;
#pragma unroll
  for (int r = 0; r < RY; ++r) {
    const int ly = threadIdx.y + r * BY, oy = oy0 + ly;
    if (oy >= ho) break;
    float acc = 0.0f;
#pragma unroll
    for (int dy = 0; dy < 3; ++dy) {
#pragma unroll
      for (int dx = 0; dx < 3; ++dx) {
#if SMEM
        acc = fmaf(tile[2 * ly + dy][2 * threadIdx.x + dx], c_weights[dy * 3 + dx], acc);
#else
        const int y = 2 * oy + dy - 1, x = 2 * ox + dx - 1;
        const float v = y >= 0 && y < H && x >= 0 && x < W ? __ldg(src + (size_t)y * W + x)
                                                           : 0.0f;
        acc = fmaf(v, c_weights[dy * 3 + dx], acc);
#endif
      }
    }
    dst[(size_t)oy * wo + ox] = __saturatef(fmaf(acc, 1.25f, -0.1f));
  }
}
