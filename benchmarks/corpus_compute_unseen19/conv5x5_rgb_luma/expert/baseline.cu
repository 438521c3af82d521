// 5x5 convolution of an interleaved RGB image to one channel, zero outside the image:
//   dst(x, y) = sum_{dy, dx = -2..2} sum_{c = 0..2} src(x + dx, y + dy, c) * w[c][dy + 2][dx + 2]
// src is H rows of W pixels of 3 interleaved floats; dst is H x W; w is 3 x 5 x 5.
// One output pixel a thread, 32 x 8 threads a block.
// Launch: grid = (iDivUp(W, 32), iDivUp(H, 8)), block = (32, 8).

#define KERNEL_RADIUS 2
#define KERNEL_W (2 * KERNEL_RADIUS + 1)
#define CHANNELS 3
#define BLOCKDIM_X 32
#define BLOCKDIM_Y 8
#define IMUL(a, b) ((a) * (b))

extern "C" __global__ void conv5x5_rgb_luma(float* d_Dst, const float* d_Src,
                                            const float* d_Kernel, int imageW, int imageH) {
  const int ix = IMUL(blockIdx.x, BLOCKDIM_X) + threadIdx.x;
  const int iy = IMUL(blockIdx.y, BLOCKDIM_Y) + threadIdx.y;
  if (ix >= imageW || iy >= imageH) return;

  float sum = 0;
  for (int dy = -KERNEL_RADIUS; dy <= KERNEL_RADIUS; dy++) {
    const int y = iy + dy;
    if (y < 0 || y >= imageH) continue;
    for (int dx = -KERNEL_RADIUS; dx <= KERNEL_RADIUS; dx++) {
      const int x = ix + dx;
      if (x < 0 || x >= imageW) continue;
      const float* pixel = d_Src + IMUL(CHANNELS, IMUL(y, imageW) + x);
      const int tap = IMUL(dy + KERNEL_RADIUS, KERNEL_W) + dx + KERNEL_RADIUS;
      for (int c = 0; c < CHANNELS; c++)
        sum += pixel[c] * d_Kernel[IMUL(c, KERNEL_W * KERNEL_W) + tap];
    }
  }
  d_Dst[IMUL(iy, imageW) + ix] = sum;
}
