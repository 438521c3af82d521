// sgemm_nt: C = A * B^T in fp32, every matrix row-major. A is M x K, B is N x K (stored
// transposed: output column n is row n of B), C is M x N. One 1-D block of
// BLOCKSIZE * BLOCKSIZE threads per BLOCKSIZE x BLOCKSIZE tile of C; the block's pointers
// are moved to its first rows of A and B and to its tile of C, then walked along K one
// shared tile at a time.
// Launch: grid = (ceil(N / 32), ceil(M / 32)), block = 32 * 32 (one dimension).
#define BLOCKSIZE 32

extern "C" __global__ void sgemm_nt(const float *A, const float *B, float *C, int M, int N,
                                    int K) {
  const unsigned cRow = blockIdx.y;
  const unsigned cCol = blockIdx.x;
  const unsigned threadRow = threadIdx.x / BLOCKSIZE;
  const unsigned threadCol = threadIdx.x % BLOCKSIZE;

  __shared__ float As[BLOCKSIZE * BLOCKSIZE];
  __shared__ float Bs[BLOCKSIZE * BLOCKSIZE];

  A += cRow * BLOCKSIZE * K;                        // row cRow * BLOCKSIZE of A
  B += cCol * BLOCKSIZE * K;                        // row cCol * BLOCKSIZE of B
  C += cRow * BLOCKSIZE * N + cCol * BLOCKSIZE;     // the block's tile of C

  const int rowsLeft = M - (int)(cRow * BLOCKSIZE);
  const int colsLeft = N - (int)(cCol * BLOCKSIZE);
  float tmp = 0.0f;
  for (int bkIdx = 0; bkIdx < K; bkIdx += BLOCKSIZE) {
    const bool kInside = bkIdx + (int)threadCol < K;
    As[threadRow * BLOCKSIZE + threadCol] =
        ((int)threadRow < rowsLeft && kInside) ? A[threadRow * K + threadCol] : 0.0f;
    Bs[threadRow * BLOCKSIZE + threadCol] =
        ((int)threadRow < colsLeft && kInside) ? B[threadRow * K + threadCol] : 0.0f;
    __syncthreads();
    A += BLOCKSIZE;
    B += BLOCKSIZE;
    for (int dotIdx = 0; dotIdx < BLOCKSIZE; ++dotIdx)
      tmp += As[threadRow * BLOCKSIZE + dotIdx] * Bs[threadCol * BLOCKSIZE + dotIdx];
    __syncthreads();
  }
  if ((int)threadRow < rowsLeft && (int)threadCol < colsLeft) C[threadRow * N + threadCol] = tmp;
}
