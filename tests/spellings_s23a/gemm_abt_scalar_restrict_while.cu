// C = A * B^T (A [M, K], B [N, K], both row-major), __restrict__ pointers; each block stages
// its 16 rows of A and 16 rows of B along k (both tiles row-major in k), the product reads
// Bs transposed; the k loop a while over a running offset
#define TS 16
extern "C" __global__ void k(float* __restrict__ C, const float* __restrict__ A,
                             const float* __restrict__ B, int M, int N, int K) {
  __shared__ float As[TS][TS];
  __shared__ float Bs[TS][TS];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TS + ty;
  const int col = blockIdx.x * TS + tx;
  const int brow = blockIdx.x * TS + ty;
  float acc = 0.0f;
  int k0 = 0;
  while (k0 < K) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (brow < N && k0 + tx < K) ? B[(size_t)brow * K + k0 + tx] : 0.0f;
    __syncthreads();
    for (int q = 0; q < TS; ++q) acc += As[ty][q] * Bs[tx][q];
    __syncthreads();
    k0 += TS;
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
