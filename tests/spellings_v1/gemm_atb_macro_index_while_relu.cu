// C = relu(A^T * B + bias), A stored [K][M] (a column of the product is a row of A), B
// [K][N]; the offsets through a function-like macro, the count of k-tiles precomputed and
// walked by a while loop, the inner product unrolled by 4, the bias and ReLU in the store
#define IDX(r, c, ld) ((r) * (ld) + (c))
#define TS 16
extern "C" __global__ void k(float* C, const float* A, const float* B, const float* bias,
                             int M, int N, int K) {
  __shared__ float at[TS][TS];  // at[k][m]
  __shared__ float bt[TS][TS];  // bt[k][n]
  const int m = blockIdx.y * TS + threadIdx.y;
  const int n = blockIdx.x * TS + threadIdx.x;
  const int am = blockIdx.y * TS + threadIdx.x;  // the column of A this thread stages
  const int tiles = (K + TS - 1) / TS;
  float acc = 0.f;
  int kt = 0;
  while (kt < tiles) {
    const int k0 = kt * TS;
    at[threadIdx.y][threadIdx.x] = (k0 + threadIdx.y < K && am < M) ? A[IDX(k0 + threadIdx.y, am, M)] : 0.f;
    bt[threadIdx.y][threadIdx.x] = (k0 + threadIdx.y < K && n < N) ? B[IDX(k0 + threadIdx.y, n, N)] : 0.f;
    __syncthreads();
#pragma unroll 4
    for (int q = 0; q < TS; ++q) acc += at[q][threadIdx.y] * bt[q][threadIdx.x];
    __syncthreads();
    kt++;
  }
  if (m < M && n < N) C[IDX(m, n, N)] = fmaxf(acc + bias[n], 0.f);
}
