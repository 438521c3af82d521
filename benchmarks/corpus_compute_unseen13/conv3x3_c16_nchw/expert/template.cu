// out[b, co] = bias[co] + the zero-padded 3 x 3 convolution of 16 channels into 16 (NCHW).
// Expert parameterization (hand-written): a BX x BY block owns a BX x BY patch of COT
// output channels of one image (blockIdx.z = image * (16 / COT) + channel group); each
// thread keeps COT sums in registers, so every input tap it reads feeds COT multiply-adds.
// SMEM 1 stages each input channel's (BY + 2) x (BX + 2) patch with its halo in shared
// memory (zeros outside the image) before the taps read it; SMEM 0 reads the taps from
// global with the bounds tests. Each sum adds bias, then channels, rows and columns in the
// kernel as written's order.
// Launch: grid = (ceil(w / BX), ceil(h / BY), nb * (16 / COT)), block = (BX, BY).
// Defaults: the kernel as written (16 x 16 block, one output channel a thread, global taps).

#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 16
#endif
#ifndef COT
#define COT 1
#endif
#ifndef SMEM
#define SMEM 0
#endif
#define CH 16
#define GROUPS (CH / COT)

extern "C" __global__ void __launch_bounds__(BX * BY)
conv3x3_c16_nchw(float* __restrict__ out, const float* __restrict__ in,
                 const float* __restrict__ wt, const float* __restrict__ bias, int nb, int h,
                 int w) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x = blockIdx.x * BX + tx, y = blockIdx.y * BY + ty;
  const int b = blockIdx.z / GROUPS, co0 = (blockIdx.z % GROUPS) * COT;
  const size_t plane = (size_t)h * w;
  float acc[COT];
#pragma unroll
  for (int c = 0; c < COT; ++c) acc[c] = bias[co0 + c];
#if SMEM
  __shared__ float tile[BY + 2][BX + 2];
#endif
  for (int ci = 0; ci < CH; ++ci) {
    const float* img = in + ((size_t)b * CH + ci) * plane;
#if SMEM
    __syncthreads();
    for (int e = ty * BX + tx; e < (BY + 2) * (BX + 2); e += BX * BY) {
      const int r = e / (BX + 2), c = e % (BX + 2);
      const int yy = blockIdx.y * BY + r - 1, xx = blockIdx.x * BX + c - 1;
      tile[r][c] = (yy >= 0 && yy < h && xx >= 0 && xx < w) ? img[(size_t)yy * w + xx] : 0.0f;
    }
    __syncthreads();
#endif
    float part[COT];
#pragma unroll
    for (int c = 0; c < COT; ++c) part[c] = 0.0f;
#pragma unroll
    for (int ky = 0; ky < 3; ++ky) {
#pragma unroll
      for (int kx = 0; kx < 3; ++kx) {
#if SMEM
        const float v = tile[ty + ky][tx + kx];
#else
        const int yy = y + ky - 1, xx = x + kx - 1;
        const float v = (yy >= 0 && yy < h && xx >= 0 && xx < w && y < h && x < w)
                            ? img[(size_t)yy * w + xx] : 0.0f;
#endif
#pragma unroll
        for (int c = 0; c < COT; ++c) part[c] += wt[((co0 + c) * CH + ci) * 9 + ky * 3 + kx] * v;
      }
    }
#pragma unroll
    for (int c = 0; c < COT; ++c) acc[c] += part[c];
  }
  if (x < w && y < h) {
#pragma unroll
    for (int c = 0; c < COT; ++c)
      out[((size_t)b * CH + co0 + c) * plane + (size_t)y * w + x] = acc[c];
  }
}
