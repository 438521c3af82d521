// dst [h, w] = src [h, w] filtered down each column with a 13-tap filter (radius 6) whose
// taps live in constant memory: dst[y][x] = sum over t in [-6, 6] of taps[t + 6] *
// src[y + t][x]. Rows past the top or bottom edge are mirrored without repeating the edge
// row (row -1 reads row 1, row h reads row h - 2), so h must be at least 7.
// One output per thread: a 1-D block of 256 threads along a row, one block row per image row.
// Launch: grid = ((w + 255) / 256, h), block = 256.
#define RAD 6

__constant__ float taps[2 * RAD + 1];

__device__ int mirror_row(int y, int h) {
  if (y < 0) return -y;
  if (y >= h) return 2 * h - 2 - y;
  return y;
}

extern "C" __global__ void colfilter13(float* dst, const float* src, int h, int w) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  if (x >= w) return;
  float s = 0.0f;
  int t = -RAD;
  while (t <= RAD) {
    s += taps[t + RAD] * src[mirror_row(y + t, h) * w + x];
    ++t;
  }
  dst[y * w + x] = s;
}
