// out [h, w] = in [h, w] correlated with a 9 x 9 filter in constant memory, clamp-to-edge
// borders. Expert parameterization (hand-written): each thread computes ITEMS_Y consecutive
// rows x ITEMS_X adjacent columns of outputs. For every input row it touches it reads one
// window of ITEMS_X + 8 pixels into registers once and feeds it to every output that needs
// it: each of its ITEMS_Y rows (register reuse down) and each of its ITEMS_X columns (a
// sliding window across), so an output costs (ITEMS_X + 8) (ITEMS_Y + 8) / (ITEMS_X ITEMS_Y)
// reads instead of 81. USE_SMEM 1 stages the block's tile with its 4-pixel apron in shared
// memory, clamped once at the load (the inner loop has no border tests), and reads a
// window as float4 when ITEMS_X is a multiple of 4; PAD widens each tile row (4 keeps the
// float4 alignment). USE_SMEM 0 reads global memory through the read-only path.
// Launch: grid = (ceil(w / (BLOCK_X * ITEMS_X)), ceil(h / (BLOCK_Y * ITEMS_Y))),
//         block = (BLOCK_X, BLOCK_Y). Defaults: the kernel as written.
#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
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
#define RADIUS 4
#define DIAM (2 * RADIUS + 1)

__constant__ float taps[DIAM][DIAM];

#define TILE_W (BLOCK_X * ITEMS_X)         // outputs per block along x
#define TILE_H (BLOCK_Y * ITEMS_Y)         // outputs per block along y
#define WIN (ITEMS_X + 2 * RADIUS)         // input pixels of one row a thread reads
#define SMEM_W (TILE_W + 2 * RADIUS + PAD)  // floats per shared tile row

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
filter2d_clamp(float* __restrict__ out, const float* __restrict__ in, int h, int w) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x0 = blockIdx.x * TILE_W, y0 = blockIdx.y * TILE_H;
  // the thread's first output column and row
  const int ox = x0 + tx * ITEMS_X, oy = y0 + ty * ITEMS_Y;
#if USE_SMEM
  __shared__ __align__(16) float tile[TILE_H + 2 * RADIUS][SMEM_W];
  for (int e = ty * BLOCK_X + tx; e < (TILE_H + 2 * RADIUS) * (TILE_W + 2 * RADIUS);
       e += BLOCK_X * BLOCK_Y) {
    const int r = e / (TILE_W + 2 * RADIUS), c = e % (TILE_W + 2 * RADIUS);
    const int sy = min(max(y0 + r - RADIUS, 0), h - 1);
    const int sx = min(max(x0 + c - RADIUS, 0), w - 1);
    tile[r][c] = __ldg(in + (size_t)sy * w + sx);
  }
  __syncthreads();
#else
  int cols[WIN];  // clamped input columns of the thread's window
#pragma unroll
  for (int c = 0; c < WIN; ++c) cols[c] = min(max(ox + c - RADIUS, 0), w - 1);
#endif

  float acc[ITEMS_Y][ITEMS_X];
#pragma unroll
  for (int iy = 0; iy < ITEMS_Y; ++iy)
#pragma unroll
    for (int ix = 0; ix < ITEMS_X; ++ix) acc[iy][ix] = 0.0f;

  // input rows oy + rr - RADIUS, rr = 0 .. ITEMS_Y + 2 RADIUS - 1
#pragma unroll
  for (int rr = 0; rr < ITEMS_Y + 2 * RADIUS; ++rr) {
    float v[WIN];
#if USE_SMEM
    const float* row = &tile[ty * ITEMS_Y + rr][tx * ITEMS_X];
    if (ITEMS_X % 4 == 0 && SMEM_W % 4 == 0) {
      // 16-byte aligned: the row start, tx * ITEMS_X and WIN are multiples of 4 floats
#pragma unroll
      for (int c = 0; c < WIN; c += 4) {
        const float4 q = *reinterpret_cast<const float4*>(row + c);
        v[c] = q.x;
        v[c + 1] = q.y;
        v[c + 2] = q.z;
        v[c + 3] = q.w;
      }
    } else {
#pragma unroll
      for (int c = 0; c < WIN; ++c) v[c] = row[c];
    }
#else
    const int sy = min(max(oy + rr - RADIUS, 0), h - 1);
    const float* row = in + (size_t)sy * w;
#pragma unroll
    for (int c = 0; c < WIN; ++c) v[c] = __ldg(row + cols[c]);
#endif
#pragma unroll
    for (int iy = 0; iy < ITEMS_Y; ++iy) {
      const int i = rr - iy;  // the filter row this input row is for output row iy
      if (i >= 0 && i < DIAM) {
#pragma unroll
        for (int ix = 0; ix < ITEMS_X; ++ix)
#pragma unroll
          for (int j = 0; j < DIAM; ++j) acc[iy][ix] += taps[i][j] * v[ix + j];
      }
    }
  }

#pragma unroll
  for (int iy = 0; iy < ITEMS_Y; ++iy) {
    const int y = oy + iy;
#pragma unroll
    for (int ix = 0; ix < ITEMS_X; ++ix) {
      const int x = ox + ix;
      if (x < w && y < h) out[(size_t)y * w + x] = acc[iy][ix];
    }
  }
}
