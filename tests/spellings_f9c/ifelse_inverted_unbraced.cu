// C = A * B, row-major; each tile element zero-filled first by an unbraced if / else whose
// condition asks whether the element lies outside the matrix
#define TILE 16

extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int tx = threadIdx.x;
  int ty = threadIdx.y;
  int r = blockIdx.y * TILE + ty;
  int c = blockIdx.x * TILE + tx;
  float s = 0.0f;
  for (int t = 0; t < K; t += TILE) {
    if (r >= M || t + tx >= K) As[ty][tx] = 0.0f;
    else As[ty][tx] = A[r * K + t + tx];
    if (t + ty >= K || c >= N)
      Bs[ty][tx] = 0.0f;
    else
      Bs[ty][tx] = B[(t + ty) * N + c];
    __syncthreads();
    for (int q = 0; q < TILE; ++q) s += As[ty][q] * Bs[q][tx];
    __syncthreads();
  }
  if (r < M && c < N) C[r * N + c] = s;
}
