// out[y][x] = sum over i, j of filt[i][j] * in[y + i - 3][x + j - 3], zero outside the image;
// the input pixel through a lambda that checks the bounds, the radius a macro of the size
#define KS 7
__constant__ float filt[KS][KS];

extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  const int x = blockIdx.x * 16 + threadIdx.x;
  const int y = blockIdx.y * 16 + threadIdx.y;
  if (x >= w || y >= h) return;
  auto pixel = [=](int yy, int xx) {
    return (yy >= 0 && yy < h && xx >= 0 && xx < w) ? in[yy * w + xx] : 0.0f;
  };
  float acc = 0.0f;
  for (int i = 0; i < KS; ++i)
    for (int j = 0; j < KS; ++j) acc += filt[i][j] * pixel(y + i - KS / 2, x + j - KS / 2);
  out[y * w + x] = acc;
}
