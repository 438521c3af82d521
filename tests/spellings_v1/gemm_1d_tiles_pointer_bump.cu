// C = A * B, row-major; one 1-D block of TILE * TILE threads, the thread's row and column
// from threadIdx.x / and % TILE, the tiles 1-D arrays indexed by hand and the matrices
// walked by bumping their pointers (A += TILE, B += TILE * N) after each stage
#define TILE 16
extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float As[TILE * TILE];
  __shared__ float Bs[TILE * TILE];
  const int tr = threadIdx.x / TILE;
  const int tc = threadIdx.x % TILE;
  const int row = blockIdx.y * TILE + tr;
  const int col = blockIdx.x * TILE + tc;
  A += blockIdx.y * TILE * K;
  B += blockIdx.x * TILE;
  float acc = 0.0f;
  for (int kk = 0; kk < K; kk += TILE) {
    As[tr * TILE + tc] = (row < M && kk + tc < K) ? A[tr * K + tc] : 0.0f;
    Bs[tr * TILE + tc] = (kk + tr < K && col < N) ? B[tr * N + tc] : 0.0f;
    __syncthreads();
    A += TILE;
    B += TILE * N;
    for (int i = 0; i < TILE; ++i) acc += As[tr * TILE + i] * Bs[i * TILE + tc];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
