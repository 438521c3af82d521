// The largest response of a bank of 4 true (flipped) 5 x 5 filters over one plane (an
// oriented-edge detector): the filter loop outermost, each filter's window sum folded into
// the best response. The input read does not change with the filter.
#define NF 4
#define KSIZE 5
#define HALF (KSIZE / 2)

__constant__ float weights[NF * KSIZE * KSIZE];

extern "C" __global__ void conv5_channels(float* out, const float* in, int h, int w) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float best = -3.0e38f;
  for (int f = 0; f < NF; ++f) {
    float acc = 0.0f;
    for (int i = 0; i < KSIZE; ++i)
      for (int j = 0; j < KSIZE; ++j) {
        const int sy = y + HALF - i, sx = x + HALF - j;
        if (sy >= 0 && sy < h && sx >= 0 && sx < w)
          acc += weights[(f * KSIZE + i) * KSIZE + j] * in[sy * w + sx];
      }
    best = fmaxf(best, acc);
  }
  out[y * w + x] = best;
}
