// 7 x 7 correlation of one image with four filters.
// Expert parameterization (hand-written): a BX x BY block covers BX x (BY * RY) outputs,
// each thread RY rows strided by BY, from a shared window padded by PAD floats a row; the
// filters sit in shared memory and each thread reads a window row of 7 into registers.
// Launch: grid = (ceil(W / BX), ceil(H / (BY * RY))), block = (BX, BY).
// Defaults: the kernel's launch as written.

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
#define R 3
#define D (2 * R + 1)
#define NF 4
#define TAPS (D * D)
#define TH (BY * RY)
#define WH (TH + 2 * R)
#define WW (BX + 2 * R)
#define LD (WW + PAD)

extern "C" __global__ void __launch_bounds__(BX * BY) corr7x7_bank4(
    float* __restrict__ out, const float* __restrict__ img, const float* __restrict__ filt,
    int H, int W) {
  __shared__ float tile[WH * LD];
  __shared__ float taps[NF * TAPS];
  const int tid = threadIdx.y * BX + threadIdx.x;
  const int y0 = blockIdx.y * TH - R, x0 = blockIdx.x * BX - R;
  for (int e = tid; e < WH * WW; e += BX * BY) {
    const int r = e / WW, q = e % WW;
    const int gy = y0 + r, gx = x0 + q;
    tile[r * LD + q] = (gy >= 0 && gy < H && gx >= 0 && gx < W) ? img[(size_t)gy * W + gx] : 0.0f;
  }
  for (int e = tid; e < NF * TAPS; e += BX * BY) taps[e] = filt[e];
  __syncthreads();
  const int x = blockIdx.x * BX + threadIdx.x;
#pragma unroll
  for (int i = 0; i < RY; ++i) {
    const int ly = threadIdx.y + i * BY;
    const int y = blockIdx.y * TH + ly;
    float acc[NF];
#pragma unroll
    for (int f = 0; f < NF; ++f) acc[f] = 0.0f;
#pragma unroll
    for (int dy = 0; dy < D; ++dy) {
      float row[D];
#pragma unroll
      for (int dx = 0; dx < D; ++dx) row[dx] = tile[(ly + dy) * LD + threadIdx.x + dx];
#pragma unroll
      for (int dx = 0; dx < D; ++dx)
#pragma unroll
        for (int f = 0; f < NF; ++f) acc[f] += taps[f * TAPS + dy * D + dx] * row[dx];
    }
    if (y < H && x < W) {
#pragma unroll
      for (int f = 0; f < NF; ++f) out[((size_t)f * H + y) * W + x] = acc[f];
    }
  }
}
