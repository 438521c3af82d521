// Depthwise 3 x 3 filter of a channels-last [H][W][C] image, zero padding, another hand:
// taps channel-major (k9[c * 9 + 3 * i + j]), the bias a kernel argument, counters from 0,
// one guard around the read (no continue), a constexpr channel count, the pixel from a
// 1-D block of 4 pixels x 32 channels.
constexpr int C = 32;
__constant__ float k9[C * 9];

extern "C" __global__ void k(float* dst, const float* src, const float* bias, int H, int W) {
  const int ch = threadIdx.x & (C - 1);
  const int px = blockIdx.x * 4 + (threadIdx.x >> 5);
  const int py = blockIdx.y;
  if (px < W) {
    float s = bias[ch];
    for (int i = 0; i < 3; i++) {
      for (int j = 0; j < 3; j++) {
        const int sy = py - 1 + i;
        const int sx = px - 1 + j;
        if (sy >= 0 && sy < H && sx >= 0 && sx < W)
          s += src[(sy * W + sx) * C + ch] * k9[ch * 9 + 3 * i + j];
      }
    }
    dst[(py * W + px) * C + ch] = s;
  }
}
