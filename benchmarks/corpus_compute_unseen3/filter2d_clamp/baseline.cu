// out [h, w] = in [h, w] correlated with a 9 x 9 filter whose taps live in constant memory;
// pixels outside the image read as the nearest edge pixel (clamp-to-edge, the "replicate"
// border of image libraries), so the output keeps the input's size and brightness at the
// borders. One output pixel per thread; the block shape is the launch's.
// Launch: grid = ((w + 31) / 32, (h + 7) / 8), block = (32, 8).
#define RADIUS 4
#define DIAM (2 * RADIUS + 1)

__constant__ float taps[DIAM][DIAM];

extern "C" __global__ void filter2d_clamp(float* out, const float* in, int h, int w) {
  int px = blockIdx.x * blockDim.x + threadIdx.x;
  int py = blockIdx.y * blockDim.y + threadIdx.y;
  if (px >= w || py >= h) return;
  float total = 0.0f;
  for (int dy = -RADIUS; dy <= RADIUS; ++dy) {
    int sy = min(max(py + dy, 0), h - 1);
    for (int dx = -RADIUS; dx <= RADIUS; ++dx) {
      int sx = min(max(px + dx, 0), w - 1);
      total += taps[dy + RADIUS][dx + RADIUS] * in[sy * w + sx];
    }
  }
  out[py * w + px] = total;
}
