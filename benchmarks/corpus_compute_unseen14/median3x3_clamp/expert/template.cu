// out[y][x] = median of the 3 x 3 edge-clamped neighbourhood of in [h, w].
// Expert parameterization (hand-written): a block of BX x BY threads owns a BX wide,
// BY * RY tall tile, each thread RY pixels strided by BY rows (coalesced rows); SMEM 1
// first copies the tile plus its one-pixel clamped halo to shared memory (row stride
// BX + 3: padded off the bank period) and takes the nine values from there, SMEM 0 reads
// them clamped through the cache. The median comes from the same 19-exchange network.
// Launch: grid = (ceil(w / BX), ceil(h / (BY * RY))), block = (BX, BY).
// Defaults: the kernel as written (16 x 16 threads, a pixel each, from global).

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
#define TILE_H (BY * RY + 2)
#define TILE_S (BX + 3)

#define SORT2(a, b) { const float lo_ = fminf(a, b); b = fmaxf(a, b); a = lo_; }

__device__ __forceinline__ float clamped(const float* in, int h, int w, int y, int x) {
  y = y < 0 ? 0 : (y >= h ? h - 1 : y);
  x = x < 0 ? 0 : (x >= w ? w - 1 : x);
  return in[(size_t)y * w + x];
}

__device__ __forceinline__ float median9(float* p) {
  SORT2(p[1], p[2]); SORT2(p[4], p[5]); SORT2(p[7], p[8]);
  SORT2(p[0], p[1]); SORT2(p[3], p[4]); SORT2(p[6], p[7]);
  SORT2(p[1], p[2]); SORT2(p[4], p[5]); SORT2(p[7], p[8]);
  SORT2(p[0], p[3]); SORT2(p[5], p[8]); SORT2(p[4], p[7]);
  SORT2(p[3], p[6]); SORT2(p[1], p[4]); SORT2(p[2], p[5]);
  SORT2(p[4], p[7]); SORT2(p[4], p[2]); SORT2(p[6], p[4]);
  SORT2(p[4], p[2]);
  return p[4];
}

extern "C" __global__ void __launch_bounds__(BX * BY)
median3x3_clamp(float* out, const float* in, int h, int w) {
  const int x0 = blockIdx.x * BX, y0 = blockIdx.y * (BY * RY);
  const int x = x0 + threadIdx.x;
#if SMEM
  __shared__ float tile[TILE_H * TILE_S];
  for (int e = threadIdx.y * BX + threadIdx.x; e < TILE_H * (BX + 2); e += BX * BY) {
    const int ty = e / (BX + 2), tx = e % (BX + 2);
    tile[ty * TILE_S + tx] = clamped(in, h, w, y0 + ty - 1, x0 + tx - 1);
  }
  __syncthreads();
#endif
  if (x >= w) return;
#pragma unroll
  for (int r = 0; r < RY; ++r) {
    const int ly = threadIdx.y + r * BY;
    const int y = y0 + ly;
    if (y < h) {
      float p[9];
#pragma unroll
      for (int k = 0; k < 9; ++k) {
#if SMEM
        p[k] = tile[(ly + k / 3) * TILE_S + threadIdx.x + k % 3];
#else
        p[k] = clamped(in, h, w, y + k / 3 - 1, x + k % 3 - 1);
#endif
      }
      out[(size_t)y * w + x] = median9(p);
    }
  }
}
