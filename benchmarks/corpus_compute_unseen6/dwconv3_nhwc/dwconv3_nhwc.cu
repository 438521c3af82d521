// Depthwise 3 x 3 convolution of a channels-last image: out[y][x][c] = bias[c] + the sum over
// the 3 x 3 neighbourhood of in[y + dy][x + dx][c] * taps[dy + 1][dx + 1][c] (each channel
// has its own 9 taps). Taps and biases live in constant memory; pixels outside the image
// read as zero. The data is [h, w, 32] (channels fastest). A 1-D block of 256 threads covers
// 8 neighbouring pixels of one row: thread t takes channel t % 32 of pixel t / 32.
// Launch: grid = ((w + 7) / 8, h), block = 256.
#define CHANNELS 32
#define PIXELS_PER_BLOCK 8

__constant__ float taps[9 * CHANNELS];  // [dy + 1][dx + 1][c]
__constant__ float bias[CHANNELS];

extern "C" __global__ void dwconv3_nhwc(float* out, const float* in, int h, int w) {
  const int c = threadIdx.x % CHANNELS;
  const int x = blockIdx.x * PIXELS_PER_BLOCK + threadIdx.x / CHANNELS;
  const int y = blockIdx.y;
  if (x >= w) return;
  float sum = bias[c];
  for (int dy = -1; dy <= 1; ++dy) {
    const int yy = y + dy;
    if (yy < 0 || yy >= h) continue;
    for (int dx = -1; dx <= 1; ++dx) {
      const int xx = x + dx;
      if (xx < 0 || xx >= w) continue;
      sum += in[((size_t)yy * w + xx) * CHANNELS + c] * taps[((dy + 1) * 3 + dx + 1) * CHANNELS + c];
    }
  }
  out[((size_t)y * w + x) * CHANNELS + c] = sum;
}
