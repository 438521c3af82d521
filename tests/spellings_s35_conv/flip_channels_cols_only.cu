// A multi-channel filter flipped along x only: rows upwards (sy = y - HALF + i), columns
// backwards (sx = x + HALF - j), inside the channel loop.
#define CH 4
#define KSIZE 5
#define HALF (KSIZE / 2)

__constant__ float weights[CH * KSIZE * KSIZE];

extern "C" __global__ void conv5_channels(float* out, const float* in, int h, int w) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
  for (int c = 0; c < CH; ++c)
    for (int i = 0; i < KSIZE; ++i)
      for (int j = 0; j < KSIZE; ++j) {
        const int sy = y - HALF + i, sx = x + HALF - j;
        if (sy >= 0 && sy < h && sx >= 0 && sx < w)
          acc += weights[(c * KSIZE + i) * KSIZE + j] * in[(c * h + sy) * w + sx];
      }
  out[y * w + x] = acc;
}
