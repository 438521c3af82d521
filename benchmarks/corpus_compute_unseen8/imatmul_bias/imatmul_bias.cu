// Integer matrix product with a per-column bias, the integer path of a quantised linear
// layer: C[i][j] = bias[j] + sum_k A[i][k] * B[k][j] for A [M, K], B [K, N], C [M, N], all
// int32 and row-major (the operands hold int8-range codes, so every sum is exact).
// One output per thread; 16 x 16 tiles of A and B staged in shared memory.
// Launch: grid = ((N + 15) / 16, (M + 15) / 16), block = (16, 16).
constexpr int TILE = 16;

extern "C" __global__ void imatmul_bias(int* C, const int* A, const int* B, const int* bias,
                                        int M, int N, int K) {
  __shared__ int As[TILE][TILE];
  __shared__ int Bs[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  int sum = 0;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    const int ak = k0 + threadIdx.x;
    const int bk = k0 + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[row * K + ak] : 0;
    Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[bk * N + col] : 0;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) sum += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = sum + bias[col];
}
