// C = alpha * A B, A [M, K] and B [K, N] half precision, row-major, float sums and float C.
// Expert parameterization (hand-written): a block owns a BM x BN tile of C with a
// (BN / TN) x (BM / TM) block of threads, each computing TM x TN outputs held in registers
// (rows i = row0 + threadIdx.y + r * (BM / TM), columns j = col0 + threadIdx.x +
// s * (BN / TN): a warp reads consecutive shared-memory words). Each step converts a BM x BK
// slice of A (stored k-major in shared memory, rows padded by PAD floats) and a BK x BN
// slice of B to float, zero-filled past the edges; per step of the inner loop a thread reads
// TM values of A and TN of B into registers and does TM * TN multiply-adds.
// Launch: grid = (ceil(N / BN), ceil(M / BM)), block = (BN / TN, BM / TM).
// Defaults: the kernel as written (16 x 16 tiles, one output per thread, 16 x 16 threads).
#include <cuda_fp16.h>

#ifndef BM
#define BM 16
#endif
#ifndef BN
#define BN 16
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 1
#endif
#ifndef TN
#define TN 1
#endif
#ifndef PAD
#define PAD 0
#endif
#define THREADS_X (BN / TN)
#define THREADS_Y (BM / TM)
#define NTHREADS (THREADS_X * THREADS_Y)

extern "C" __global__ void __launch_bounds__(NTHREADS, 1)
hgemm_scaled(float* __restrict__ C, const __half* __restrict__ A, const __half* __restrict__ B,
             float alpha, int M, int N, int K) {
  __shared__ float sa[BK][BM + PAD];  // sa[p][i] = A[row0 + i][k0 + p]
  __shared__ float sb[BK][BN + PAD];  // sb[p][j] = B[k0 + p][col0 + j]
  const int tid = threadIdx.y * THREADS_X + threadIdx.x;
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int s = 0; s < TN; ++s) acc[r][s] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    // consecutive threads along k: each row of A's slice is read contiguously
    for (int e = tid; e < BM * BK; e += NTHREADS) {
      const int i = e / BK, p = e % BK;
      sa[p][i] = (row0 + i < M && k0 + p < K)
                     ? __half2float(A[(size_t)(row0 + i) * K + k0 + p]) : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += NTHREADS) {
      const int p = e / BN, j = e % BN;
      sb[p][j] = (k0 + p < K && col0 + j < N)
                     ? __half2float(B[(size_t)(k0 + p) * N + col0 + j]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < BK; ++p) {
      float av[TM], bv[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) av[r] = sa[p][threadIdx.y + r * THREADS_Y];
#pragma unroll
      for (int s = 0; s < TN; ++s) bv[s] = sb[p][threadIdx.x + s * THREADS_X];
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int s = 0; s < TN; ++s) acc[r][s] += av[r] * bv[s];
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const int i = row0 + threadIdx.y + r * THREADS_Y;
#pragma unroll
    for (int s = 0; s < TN; ++s) {
      const int j = col0 + threadIdx.x + s * THREADS_X;
      if (i < M && j < N) C[(size_t)i * N + j] = alpha * acc[r][s];
    }
  }
}
