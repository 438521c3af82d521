// y[r][c] = x[r][0] + ... + x[r][c]: one block a row, 128-element chunks scanned in shared
// memory (Hillis-Steele) plus a running total; the pointers are bumped a chunk at a time.
// Launch: grid = rows, block = 128.
constexpr int kChunk = 128;

extern "C" __global__ void v2_rowscan_bumped(float* y, const float* x, int rows, int cols) {
  __shared__ float tile[kChunk];
  const unsigned t = threadIdx.x;
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* yr = y + (size_t)blockIdx.x * cols;
  float run = 0.0f;
  for (int left = cols; left > 0; left -= kChunk) {
    tile[t] = (int)t < left ? xr[t] : 0.0f;
    __syncthreads();
    for (int d = 1; d < kChunk; d <<= 1) {
      const float add = t >= d ? tile[t - d] : 0.0f;
      __syncthreads();
      tile[t] += add;
      __syncthreads();
    }
    if ((int)t < left) yr[t] = run + tile[t];
    run += tile[kChunk - 1];
    __syncthreads();
    xr += kChunk;
    yr += kChunk;
  }
}
