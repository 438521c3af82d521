// out[o][y][x] = sum over c, dy, dx of wts[o][c][dy][dx] * in[c][y + dy - 1][x + dx - 1]
// (3 x 3, zero padding), 3 input channels, the output channel blockIdx.z; the input's
// offsets through an index lambda, the filter constant, the work under an if
#define CIN 3
#define COUT 4
__constant__ float wts[COUT][CIN][3][3];

extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  const int x = blockIdx.x * 16 + threadIdx.x;
  const int y = blockIdx.y * 16 + threadIdx.y;
  const int o = blockIdx.z;
  auto at = [&](int c, int yy, int xx) { return (c * h + yy) * w + xx; };
  if (x < w && y < h) {
    float s = 0.0f;
    for (int c = 0; c < CIN; c++)
      for (int dy = 0; dy < 3; dy++)
        for (int dx = 0; dx < 3; dx++) {
          const int yy = y + dy - 1, xx = x + dx - 1;
          if (yy >= 0 && yy < h && xx >= 0 && xx < w) s += wts[o][c][dy][dx] * in[at(c, yy, xx)];
        }
    out[(o * h + y) * w + x] = s;
  }
}
