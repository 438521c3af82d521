// welford_rows_warp, another hand: macros for the warp count and mask, Chan's merge as a
// __device__ helper taking the running statistics by reference, a while over the lane's
// elements inside an if.
#define WARPS 8
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ void chan_merge(float& n, float& mean, float& m2, float nb,
                                           float meanb, float m2b) {
  const float nt = n + nb;
  if (nt == 0.0f) return;
  const float d = meanb - mean;
  mean += d * (nb / nt);
  m2 += m2b + d * d * (n * nb / nt);
  n = nt;
}

extern "C" __global__ void welford_rows_warp(float* __restrict__ mean_out,
                                             float* __restrict__ var_out,
                                             const float* __restrict__ x, int rows, int cols) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
  const bool live = row < rows;
  const float* p = x + (size_t)(live ? row : 0) * cols;
  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
  if (live) {
    int j = lane;
    while (j < cols) {
      const float v = p[j];
      n += 1.0f;
      const float d = v - mean;
      mean += d / n;
      m2 += d * (v - mean);
      j += 32;
    }
  }
  for (int off = 16; off >= 1; off >>= 1) {
    const float nb = __shfl_down_sync(FULL_MASK, n, off);
    const float meanb = __shfl_down_sync(FULL_MASK, mean, off);
    const float m2b = __shfl_down_sync(FULL_MASK, m2, off);
    chan_merge(n, mean, m2, nb, meanb, m2b);
  }
  if (live && lane == 0) {
    mean_out[row] = mean;
    var_out[row] = m2 / (float)cols;
  }
}
