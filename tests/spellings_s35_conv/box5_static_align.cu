// The aligned 5 x 5 box filter respelled: a static 2-D shared patch declared 16-byte
// aligned (`__shared__ __align__(16) float patch[..][..]`), constexpr sizes, the clamps
// through a helper, the bounds check as an `if` around the work.
constexpr int kR = 2;
constexpr int kB = 16;

__device__ __forceinline__ int clampi(int v, int hi) { return min(max(v, 0), hi); }

extern "C" __global__ void box_blur(float* dst, const float* src, int height, int width) {
  __shared__ __align__(16) float patch[kB + 2 * kR][kB + 2 * kR];
  const int gx = blockIdx.x * kB + threadIdx.x;
  const int gy = blockIdx.y * kB + threadIdx.y;
  for (int py = threadIdx.y; py < kB + 2 * kR; py += kB)
    for (int px = threadIdx.x; px < kB + 2 * kR; px += kB)
      patch[py][px] = src[clampi((int)(blockIdx.y * kB) + py - kR, height - 1) * width +
                          clampi((int)(blockIdx.x * kB) + px - kR, width - 1)];
  __syncthreads();
  if (gx < width && gy < height) {
    float s = 0.0f;
    for (int dy = 0; dy <= 2 * kR; ++dy)
      for (int dx = 0; dx <= 2 * kR; ++dx) s += patch[threadIdx.y + dy][threadIdx.x + dx];
    dst[gy * width + gx] = s * (1.0f / 25.0f);
  }
}
