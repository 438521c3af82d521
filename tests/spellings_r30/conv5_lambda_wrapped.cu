// conv5_channels, another hand: constexpr sizes, a lambda for the zero-padded read, the
// body wrapped in an if, taps counted from -2.
constexpr int kChannels = 4;
constexpr int kSize = 5;
constexpr int kHalf = kSize / 2;

__constant__ float weights[kChannels * kSize * kSize];

extern "C" __global__ void conv5_channels(float* __restrict__ out, const float* __restrict__ in,
                                          int h, int w) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) {
    auto at = [&](const float* plane, int yy, int xx) -> float {
      return (yy < 0 || yy >= h || xx < 0 || xx >= w) ? 0.0f : plane[yy * w + xx];
    };
    float acc = 0.0f;
    for (int ch = 0; ch < kChannels; ++ch) {
      const float* plane = in + (size_t)ch * h * w;
      for (int dy = -kHalf; dy <= kHalf; ++dy)
        for (int dx = -kHalf; dx <= kHalf; ++dx)
          acc += weights[(ch * kSize + dy + kHalf) * kSize + dx + kHalf] * at(plane, y + dy, x + dx);
    }
    out[y * w + x] = acc;
  }
}
