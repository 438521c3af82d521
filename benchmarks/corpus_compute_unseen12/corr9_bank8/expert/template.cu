// out [8, h, w] = img [h, w] cross-correlated with each of 8 9 x 9 weight tiles, zero
// outside the image. Expert parameterization (hand-written): a BX x BY block owns BX
// columns and BY * IY rows of pixels, IY consecutive rows a thread; it stages the weight
// bank and its pixels' input tile with the 4-pixel halo in shared memory (rows padded by
// PAD floats) and each input value a thread reads serves all IY of its rows in registers.
// Every sum adds its products in the kernel as written's order (dy, then dx).
// Launch: grid = (ceil(w / BX), ceil(h / (BY * IY))), block = (BX, BY).
// Defaults: 16 x 16 pixels a block, one a thread (the kernel as written's launch).

#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 16
#endif
#ifndef IY
#define IY 1
#endif
#ifndef PAD
#define PAD 0
#endif
#define NF 8
#define KS 9
#define HALF (KS / 2)
#define TILE_ROWS (BY * IY + KS - 1)
#define TILE_COLS (BX + KS - 1)

extern "C" __global__ void __launch_bounds__(BX * BY)
corr9_bank8(float* __restrict__ out, const float* __restrict__ img,
            const float* __restrict__ wts, int h, int w) {
  __shared__ float wsh[NF * KS * KS];
  __shared__ float tile[TILE_ROWS][TILE_COLS + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * BX + tx;
  const int x0 = blockIdx.x * BX, y0 = blockIdx.y * (BY * IY);
  for (int e = tid; e < NF * KS * KS; e += BX * BY) wsh[e] = wts[e];
  for (int e = tid; e < TILE_ROWS * TILE_COLS; e += BX * BY) {
    const int r = e / TILE_COLS, c = e % TILE_COLS;
    const int yy = y0 + r - HALF, xx = x0 + c - HALF;
    tile[r][c] = (yy >= 0 && yy < h && xx >= 0 && xx < w) ? img[(size_t)yy * w + xx] : 0.0f;
  }
  __syncthreads();

  float acc[IY][NF];
#pragma unroll
  for (int r = 0; r < IY; ++r)
#pragma unroll
    for (int f = 0; f < NF; ++f) acc[r][f] = 0.0f;
  // input row rr of this thread's window feeds output row r at dy = rr - r
#pragma unroll 1
  for (int rr = 0; rr < IY + KS - 1; ++rr) {
#pragma unroll
    for (int dx = 0; dx < KS; ++dx) {
      const float v = tile[ty * IY + rr][tx + dx];
#pragma unroll
      for (int r = 0; r < IY; ++r) {
        const int dy = rr - r;
        if (dy >= 0 && dy < KS) {
#pragma unroll
          for (int f = 0; f < NF; ++f) acc[r][f] += wsh[(f * KS + dy) * KS + dx] * v;
        }
      }
    }
  }
  const int x = x0 + tx;
  if (x >= w) return;
#pragma unroll
  for (int r = 0; r < IY; ++r) {
    const int y = y0 + ty * IY + r;
    if (y < h) {
#pragma unroll
      for (int f = 0; f < NF; ++f) out[((size_t)f * h + y) * w + x] = acc[r][f];
    }
  }
}
