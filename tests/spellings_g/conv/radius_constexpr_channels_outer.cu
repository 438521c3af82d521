// out[y][x] = sum over c, i, j of wts[c][i][j] * in[c][y + i - RAD][x + j - RAD], zero
// outside; the radius a constexpr, a 3-D filter in constant memory, channels the outer loop
constexpr int RAD = 2;
constexpr int CH = 3;
constexpr int SIDE = 2 * RAD + 1;
__constant__ float wts[CH][SIDE][SIDE];

extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  const int x = blockIdx.x * 32 + threadIdx.x;
  const int y = blockIdx.y * 8 + threadIdx.y;
  if (x < w && y < h) {
    float sum = 0.0f;
    for (int c = 0; c < CH; ++c) {
      const float* plane = in + (size_t)c * h * w;
      for (int i = 0; i < SIDE; ++i) {
        const int yy = y + i - RAD;
        if (yy < 0 || yy >= h) continue;
        for (int j = 0; j < SIDE; ++j) {
          const int xx = x + j - RAD;
          if (xx >= 0 && xx < w) sum += wts[c][i][j] * plane[yy * w + xx];
        }
      }
    }
    out[y * w + x] = sum;
  }
}
