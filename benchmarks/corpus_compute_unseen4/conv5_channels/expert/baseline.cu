// out [h, w] = the sum over CH input planes in [c, h, w] of each plane correlated with its own
// 5 x 5 filter; the CH * 25 weights live in constant memory. Pixels outside the image read
// as zero (zero padding), so the output keeps the input's size. One output per thread, a
// 16 x 16 block.
// Launch: grid = ((w + 15) / 16, (h + 15) / 16), block = (16, 16).
#define CH 4
#define KSIZE 5
#define HALF (KSIZE / 2)

__constant__ float weights[CH * KSIZE * KSIZE];

__device__ float pixel_or_zero(const float* plane, int y, int x, int h, int w) {
  if (y < 0 || y >= h || x < 0 || x >= w) return 0.0f;
  return plane[y * w + x];
}

extern "C" __global__ void conv5_channels(float* out, const float* in, int h, int w) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
  for (int ch = 0; ch < CH; ch++) {
    const float* plane = in + (size_t)ch * h * w;
    for (int dy = 0; dy < KSIZE; dy++)
      for (int dx = 0; dx < KSIZE; dx++)
        acc += weights[(ch * KSIZE + dy) * KSIZE + dx] *
               pixel_or_zero(plane, y + dy - HALF, x + dx - HALF, h, w);
  }
  out[y * w + x] = acc;
}
