// C = A @ B + bias for int32 A [M, K], B [K, N] holding int8-range codes (exact sums).
// Expert parameterization (hand-written): a block of (BN / TN) x (BM / TM) threads owns a
// BM x BN tile of C; each thread keeps a TM x TN register tile of sums (rows ty + r * (BM /
// TM), columns tx + s * (BN / TN): neighbouring threads read neighbouring shared words and
// write neighbouring columns). Each step stages a BK-deep slice of A transposed (as[k][i])
// and of B (bs[k][j]) in shared memory, rows padded by PAD words, zeros past K, M and N
// (a zero code adds nothing). Per k a thread reads TM + TN words for TM * TN products.
// Launch: grid = (ceil(N / BN), ceil(M / BM)), block = (BN / TN, BM / TM).
// Defaults: the kernel as written (16 x 16 tile, slices of 16, one output per thread).
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

extern "C" __global__ void __launch_bounds__(NTHREADS)
imatmul_bias(int* __restrict__ C, const int* __restrict__ A, const int* __restrict__ B,
             const int* __restrict__ bias, int M, int N, int K) {
  __shared__ int as[BK][BM + PAD];
  __shared__ int bs[BK][BN + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * THREADS_X + tx;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  int acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int s = 0; s < TN; ++s) acc[r][s] = 0;

  for (int k0 = 0; k0 < K; k0 += BK) {
    // A: consecutive threads copy consecutive k of one row (coalesced), stored transposed
    for (int e = tid; e < BM * BK; e += NTHREADS) {
      const int i = e / BK, k = e % BK;
      as[k][i] = (row0 + i < M && k0 + k < K) ? __ldg(A + (size_t)(row0 + i) * K + k0 + k) : 0;
    }
    // B: consecutive threads copy consecutive columns of one k row (coalesced)
    for (int e = tid; e < BK * BN; e += NTHREADS) {
      const int k = e / BN, j = e % BN;
      bs[k][j] = (k0 + k < K && col0 + j < N) ? __ldg(B + (size_t)(k0 + k) * N + col0 + j) : 0;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      int av[TM], bv[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) av[r] = as[k][ty + r * THREADS_Y];
#pragma unroll
      for (int s = 0; s < TN; ++s) bv[s] = bs[k][tx + s * THREADS_X];
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int s = 0; s < TN; ++s) acc[r][s] += av[r] * bv[s];
    }
    __syncthreads();
  }
#pragma unroll
  for (int s = 0; s < TN; ++s) {
    const int j = col0 + tx + s * THREADS_X;
    if (j >= N) continue;
    const int b = __ldg(bias + j);
#pragma unroll
    for (int r = 0; r < TM; ++r) {
      const int i = row0 + ty + r * THREADS_Y;
      if (i < M) C[(size_t)i * N + j] = acc[r][s] + b;
    }
  }
}
