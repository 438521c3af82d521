// out = in correlated with a 5 x 5 __constant__ filter, zero outside the image; a 1-D block
// of 256 threads split into 32 x 8 by % and /, the taps walked by while loops with the
// bounds test as an early continue, the radius a constexpr and the filter flat
constexpr int RAD = 2;
constexpr int FW = 2 * RAD + 1;
__constant__ float taps[FW * FW];

extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  const int x = blockIdx.x * 32 + threadIdx.x % 32;
  const int y = blockIdx.y * 8 + threadIdx.x / 32;
  if (x >= w) return;
  if (y >= h) return;
  float v = 0.0f;
  int i = 0;
  while (i < FW) {
    const int sy = y + i - RAD;
    int j = 0;
    while (j < FW) {
      const int sx = x + j - RAD;
      if (sy >= 0 && sy < h && sx >= 0 && sx < w) v += taps[i * FW + j] * in[sy * w + sx];
      ++j;
    }
    ++i;
  }
  out[y * w + x] = v;
}
