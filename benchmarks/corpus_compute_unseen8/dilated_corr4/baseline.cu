// Dilated 3x3 cross-correlation, 4 input channels to 2 output channels, as in the context
// module of a segmentation network: out[co][y][x] = sum over ci, ky, kx of
// w[co][ci][ky][kx] * in[ci][y + 2 (ky - 1)][x + 2 (kx - 1)], zero outside the image
// ("same" size, dilation 2). Planes are row-major fp32, channel after channel; the 72 weights
// sit in constant memory. One thread per pixel computes both output channels.
// Launch: grid = ((W + BX - 1) / BX, (H + BY - 1) / BY), block = (BX, BY).
#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#define CIN 4
#define COUT 2
#define DIL 2

__constant__ float wts[COUT * CIN * 9];

extern "C" __global__ void dilated_corr4(float* out, const float* in, int H, int W) {
  const int x = blockIdx.x * BX + threadIdx.x;
  const int y = blockIdx.y * BY + threadIdx.y;
  if (x >= W || y >= H) return;
  float acc0 = 0.0f, acc1 = 0.0f;
  for (int ci = 0; ci < CIN; ci++) {
    const float* plane = in + (size_t)ci * H * W;
    for (int ky = 0; ky < 3; ky++) {
      const int yy = y + DIL * (ky - 1);
      if (yy < 0 || yy >= H) continue;
      for (int kx = 0; kx < 3; kx++) {
        const int xx = x + DIL * (kx - 1);
        if (xx < 0 || xx >= W) continue;
        const float v = plane[(size_t)yy * W + xx];
        acc0 += wts[(0 * CIN + ci) * 9 + ky * 3 + kx] * v;
        acc1 += wts[(1 * CIN + ci) * 9 + ky * 3 + kx] * v;
      }
    }
  }
  out[(size_t)y * W + x] = acc0;
  out[((size_t)H + y) * W + x] = acc1;
}
