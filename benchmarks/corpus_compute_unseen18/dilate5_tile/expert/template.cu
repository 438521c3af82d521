// Grey-scale 5 x 5 dilation through a shared tile.
// Expert parameterization (hand-written): a BX x BY block computing RY rows a thread
// (strided by BY), PAD floats of padding a shared tile row, and SEP=1 taking the window
// maximum in two passes (row maxima of the tile into a second shared array, then the
// column maximum of five of them) instead of 25 reads.
// Launch: grid = (ceil(W / BX), ceil(H / (BY * RY))), block = (BX, BY).
// Defaults: the kernel as written.

#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 16
#endif
#ifndef RY
#define RY 1
#endif
#ifndef PAD
#define PAD 0
#endif
#ifndef SEP
#define SEP 0
#endif
#define R 2
#define LOWEST (-3.0e38f)
#define ROWS (BY * RY + 2 * R)
#define COLS (BX + 2 * R)

extern "C" __global__ void __launch_bounds__(BX * BY) dilate5_tile(
    float* __restrict__ out, const float* __restrict__ in, int H, int W) {
  __shared__ float tile[ROWS][COLS + PAD];
#if SEP
  __shared__ float rowmax[ROWS][BX + PAD];
#endif
  const int x0 = blockIdx.x * BX, y0 = blockIdx.y * (BY * RY);
  for (int ty = threadIdx.y; ty < ROWS; ty += BY) {
    const int gy = y0 + ty - R;
    for (int tx = threadIdx.x; tx < COLS; tx += BX) {
      const int gx = x0 + tx - R;
      tile[ty][tx] = (gy >= 0 && gy < H && gx >= 0 && gx < W) ? in[(size_t)gy * W + gx]
                                                                : LOWEST;
    }
  }
  __syncthreads();
#if SEP
  for (int ty = threadIdx.y; ty < ROWS; ty += BY) {
    float m = tile[ty][threadIdx.x];
#pragma unroll
    for (int dx = 1; dx <= 2 * R; ++dx) m = fmaxf(m, tile[ty][threadIdx.x + dx]);
    rowmax[ty][threadIdx.x] = m;
  }
  __syncthreads();
#endif
  const int x = x0 + threadIdx.x;
#pragma unroll
  for (int j = 0; j < RY; ++j) {
    const int ly = threadIdx.y + j * BY, y = y0 + ly;
    float m = LOWEST;
#pragma unroll
    for (int dy = 0; dy <= 2 * R; ++dy) {
#if SEP
      m = fmaxf(m, rowmax[ly + dy][threadIdx.x]);
#else
#pragma unroll
      for (int dx = 0; dx <= 2 * R; ++dx) m = fmaxf(m, tile[ly + dy][threadIdx.x + dx]);
#endif
    }
    if (x < W && y < H) out[(size_t)y * W + x] = m;
  }
}
