/* Stride-2 transposed convolution (4 x 4 taps, padding 1), another hand: size_t plane
 * offsets, a helper adding one channel's taps into the sum by reference, the work wrapped in
 * the bounds test, a literal 16 x 16 block. */
#define TAPS 4
#define BX 16
#define BY 16

__device__ void add_channel(float &acc, const float *ip, const float *wp, int oy, int ox,
                            int H, int W) {
  for (int ky = (oy + 1) & 1; ky < TAPS; ky += 2) {
    const int iy = (oy + 1 - ky) >> 1;
    if (iy >= 0 && iy < H) {
      for (int kx = (ox + 1) & 1; kx < TAPS; kx += 2) {
        const int ix = (ox + 1 - kx) >> 1;
        if (ix >= 0 && ix < W) acc += ip[iy * W + ix] * wp[ky * TAPS + kx];
      }
    }
  }
}

extern "C" __global__ void upconv4x4_s2(float *out, const float *in, const float *w, int C,
                                        int K, int H, int W) {
  const int ox = blockIdx.x * BX + threadIdx.x;
  const int oy = blockIdx.y * BY + threadIdx.y;
  const size_t plane = (size_t)H * W;
  if (ox < 2 * W && oy < 2 * H) {
    float acc = 0.0f;
    for (int c = 0; c < C; c++) {
      const float *ip = in + c * plane;
      const float *wp = w + ((size_t)c * K + blockIdx.z) * TAPS * TAPS;
      add_channel(acc, ip, wp, oy, ox, H, W);
    }
    out[((size_t)blockIdx.z * 2 * H + oy) * 2 * W + ox] = acc;
  }
}
