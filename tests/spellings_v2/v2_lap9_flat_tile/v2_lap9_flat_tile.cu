// out = a 9-point Laplacian smoothing step on an h x w grid (the boundary copied): a 1-D
// block of 256 threads laid out as 32 x 8 points (threadIdx.x % TX, threadIdx.x / TX), the
// index and the weights as constexpr, the work under if.
// Launch: grid = ((w + 31) / 32, (h + 7) / 8), block = 256.
constexpr int TX = 32;
constexpr int TY = 8;

extern "C" __global__ void v2_lap9_flat_tile(float* __restrict__ out,
                                             const float* __restrict__ in, int w, int h) {
  const int x = blockIdx.x * TX + threadIdx.x % TX;
  const int y = blockIdx.y * TY + threadIdx.x / TX;
  if (x < w && y < h) {
    const int i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
      out[i] = in[i];
    } else {
      const float edge = in[i - 1] + in[i + 1] + in[i - w] + in[i + w];
      const float corner = in[i - w - 1] + in[i - w + 1] + in[i + w - 1] + in[i + w + 1];
      out[i] = 0.5f * in[i] + 0.1f * edge + 0.025f * corner;
    }
  }
}
