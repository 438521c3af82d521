// C[b] = A[b] * B[b] with leading dimensions; the batch on blockIdx.z, the elements through
// function-like macros over the batch's base pointers (#define A_(y, x) a[(y) * lda + (x)])
#define TILE 16
#define A_(y, x) a[(y) * lda + (x)]
#define B_(y, x) b[(y) * ldb + (x)]
#define C_(y, x) c[(y) * ldc + (x)]

extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K,
                             int lda, int ldb, int ldc) {
  __shared__ float ta[TILE][TILE + 1];
  __shared__ float tb[TILE][TILE + 1];
  const float* a = A + (size_t)blockIdx.z * M * lda;
  const float* b = B + (size_t)blockIdx.z * K * ldb;
  float* c = C + (size_t)blockIdx.z * M * ldc;
  const int i = blockIdx.y * TILE + threadIdx.y;
  const int j = blockIdx.x * TILE + threadIdx.x;
  float s = 0.0f;
  for (int p = 0; p < K; p += TILE) {
    ta[threadIdx.y][threadIdx.x] = (i < M && p + threadIdx.x < K) ? A_(i, p + threadIdx.x) : 0.0f;
    tb[threadIdx.y][threadIdx.x] = (p + threadIdx.y < K && j < N) ? B_(p + threadIdx.y, j) : 0.0f;
    __syncthreads();
    for (int q = 0; q < TILE; ++q) s += ta[threadIdx.y][q] * tb[q][threadIdx.x];
    __syncthreads();
  }
  if (i < M && j < N) C_(i, j) = s;
}
