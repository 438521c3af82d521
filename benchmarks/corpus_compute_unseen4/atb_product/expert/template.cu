// C = A^T B, A [k, m] and B [k, n] row-major. Expert parameterization (hand-written): a
// block owns a BM x BN tile of C with (BM / TM) * (BN / TN) threads in one dimension, each
// computing TM x TN outputs held in registers (rows i = row0 + r * (BM / TM), columns
// j = col0 + s * (BN / TN): a warp reads consecutive shared-memory words). Each step stages
// a BK x BM slice of A (A's own layout: coalesced) and a BK x BN slice of B in shared
// memory, rows padded by PAD floats, zero-filled past the edges; per step of the inner loop
// a thread reads TM values of A and TN of B into registers and does TM * TN multiply-adds.
// Launch: grid = (ceil(n / BN), ceil(m / BM)), block = (BM / TM) * (BN / TN).
// Defaults: the kernel as written (16 x 16 tiles, one output per thread, 256 threads).
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
#define THREADS_M (BM / TM)
#define THREADS_N (BN / TN)
#define NTHREADS (THREADS_M * THREADS_N)

extern "C" __global__ void __launch_bounds__(NTHREADS, 1)
atb_product(float* __restrict__ c, const float* __restrict__ a, const float* __restrict__ b,
            int m, int n, int k) {
  __shared__ float a_tile[BK][BM + PAD];  // a_tile[p][i]
  __shared__ float b_tile[BK][BN + PAD];  // b_tile[p][j]
  const int tid = threadIdx.x;
  const int tn = tid % THREADS_N;
  const int tm = tid / THREADS_N;
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int s = 0; s < TN; ++s) acc[r][s] = 0.0f;

  for (int p0 = 0; p0 < k; p0 += BK) {
    for (int e = tid; e < BK * BM; e += NTHREADS) {
      const int p = e / BM, i = e % BM;
      a_tile[p][i] = (p0 + p < k && row0 + i < m) ? a[(size_t)(p0 + p) * m + row0 + i] : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += NTHREADS) {
      const int p = e / BN, j = e % BN;
      b_tile[p][j] = (p0 + p < k && col0 + j < n) ? b[(size_t)(p0 + p) * n + col0 + j] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < BK; ++q) {
      float av[TM], bv[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) av[r] = a_tile[q][tm + r * THREADS_M];
#pragma unroll
      for (int s = 0; s < TN; ++s) bv[s] = b_tile[q][tn + s * THREADS_N];
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int s = 0; s < TN; ++s) acc[r][s] += av[r] * bv[s];
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const int i = row0 + tm + r * THREADS_M;
#pragma unroll
    for (int s = 0; s < TN; ++s) {
      const int j = col0 + tn + s * THREADS_N;
      if (i < m && j < n) c[(size_t)i * n + j] = acc[r][s];
    }
  }
}
