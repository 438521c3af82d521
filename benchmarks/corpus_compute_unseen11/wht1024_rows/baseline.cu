// Orthonormal Walsh-Hadamard transform of every row of 1024 floats: y[r] = H x[r] / 32,
// H the 1024 x 1024 Sylvester-Hadamard matrix (natural order). One block of 512 threads per
// row stages it in shared memory; each of the ten butterfly stages pairs the elements h
// apart, one pair per thread, h doubling in a while loop.
// Launch: grid = rows, block = 512.

constexpr int ROW = 1024;
constexpr int HALF_ROW = ROW / 2;

extern "C" __global__ void wht1024_rows(float* __restrict__ y, const float* __restrict__ x,
                                        int rows) {
  __shared__ float buf[ROW];
  if (blockIdx.x >= rows) return;
  const float* src = x + (size_t)blockIdx.x * ROW;
  float* dst = y + (size_t)blockIdx.x * ROW;
  const int t = threadIdx.x;
  buf[t] = src[t];
  buf[t + HALF_ROW] = src[t + HALF_ROW];
  __syncthreads();
  int h = 1;
  while (h < ROW) {
    const int lo = (t / h) * 2 * h + t % h;  // the pair's element whose bit h is clear
    const float a = buf[lo];
    const float b = buf[lo + h];
    buf[lo] = a + b;
    buf[lo + h] = a - b;
    __syncthreads();
    h *= 2;
  }
  const float scale = 1.0f / 32.0f;  // 1 / sqrt(1024): the transform keeps lengths
  dst[t] = buf[t] * scale;
  dst[t + HALF_ROW] = buf[t + HALF_ROW] * scale;
}
