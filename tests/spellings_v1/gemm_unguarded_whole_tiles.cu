// C = A * B, row-major, for M, N, K multiples of the tile (no bounds test anywhere, as the
// CUDA samples' matrixMul writes it): whole tiles loaded and stored, the indices spelled
// from bx, by, tx, ty locals
#define BLOCK 16
extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float sA[BLOCK][BLOCK], sB[BLOCK][BLOCK];
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  float Csub = 0;
  for (int t = 0; t < K; t += BLOCK) {
    sA[ty][tx] = A[(by * BLOCK + ty) * K + t + tx];
    sB[ty][tx] = B[(t + ty) * N + bx * BLOCK + tx];
    __syncthreads();
    for (int q = 0; q < BLOCK; ++q) Csub += sA[ty][q] * sB[q][tx];
    __syncthreads();
  }
  C[(by * BLOCK + ty) * N + bx * BLOCK + tx] = Csub;
}
