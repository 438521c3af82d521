// Per-row mean and population variance of a rows x cols matrix by Welford's update: one
// warp a row, eight warps a block; each lane runs Welford over its strided elements, then
// the lanes' (count, mean, M2) are merged down a shuffle tree (Chan's pairwise formula) and
// lane 0 writes the row's mean and M2 / cols.
// Launch: grid = ((rows + 7) / 8), block = (256).

struct RowStats {
  static constexpr int kWarps = 8;
  static constexpr unsigned kFull = 0xffffffffu;
};

extern "C" __global__ void welford_rows_warp(float* mean_out, float* var_out, const float* x,
                                             int rows, int cols) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * RowStats::kWarps + threadIdx.x / 32;
  const bool live = row < rows;
  const float* p = x + (size_t)(live ? row : 0) * cols;
  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
  for (int j = lane; live && j < cols; j += 32) {
    const float v = p[j];
    n += 1.0f;
    const float d = v - mean;
    mean += d / n;
    m2 += d * (v - mean);
  }
  auto merge = [&](float nb, float meanb, float m2b) {
    const float nt = n + nb;
    if (nt == 0.0f) return;
    const float d = meanb - mean;
    mean += d * (nb / nt);
    m2 += m2b + d * d * (n * nb / nt);
    n = nt;
  };
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    const float nb = __shfl_down_sync(RowStats::kFull, n, off);
    const float meanb = __shfl_down_sync(RowStats::kFull, mean, off);
    const float m2b = __shfl_down_sync(RowStats::kFull, m2, off);
    merge(nb, meanb, m2b);
  }
  if (live && lane == 0) {
    mean_out[row] = mean;
    var_out[row] = m2 / (float)cols;
  }
}
