// A 13-tap column filter (radius 6, taps in constant memory), rows past the edges mirrored.
// Expert parameterization (hand-written): a BLOCK_X x BLOCK_Y block; each thread computes
// ITEMS_Y consecutive outputs of one column (rows y0 .. y0 + ITEMS_Y - 1), so the
// ITEMS_Y + 12 source rows it needs are read once and reused by every output (each tap read
// once from constant memory feeds them all). USE_SMEM 1 stages the block's
// (BLOCK_Y * ITEMS_Y + 12) x BLOCK_X source tile in shared memory first (coalesced rows,
// every source value read from global memory once per block); 0 keeps the thread's window
// in registers, read through the read-only path.
// Launch: grid = (ceil(w / BLOCK_X), ceil(h / (BLOCK_Y * ITEMS_Y))), block = (BLOCK_X,
// BLOCK_Y). Defaults: the kernel as written (256 x 1 threads, one output each).
#ifndef BLOCK_X
#define BLOCK_X 256
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 1
#endif
#ifndef ITEMS_Y
#define ITEMS_Y 1
#endif
#ifndef USE_SMEM
#define USE_SMEM 0
#endif
#define RAD 6
#define TAPS (2 * RAD + 1)
#define OUT_H (BLOCK_Y * ITEMS_Y)
#define WIN (ITEMS_Y + 2 * RAD)

__constant__ float taps[TAPS];

// the mirrored row of y, kept inside the image for rows no output of the image needs
__device__ __forceinline__ int mirror_row(int y, int h) {
  y = y < 0 ? -y : y;
  y = y >= h ? 2 * h - 2 - y : y;
  return min(max(y, 0), h - 1);
}

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, 1)
colfilter13(float* __restrict__ dst, const float* __restrict__ src, int h, int w) {
  const int x = blockIdx.x * BLOCK_X + threadIdx.x;
  const int y0 = blockIdx.y * OUT_H + threadIdx.y * ITEMS_Y;
  const int xc = min(x, w - 1);  // threads past the right edge load a valid column
  float win[WIN];
#if USE_SMEM
  __shared__ float tile[OUT_H + 2 * RAD][BLOCK_X];
  const int top = blockIdx.y * OUT_H - RAD;
  for (int r = threadIdx.y; r < OUT_H + 2 * RAD; r += BLOCK_Y)
    tile[r][threadIdx.x] = __ldg(src + (size_t)mirror_row(top + r, h) * w + xc);
  __syncthreads();
#pragma unroll
  for (int q = 0; q < WIN; ++q) win[q] = tile[threadIdx.y * ITEMS_Y + q][threadIdx.x];
#else
#pragma unroll
  for (int q = 0; q < WIN; ++q)
    win[q] = __ldg(src + (size_t)mirror_row(y0 - RAD + q, h) * w + xc);
#endif
  if (x >= w) return;
#pragma unroll
  for (int v = 0; v < ITEMS_Y; ++v) {
    float s = 0.0f;
#pragma unroll
    for (int t = 0; t < TAPS; ++t) s += taps[t] * win[v + t];
    if (y0 + v < h) dst[(size_t)(y0 + v) * w + x] = s;
  }
}
