// welford_rows_warp, another hand: file-scope constexpr, warpSize, an early exit for rows
// past the end taken only after the shuffles (the dead lanes still shuffle zeros), the row
// walked by index from a pointer to its first element, unsigned lane.
constexpr int kWarps = 8;
constexpr unsigned kFull = 0xffffffffu;

extern "C" __global__ void welford_rows_warp(float* mean_out, float* var_out, const float* x,
                                             int rows, int cols) {
  const unsigned lane = threadIdx.x % warpSize;
  const int warp = threadIdx.x / warpSize;
  const int row = blockIdx.x * kWarps + warp;
  const bool live = row < rows;
  const float* p = x + (size_t)(live ? row : 0) * cols;
  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
  if (live) {
    for (unsigned j = lane; j < (unsigned)cols; j += 32u) {
      const float v = p[j];
      n += 1.0f;
      const float d = v - mean;
      mean += d / n;
      m2 += d * (v - mean);
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    const float nb = __shfl_down_sync(kFull, n, off);
    const float meanb = __shfl_down_sync(kFull, mean, off);
    const float m2b = __shfl_down_sync(kFull, m2, off);
    const float nt = n + nb;
    if (nt != 0.0f) {
      const float d = meanb - mean;
      mean += d * (nb / nt);
      m2 += m2b + d * d * (n * nb / nt);
      n = nt;
    }
  }
  if (!live || lane != 0) return;
  mean_out[row] = mean;
  var_out[row] = m2 / (float)cols;
}
