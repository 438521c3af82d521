// 5 x 5 bilateral filter, the edge-preserving smoother of a denoising or tone-mapping
// pass: out(p) = sum_q w(p, q) img(q) / sum_q w(p, q) over the 25 pixels q around p, with
// w = exp(-|p - q|^2 / (2 sigma_s^2) - (img(q) - img(p))^2 / (2 sigma_r^2)), sigma_s = 1.5
// pixels and sigma_r = 0.1 (intensities in [0, 1]). Neighbours past the border are the
// border pixel (clamped coordinates). A float image, row-major H x W.
// Launch: grid = ((W + 31) / 32, (H + 7) / 8), block = (32, 8).
constexpr int RADIUS = 2;
constexpr float INV_2SIGMA_S2 = 1.0f / (2.0f * 1.5f * 1.5f);
constexpr float INV_2SIGMA_R2 = 1.0f / (2.0f * 0.1f * 0.1f);

__device__ float bilateral_pixel(const float* img, int x, int y, int H, int W) {
  const float center = img[y * W + x];
  float num = 0.0f, den = 0.0f;
  for (int dy = -RADIUS; dy <= RADIUS; ++dy) {
    const int yy = min(max(y + dy, 0), H - 1);
    for (int dx = -RADIUS; dx <= RADIUS; ++dx) {
      const int xx = min(max(x + dx, 0), W - 1);
      const float v = img[yy * W + xx];
      const float diff = v - center;
      const float w = expf(-(float)(dx * dx + dy * dy) * INV_2SIGMA_S2 - diff * diff * INV_2SIGMA_R2);
      num += w * v;
      den += w;
    }
  }
  return num / den;
}

extern "C" __global__ void bilateral5(float* out, const float* img, int H, int W) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < W && y < H) out[y * W + x] = bilateral_pixel(img, x, y, H, W);
}
