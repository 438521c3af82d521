// C [M, N] = A [M, K] * B [K, N], row-major; every index through a one-line __forceinline__
// helper, the tile a macro
#define TILE 16

__device__ __forceinline__ int idx(int r, int c, int ld) { return r * ld + c; }

extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int t = 0; t < K; t += TILE) {
    As[ty][tx] = (row < M && t + tx < K) ? A[idx(row, t + tx, K)] : 0.0f;
    Bs[ty][tx] = (t + ty < K && col < N) ? B[idx(t + ty, col, N)] : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < TILE; ++kk) acc += As[ty][kk] * Bs[kk][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[idx(row, col, N)] = acc;
}
