// out[y][x] = sum over dy, dx, c of coef[dy + r][dx + r] * in[y + dy][x + dx][c] (channels
// last), clamped to the image; the radius a kernel argument bounded by a macro maximum, the
// channels the inner loop
#define MAX_R 3
#define NC 4
__constant__ float coef[2 * MAX_R + 1][2 * MAX_R + 1];

extern "C" __global__ void k(float* out, const float* in, int h, int w, int r) {
  int px = threadIdx.x + blockIdx.x * blockDim.x;
  int py = threadIdx.y + blockIdx.y * blockDim.y;
  if (px >= w || py >= h) return;
  float acc = 0.0f;
  for (int dy = -r; dy <= r; ++dy) {
    int sy = min(max(py + dy, 0), h - 1);
    for (int dx = -r; dx <= r; ++dx) {
      int sx = min(max(px + dx, 0), w - 1);
      float cw = coef[dy + MAX_R][dx + MAX_R];
      for (int c = 0; c < NC; ++c) acc += cw * in[((size_t)sy * w + sx) * NC + c];
    }
  }
  out[(size_t)py * w + px] = acc;
}
