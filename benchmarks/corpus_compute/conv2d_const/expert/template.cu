// out [h, w] = 2-D correlation of in [h, w] with a KS x KS filter in constant memory, zero
// padding. Expert parameterization (hand-written): each thread computes ITEMS_X x ITEMS_Y
// outputs (columns tx + ix * BLOCK_X, rows ty * ITEMS_Y + iy: a thread's rows are
// consecutive, so every input row it reads feeds up to ITEMS_Y accumulators from one
// register); USE_SMEM 1 stages the block's input tile with its halo in shared memory
// (zeros outside the image), 0 reads global memory through the read-only path.
// Launch: grid = (ceil(w / (BLOCK_X * ITEMS_X)), ceil(h / (BLOCK_Y * ITEMS_Y))),
//         block = (BLOCK_X, BLOCK_Y). Defaults: the kernel as written.
#ifndef BLOCK_X
#define BLOCK_X 16
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 16
#endif
#ifndef ITEMS_X
#define ITEMS_X 1
#endif
#ifndef ITEMS_Y
#define ITEMS_Y 1
#endif
#ifndef USE_SMEM
#define USE_SMEM 0
#endif
#define KS 7
#define R (KS / 2)

__constant__ float filt[KS * KS];

#define TILE_W (BLOCK_X * ITEMS_X)  // outputs per block along x
#define TILE_H (BLOCK_Y * ITEMS_Y)  // outputs per block along y

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
conv2d_const(float* __restrict__ out, const float* __restrict__ in, int h, int w) {
  const int x0 = blockIdx.x * TILE_W, y0 = blockIdx.y * TILE_H;
  const int tx = threadIdx.x, ty = threadIdx.y;
#if USE_SMEM
  __shared__ float tile[TILE_H + KS - 1][TILE_W + KS - 1];
  for (int e = ty * BLOCK_X + tx; e < (TILE_H + KS - 1) * (TILE_W + KS - 1);
       e += BLOCK_X * BLOCK_Y) {
    const int r = e / (TILE_W + KS - 1), c = e % (TILE_W + KS - 1);
    const int yy = y0 + r - R, xx = x0 + c - R;
    tile[r][c] = (yy >= 0 && yy < h && xx >= 0 && xx < w) ? in[yy * w + xx] : 0.0f;
  }
  __syncthreads();
#endif

  float acc[ITEMS_Y][ITEMS_X];
#pragma unroll
  for (int iy = 0; iy < ITEMS_Y; ++iy)
#pragma unroll
    for (int ix = 0; ix < ITEMS_X; ++ix) acc[iy][ix] = 0.0f;

  // input rows ty * ITEMS_Y + rr - R (rr = 0 .. ITEMS_Y + KS - 2) of the block's tile
#pragma unroll
  for (int rr = 0; rr < ITEMS_Y + KS - 1; ++rr) {
#pragma unroll
    for (int ix = 0; ix < ITEMS_X; ++ix) {
#pragma unroll
      for (int j = 0; j < KS; ++j) {
#if USE_SMEM
        const float v = tile[ty * ITEMS_Y + rr][tx + ix * BLOCK_X + j];
#else
        const int yy = y0 + ty * ITEMS_Y + rr - R, xx = x0 + tx + ix * BLOCK_X + j - R;
        const float v = (yy >= 0 && yy < h && xx >= 0 && xx < w) ? __ldg(in + yy * w + xx) : 0.0f;
#endif
#pragma unroll
        for (int iy = 0; iy < ITEMS_Y; ++iy) {
          const int i = rr - iy;  // the filter row this input row is for output row iy
          if (i >= 0 && i < KS) acc[iy][ix] += filt[i * KS + j] * v;
        }
      }
    }
  }

#pragma unroll
  for (int iy = 0; iy < ITEMS_Y; ++iy) {
    const int y = y0 + ty * ITEMS_Y + iy;
#pragma unroll
    for (int ix = 0; ix < ITEMS_X; ++ix) {
      const int x = x0 + tx + ix * BLOCK_X;
      if (x < w && y < h) out[y * w + x] = acc[iy][ix];
    }
  }
}
