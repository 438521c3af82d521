// 5x5 convolution of an interleaved RGB image to one channel, zero outside the image.
// Expert parameterization (hand-written): a BX x (BY * RY) tile of outputs a block, its
// input rows plus a 2-pixel halo staged once in shared memory as interleaved floats (each
// row padded by PAD floats), the taps staged in shared memory too, and RY output rows a
// thread strided by BY.
// Launch: grid = (ceil(W / BX), ceil(H / (BY * RY))), block = (BX, BY).
// Defaults: the kernel as written (32 x 8 outputs, one a thread).

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef RY
#define RY 1
#endif
#ifndef PAD
#define PAD 0
#endif
#define R 2
#define TAPS 25
#define TILE_ROWS (BY * RY + 2 * R)
#define TILE_COLS (3 * (BX + 2 * R))

extern "C" __global__ void __launch_bounds__(BX * BY) conv5x5_rgb_luma(
    float* __restrict__ dst, const float* __restrict__ src, const float* __restrict__ taps,
    int W, int H) {
  __shared__ float tile[TILE_ROWS][TILE_COLS + PAD];
  __shared__ float wk[3 * TAPS];
  const int tid = threadIdx.y * BX + threadIdx.x;
  const int x0 = blockIdx.x * BX, y0 = blockIdx.y * (BY * RY);
  for (int e = tid; e < 3 * TAPS; e += BX * BY) wk[e] = taps[e];
  for (int e = tid; e < TILE_ROWS * TILE_COLS; e += BX * BY) {
    const int r = e / TILE_COLS, f = e % TILE_COLS;
    const int gy = y0 - R + r, gx = x0 - R + f / 3;
    tile[r][f] = gy >= 0 && gy < H && gx >= 0 && gx < W
                     ? src[((size_t)gy * W + gx) * 3 + f % 3] : 0.0f;
  }
  __syncthreads();
  const int ox = x0 + threadIdx.x;
#pragma unroll
  for (int q = 0; q < RY; ++q) {
    const int ly = threadIdx.y + q * BY, oy = y0 + ly;
    float sum = 0.0f;
#pragma unroll
    for (int dy = 0; dy < 2 * R + 1; ++dy)
#pragma unroll
      for (int dx = 0; dx < 2 * R + 1; ++dx)
#pragma unroll
        for (int c = 0; c < 3; ++c)
          sum += tile[ly + dy][3 * (threadIdx.x + dx) + c] * wk[c * TAPS + dy * (2 * R + 1) + dx];
    if (ox < W && oy < H) dst[(size_t)oy * W + ox] = sum;
  }
}
