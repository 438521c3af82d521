// out[b] = 5 x 5 zero-padded correlation of image b with its own filter.
// Expert parameterization (hand-written): a block of BX x BY threads computes a BX wide,
// BY * RY high tile of outputs, each thread RY rows strided by BY. The block first stages
// its input tile with a two-pixel halo (zeros outside the image) in shared memory, rows
// padded by PAD, and the image's 25 taps in registers; each output then sums its taps in
// filter order as written (the zero halo adds nothing).
// Launch: grid = (ceil(W / BX), ceil(H / (BY * RY)), B), block = (BX, BY).
// Defaults: the kernel's launch as written.

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
#define KW (2 * R + 1)
#define TH (BY * RY + 2 * R)
#define TW (BX + 2 * R)

extern "C" __global__ void __launch_bounds__(BX * BY) corr5x5_perimg(float* out, const float* in,
                                                                     const float* filt, int H,
                                                                     int W) {
  __shared__ float tile[TH][TW + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x0 = blockIdx.x * BX, y0 = blockIdx.y * (BY * RY);
  const size_t plane = (size_t)blockIdx.z * H * W;
  for (int e = ty * BX + tx; e < TH * TW; e += BX * BY) {
    const int r = e / TW, c = e % TW;
    const int gy = y0 + r - R, gx = x0 + c - R;
    tile[r][c] = (gy >= 0 && gy < H && gx >= 0 && gx < W) ? __ldg(&in[plane + (size_t)gy * W + gx])
                                                          : 0.0f;
  }
  float f[KW * KW];
  const float* fb = filt + (size_t)blockIdx.z * KW * KW;
#pragma unroll
  for (int t = 0; t < KW * KW; ++t) f[t] = __ldg(&fb[t]);
  __syncthreads();
  const int x = x0 + tx;
#pragma unroll
  for (int ry = 0; ry < RY; ++ry) {
    const int ly = ty + ry * BY;
    float acc = 0.0f;
#pragma unroll
    for (int dy = 0; dy < KW; ++dy)
#pragma unroll
      for (int dx = 0; dx < KW; ++dx) acc += f[dy * KW + dx] * tile[ly + dy][tx + dx];
    const int y = y0 + ly;
    if (x < W && y < H) out[plane + (size_t)y * W + x] = acc;
  }
}
