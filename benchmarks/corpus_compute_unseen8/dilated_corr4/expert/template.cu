// Dilated (2) 3x3 cross-correlation, 4 input planes to 2 output planes, zero padding, the
// 72 weights in constant memory. Expert parameterization (hand-written): a BX x BY block;
// each thread computes ITEMS_Y consecutive rows of one column for both output channels, so
// an input row it loads serves every output row within two dilation steps of it (a thread
// loads ITEMS_Y + 4 rows of three taps per channel instead of 3 * ITEMS_Y). LDG 1 reads
// through the read-only cache. Every output adds its terms in the kernel's order (channel,
// tap row, tap column; taps outside the image skipped), so the sums match it.
// Launch: grid = (ceil(W / BX), ceil(H / (BY * ITEMS_Y))), block = (BX, BY).
// Defaults: the kernel as written (32 x 8, one row a thread, plain loads).
#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef ITEMS_Y
#define ITEMS_Y 1
#endif
#ifndef LDG
#define LDG 0
#endif
#define CIN 4
#define COUT 2
#define DIL 2
#define ROWS_IN (ITEMS_Y + 2 * DIL)
#if LDG
#define LOAD(p) __ldg(p)
#else
#define LOAD(p) (*(p))
#endif

__constant__ float wts[COUT * CIN * 9];

extern "C" __global__ void __launch_bounds__(BX * BY)
dilated_corr4(float* __restrict__ out, const float* __restrict__ in, int H, int W) {
  const int x = blockIdx.x * BX + threadIdx.x;
  const int y0 = (blockIdx.y * BY + threadIdx.y) * ITEMS_Y;
  if (x >= W || y0 >= H) return;
  bool xok[3];
#pragma unroll
  for (int kx = 0; kx < 3; ++kx) {
    const int xx = x + DIL * (kx - 1);
    xok[kx] = xx >= 0 && xx < W;
  }
  float acc[COUT][ITEMS_Y];
#pragma unroll
  for (int co = 0; co < COUT; ++co)
#pragma unroll
    for (int i = 0; i < ITEMS_Y; ++i) acc[co][i] = 0.0f;

#pragma unroll
  for (int ci = 0; ci < CIN; ++ci) {
    const float* plane = in + (size_t)ci * H * W;
    // input row y0 - DIL + r serves output row y0 + i through tap row (r - i) / DIL
#pragma unroll
    for (int r = 0; r < ROWS_IN; ++r) {
      const int yy = y0 - DIL + r;
      if (yy < 0 || yy >= H) continue;
      const float* line = plane + (size_t)yy * W + x;
      float v[3];
#pragma unroll
      for (int kx = 0; kx < 3; ++kx) v[kx] = xok[kx] ? LOAD(line + DIL * (kx - 1)) : 0.0f;
#pragma unroll
      for (int i = 0; i < ITEMS_Y; ++i) {
        const int step = r - i;
        if (step < 0 || step > 2 * DIL || step % DIL != 0) continue;
        const int ky = step / DIL;
#pragma unroll
        for (int kx = 0; kx < 3; ++kx) {
          if (!xok[kx]) continue;
          acc[0][i] += wts[(0 * CIN + ci) * 9 + ky * 3 + kx] * v[kx];
          acc[1][i] += wts[(1 * CIN + ci) * 9 + ky * 3 + kx] * v[kx];
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < ITEMS_Y; ++i) {
    const int y = y0 + i;
    if (y >= H) break;
    out[(size_t)y * W + x] = acc[0][i];
    out[((size_t)H + y) * W + x] = acc[1][i];
  }
}
