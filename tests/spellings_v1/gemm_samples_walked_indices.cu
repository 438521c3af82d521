// C = A * B, row-major, for M, N, K multiples of the tile, as the CUDA samples' matrixMul
// walks it: the first and last index of A's block row, the steps of A and B, and the loop
// over tiles stepping both indices in its header (no bounds test anywhere)
#define BLOCK 16
extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float sA[BLOCK][BLOCK], sB[BLOCK][BLOCK];
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  int aBegin = K * BLOCK * by, aEnd = aBegin + K - 1, aStep = BLOCK;
  int bBegin = BLOCK * bx, bStep = BLOCK * N;
  float Csub = 0;
  for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
    sA[ty][tx] = A[a + K * ty + tx];
    sB[ty][tx] = B[b + N * ty + tx];
    __syncthreads();
    for (int q = 0; q < BLOCK; ++q) Csub += sA[ty][q] * sB[q][tx];
    __syncthreads();
  }
  C[(by * BLOCK + ty) * N + bx * BLOCK + tx] = Csub;
}
