// 5 x 5 correlation of a batch of images, each with its own filter:
//   out[b][y][x] = sum_{dy, dx in -2..2} filt[b][dy + 2][dx + 2] * in[b][y + dy][x + dx],
// pixels outside the image counting as zero. in, out [B, H, W]; filt [B, 5, 5], read from
// global memory through the read-only path. One output a thread of a 32 x 8 block, one
// image per grid layer.
// Launch: grid = ((W + 31) / 32, (H + 7) / 8, B), block = (32, 8).

#define R 2
#define KW (2 * R + 1)
#define IDX(b, y, x) (((size_t)(b) * H + (y)) * W + (x))

extern "C" __global__ void corr5x5_perimg(float* out, const float* in, const float* filt, int H,
                                          int W) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int b = blockIdx.z;
  if (x >= W || y >= H) return;
  const float* f = filt + (size_t)b * KW * KW;
  float acc = 0.0f;
  for (int dy = -R; dy <= R; ++dy) {
    const int yy = y + dy;
    if (yy < 0 || yy >= H) continue;
    for (int dx = -R; dx <= R; ++dx) {
      const int xx = x + dx;
      if (xx < 0 || xx >= W) continue;
      acc += __ldg(&f[(dy + R) * KW + (dx + R)]) * __ldg(&in[IDX(b, yy, xx)]);
    }
  }
  out[IDX(b, y, x)] = acc;
}
