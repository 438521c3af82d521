// C = A^T A / K + 0.01 I: a C++ hand. A constexpr tile, __restrict__ pointers, the element
// of A read through a helper, the tile loop counting slices, the inner loop unrolled.
constexpr int kTile = 16;

__device__ __forceinline__ float sample(const float* __restrict__ a, int k, int j, int k_count,
                                        int n) {
  return (k < k_count && j < n) ? a[k * n + j] : 0.0f;
}

extern "C" __global__ void gram_ata_ridge(float* __restrict__ C, float* __restrict__ A, int K,
                                          int N) {
  __shared__ float rows[kTile][kTile];
  __shared__ float cols[kTile][kTile];
  const int row0 = blockIdx.y * kTile;
  const int col0 = blockIdx.x * kTile;
  const int row = row0 + threadIdx.y;
  const int col = col0 + threadIdx.x;
  const int slices = (K + kTile - 1) / kTile;
  float dot = 0.0f;
  for (int slice = 0; slice < slices; ++slice) {
    const int k = slice * kTile + threadIdx.y;
    rows[threadIdx.y][threadIdx.x] = sample(A, k, row0 + threadIdx.x, K, N);
    cols[threadIdx.y][threadIdx.x] = sample(A, k, col0 + threadIdx.x, K, N);
    __syncthreads();
#pragma unroll
    for (int q = 0; q < kTile; ++q) dot += rows[q][threadIdx.y] * cols[q][threadIdx.x];
    __syncthreads();
  }
  if (row >= N || col >= N) return;
  const float ridge = row == col ? 0.01f : 0.0f;
  C[row * N + col] = dot / K + ridge;
}
