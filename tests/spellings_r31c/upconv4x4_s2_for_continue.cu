// Stride-2 transposed convolution (4 x 4 taps, padding 1), another hand: for loops over the
// parity's taps, index macros, `continue` for taps outside the input, constexpr taps.
constexpr int kTaps = 4;
#define IN_AT(c, y, x) in[((long)(c) * H + (y)) * W + (x)]
#define W_AT(c, k, ky, kx) w[(((long)(c) * K + (k)) * kTaps + (ky)) * kTaps + (kx)]

extern "C" __global__ void upconv4x4_s2(float* out, const float* in, const float* w, int C,
                                        int K, int H, int W) {
  const int ox = blockIdx.x * blockDim.x + threadIdx.x;
  const int oy = blockIdx.y * blockDim.y + threadIdx.y;
  const int k = blockIdx.z;
  const int OH = 2 * H, OW = 2 * W;
  if (ox >= OW || oy >= OH) return;
  float acc = 0.0f;
  for (int c = 0; c < C; ++c) {
    for (int ky = (oy + 1) & 1; ky < kTaps; ky += 2) {
      const int iy = (oy + 1 - ky) >> 1;
      if (iy < 0 || iy >= H) continue;
      for (int kx = (ox + 1) & 1; kx < kTaps; kx += 2) {
        const int ix = (ox + 1 - kx) >> 1;
        if (ix < 0 || ix >= W) continue;
        acc += IN_AT(c, iy, ix) * W_AT(c, k, ky, kx);
      }
    }
  }
  out[((long)k * OH + oy) * OW + ox] = acc;
}
