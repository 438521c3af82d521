// out[p, oy, ox] = the maximum of in[p]'s 3 x 3 window at (2 oy, 2 ox), stride 2, no padding.
// Expert parameterization (hand-written): each thread owns an OY x ITEMS patch of one
// plane's outputs (OY rows, ITEMS consecutive columns; the plane cut into ceil(ho / OY) x
// ceil(wo / ITEMS) patches walked in row-major order by THREADS threads a block). Windows
// next to each other share a column and windows above each other a row, so a thread reads
// each of its 2 OY + 1 input rows once, 2 ITEMS + 1 columns of each.
// Launch: grid = (ceil(ceil(ho / OY) * ceil(wo / ITEMS) / THREADS), p), block = THREADS.
// Defaults: the kernel as written (128 threads, one output each).

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef OY
#define OY 1
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
maxpool3s2_nchw(float* __restrict__ out, const float* __restrict__ in, int h, int w, int ho,
                int wo) {
  const int pieces = (wo + ITEMS - 1) / ITEMS;
  const int idx = blockIdx.x * THREADS + threadIdx.x;
  if (idx >= ((ho + OY - 1) / OY) * pieces) return;
  const int oy0 = (idx / pieces) * OY, ox0 = (idx % pieces) * ITEMS;
  const int cols = min(ITEMS, wo - ox0), rows = min(OY, ho - oy0);
  const float* src = in + (size_t)blockIdx.y * h * w + (size_t)(2 * oy0) * w + 2 * ox0;
  float best[OY][ITEMS];
#pragma unroll
  for (int o = 0; o < OY; ++o)
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) best[o][i] = -INFINITY;
#pragma unroll
  for (int r = 0; r < 2 * OY + 1; ++r) {
    if (r > 2 * rows) break;
    const float* row = src + (size_t)r * w;
    float left = row[0];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      if (i < cols) {
        const float mid = row[2 * i + 1], right = row[2 * i + 2];
        const float m = fmaxf(left, fmaxf(mid, right));
        left = right;
        // input row r is the top or middle row of output row r / 2, the bottom of r / 2 - 1
        if (r / 2 < OY) best[r / 2][i] = fmaxf(best[r / 2][i], m);
        if (r % 2 == 0 && r >= 2) best[r / 2 - 1][i] = fmaxf(best[r / 2 - 1][i], m);
      }
    }
  }
  float* dst = out + (size_t)blockIdx.y * ho * wo + (size_t)oy0 * wo + ox0;
#pragma unroll
  for (int o = 0; o < OY; ++o)
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
      if (o < rows && i < cols) dst[(size_t)o * wo + i] = best[o][i];
}
