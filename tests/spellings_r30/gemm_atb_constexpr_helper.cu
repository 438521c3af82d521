// C = A^T * B (A [k, m], B [k, n], C [m, n], row-major), another hand: constexpr tile,
// a guarded-load helper, a for loop over the k slices, restrict pointers.
constexpr int kTile = 16;

__device__ __forceinline__ float load_or_zero(const float* __restrict__ p, int t, int j, int ld,
                                              int rows, int cols) {
  return (t < rows && j < cols) ? p[(size_t)t * ld + j] : 0.0f;
}

extern "C" __global__ void gemm_atb_tiled(float* __restrict__ c, const float* __restrict__ a,
                                          const float* __restrict__ b, int m, int n, int k) {
  __shared__ float sa[kTile][kTile + 1];
  __shared__ float sb[kTile][kTile + 1];
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  const int arow = blockIdx.y * kTile + threadIdx.x;
  float sum = 0.0f;
  for (int t0 = 0; t0 < k; t0 += kTile) {
    sa[threadIdx.y][threadIdx.x] = load_or_zero(a, t0 + (int)threadIdx.y, arow, m, k, m);
    sb[threadIdx.y][threadIdx.x] = load_or_zero(b, t0 + (int)threadIdx.y, col, n, k, n);
    __syncthreads();
    for (int s = 0; s < kTile; s++) sum += sa[s][threadIdx.y] * sb[s][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[(size_t)row * n + col] = sum;
}
