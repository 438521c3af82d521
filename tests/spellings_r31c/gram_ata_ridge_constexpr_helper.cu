// C = A^T A / K + 0.01 I (A: K x N row-major, C: N x N), another hand: constexpr tile and
// ridge, a guarded-load helper, a tile loop over k offsets, an early return before the store.
constexpr int kTile = 16;
constexpr float kRidge = 0.01f;

__device__ __forceinline__ float load_or_zero(const float* A, int K, int N, int r, int c) {
  return (r < K && c < N) ? A[r * N + c] : 0.0f;
}

extern "C" __global__ void gram_ata_ridge(float* C, const float* A, int K, int N) {
  __shared__ float lhs[kTile][kTile];
  __shared__ float rhs[kTile][kTile];
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int row = blockIdx.y * kTile + ty;
  const int col = blockIdx.x * kTile + tx;
  float sum = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    lhs[ty][tx] = load_or_zero(A, K, N, k0 + ty, blockIdx.y * kTile + tx);
    rhs[ty][tx] = load_or_zero(A, K, N, k0 + ty, blockIdx.x * kTile + tx);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) sum += lhs[k][ty] * rhs[k][tx];
    __syncthreads();
  }
  if (row >= N || col >= N) return;
  const float mean = sum / K;
  C[row * N + col] = row == col ? mean + kRidge : mean;
}
