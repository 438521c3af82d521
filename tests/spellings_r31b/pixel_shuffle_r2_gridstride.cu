// Pixel shuffle, upscale 2 (torch.nn.PixelShuffle(2)) of an NCHW float tensor, written as a
// grid-stride loop over the outputs with a constexpr factor and block size.
//   out[n][c][2y + i][2x + j] = in[n][4c + 2i + j][y][x]
// Launch: grid = ((N * C * 4 * H * W + 255) / 256), block = (256).

constexpr int kFactor = 2;
constexpr int kThreads = 256;

extern "C" __global__ void pixel_shuffle_r2(float* out, const float* in, int N, int C, int H,
                                            int W) {
  const int ow = W * kFactor;
  const int oh = H * kFactor;
  const int total = N * C * oh * ow;
  for (int i = blockIdx.x * kThreads + threadIdx.x; i < total; i += kThreads * gridDim.x) {
    const int x = i % ow;
    const int y = (i / ow) % oh;
    const int c = (i / (ow * oh)) % C;
    const int n = i / (ow * oh * C);
    const int src_c = (c * kFactor + y % kFactor) * kFactor + x % kFactor;
    const int src = ((n * C * kFactor * kFactor + src_c) * H + y / kFactor) * W + x / kFactor;
    out[i] = in[src];
  }
}
