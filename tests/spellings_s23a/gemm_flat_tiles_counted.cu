// C = A * B, row-major; a 2-D block, the tiles 1-D arrays indexed ty * TILE + tx, the tile
// loop counting tiles (t < ceil(K / TILE)) and each load through a __device__
// __forceinline__ helper returning the element or zero (__ldg)
#define TILE 16
__device__ __forceinline__ float at_or_zero(const float* p, int r, int c, int rows, int cols,
                                            int ld) {
  return (r < rows && c < cols) ? __ldg(p + r * ld + c) : 0.0f;
}

extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float As[TILE * TILE];
  __shared__ float Bs[TILE * TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  const int tiles = (K + TILE - 1) / TILE;
  float acc = 0.0f;
  for (int t = 0; t < tiles; ++t) {
    As[ty * TILE + tx] = at_or_zero(A, row, t * TILE + tx, M, K, K);
    Bs[ty * TILE + tx] = at_or_zero(B, t * TILE + ty, col, K, N, N);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < TILE; ++i) acc += As[ty * TILE + i] * Bs[i * TILE + tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
