// Four planes, each correlated with its own 5 x 5 filter from constant memory, summed; zero
// padding. Expert parameterization (hand-written): a BLOCK_X x BLOCK_Y block computes
// ITEMS_X x ITEMS_Y outputs per thread (columns x0 + u * BLOCK_X, rows y0 + v * BLOCK_Y:
// each filter weight read once from constant memory feeds them all). USE_SMEM 1 stages
// each plane's tile with its 2-pixel apron in shared memory (zeros outside the image, rows
// padded by PAD floats), one plane at a time; 0 reads the image through the read-only
// path with the bounds test per tap (as written).
// Launch: grid = (ceil(w / (BLOCK_X * ITEMS_X)), ceil(h / (BLOCK_Y * ITEMS_Y))),
// block = (BLOCK_X, BLOCK_Y). Defaults: the kernel as written.
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
#ifndef PAD
#define PAD 0
#endif
#define CH 4
#define KSIZE 5
#define HALF (KSIZE / 2)
#define OUT_W (BLOCK_X * ITEMS_X)
#define OUT_H (BLOCK_Y * ITEMS_Y)
#define IN_W (OUT_W + 2 * HALF)
#define IN_H (OUT_H + 2 * HALF)

__constant__ float weights[CH * KSIZE * KSIZE];

__device__ __forceinline__ float pixel_or_zero(const float* __restrict__ plane, int y, int x,
                                               int h, int w) {
  if (y < 0 || y >= h || x < 0 || x >= w) return 0.0f;
  return __ldg(plane + (size_t)y * w + x);
}

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, 1)
conv5_channels(float* __restrict__ out, const float* __restrict__ in, int h, int w) {
  const int x0 = blockIdx.x * OUT_W + threadIdx.x;
  const int y0 = blockIdx.y * OUT_H + threadIdx.y;
  float acc[ITEMS_Y][ITEMS_X];
#pragma unroll
  for (int v = 0; v < ITEMS_Y; ++v)
#pragma unroll
    for (int u = 0; u < ITEMS_X; ++u) acc[v][u] = 0.0f;

#if USE_SMEM
  __shared__ float tile[IN_H][IN_W + PAD];
  const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
  const int gx0 = blockIdx.x * OUT_W - HALF;
  const int gy0 = blockIdx.y * OUT_H - HALF;
  for (int ch = 0; ch < CH; ++ch) {
    const float* plane = in + (size_t)ch * h * w;
    for (int e = tid; e < IN_H * IN_W; e += BLOCK_X * BLOCK_Y) {
      const int ty = e / IN_W, tx = e % IN_W;
      tile[ty][tx] = pixel_or_zero(plane, gy0 + ty, gx0 + tx, h, w);
    }
    __syncthreads();
#pragma unroll
    for (int dy = 0; dy < KSIZE; ++dy)
#pragma unroll
      for (int dx = 0; dx < KSIZE; ++dx) {
        const float wt = weights[(ch * KSIZE + dy) * KSIZE + dx];
#pragma unroll
        for (int v = 0; v < ITEMS_Y; ++v)
#pragma unroll
          for (int u = 0; u < ITEMS_X; ++u)
            acc[v][u] += wt * tile[threadIdx.y + v * BLOCK_Y + dy][threadIdx.x + u * BLOCK_X + dx];
      }
    __syncthreads();
  }
#else
  for (int ch = 0; ch < CH; ++ch) {
    const float* plane = in + (size_t)ch * h * w;
    // one filter row at a time: a full unroll would hoist every tap's loads of every output
#pragma unroll 1
    for (int dy = 0; dy < KSIZE; ++dy)
#pragma unroll
      for (int dx = 0; dx < KSIZE; ++dx) {
        const float wt = weights[(ch * KSIZE + dy) * KSIZE + dx];
#pragma unroll
        for (int v = 0; v < ITEMS_Y; ++v)
#pragma unroll
          for (int u = 0; u < ITEMS_X; ++u)
            acc[v][u] += wt * pixel_or_zero(plane, y0 + v * BLOCK_Y + dy - HALF,
                                            x0 + u * BLOCK_X + dx - HALF, h, w);
      }
  }
#endif
#pragma unroll
  for (int v = 0; v < ITEMS_Y; ++v)
#pragma unroll
    for (int u = 0; u < ITEMS_X; ++u) {
      const int y = y0 + v * BLOCK_Y, x = x0 + u * BLOCK_X;
      if (y < h && x < w) out[(size_t)y * w + x] = acc[v][u];
    }
}
