// out [h, w] = 2-D convolution (correlation) of in [h, w] with a KS x KS filter held in
// constant memory, zero padding at the borders, one output per thread.
// Launch: grid = ((w + BLOCK_X - 1) / BLOCK_X, (h + BLOCK_Y - 1) / BLOCK_Y),
//         block = (BLOCK_X, BLOCK_Y).
#ifndef BLOCK_X
#define BLOCK_X 16
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 16
#endif
#define KS 7
#define R (KS / 2)

__constant__ float filt[KS * KS];

extern "C" __global__ void conv2d_const(float* out, const float* in, int h, int w) {
  int x = blockIdx.x * BLOCK_X + threadIdx.x;
  int y = blockIdx.y * BLOCK_Y + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
  for (int i = 0; i < KS; ++i) {
    for (int j = 0; j < KS; ++j) {
      int yy = y + i - R, xx = x + j - R;
      if (yy >= 0 && yy < h && xx >= 0 && xx < w) acc += filt[i * KS + j] * in[yy * w + xx];
    }
  }
  out[y * w + x] = acc;
}
