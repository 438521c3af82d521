// Sobel gradient magnitude and direction with clamp-to-edge borders.
// img, mag, dir: h x w, row-major. Each 16 x 16 block stages its 18 x 18 neighbourhood in
// shared memory first, one element a thread at a time over the flattened apron.

constexpr int kBlock = 16;
constexpr int kApron = kBlock + 2;

__device__ __forceinline__ int clamp_to(int v, int hi) {
  return min(max(v, 0), hi);
}

extern "C" __global__ void sobel_magdir_tile(float* mag, float* dir, const float* img, int w,
                                             int h) {
  __shared__ float s[kApron][kApron];
  const int x0 = blockIdx.x * kBlock;
  const int y0 = blockIdx.y * kBlock;
  const int x = x0 + threadIdx.x;
  const int y = y0 + threadIdx.y;

  for (int e = threadIdx.y * kBlock + threadIdx.x; e < kApron * kApron; e += kBlock * kBlock) {
    const int j = e / kApron, i = e % kApron;
    const int sx = clamp_to(x0 + i - 1, w - 1);
    const int sy = clamp_to(y0 + j - 1, h - 1);
    s[j][i] = img[sy * w + sx];
  }
  __syncthreads();

  if (x < w && y < h) {
    const int c = threadIdx.x + 1;
    const int r = threadIdx.y + 1;
    const float gx = (s[r - 1][c + 1] + 2.0f * s[r][c + 1] + s[r + 1][c + 1]) -
                     (s[r - 1][c - 1] + 2.0f * s[r][c - 1] + s[r + 1][c - 1]);
    const float gy = (s[r + 1][c - 1] + 2.0f * s[r + 1][c] + s[r + 1][c + 1]) -
                     (s[r - 1][c - 1] + 2.0f * s[r - 1][c] + s[r - 1][c + 1]);
    const int o = y * w + x;
    mag[o] = sqrtf(gx * gx + gy * gy);
    dir[o] = atan2f(gy, gx);
  }
}
