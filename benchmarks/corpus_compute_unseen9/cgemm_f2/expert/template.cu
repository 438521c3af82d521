// C = A B for complex float32 A [M, K], B [K, N], interleaved (re, im) pairs, row-major.
// Expert parameterization (hand-written): a block of (BN / TN) x (BM / TM) threads owns a
// BM x BN tile of C; each thread keeps a TM x TN register tile of complex sums (rows
// ty + r * (BM / TM), columns tx + s * (BN / TN): neighbouring threads read neighbouring
// shared pairs and write neighbouring columns). Each step stages a BK-deep slice of A
// transposed (as[k][i]) and of B (bs[k][j]) in shared memory as float2 pairs (one 8-byte
// load an element), rows padded by PAD pairs, zeros past K, M and N. Per k a thread reads
// TM + TN pairs for 4 * TM * TN multiply-adds; every sum adds its terms in k order, real
// part re*re - im*im and imaginary part re*im + im*re, as the kernel as written does.
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
cgemm_f2(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B,
         int M, int N, int K) {
  __shared__ float2 as[BK][BM + PAD];
  __shared__ float2 bs[BK][BN + PAD];
  const float2* A2 = reinterpret_cast<const float2*>(A);
  const float2* B2 = reinterpret_cast<const float2*>(B);
  float2* C2 = reinterpret_cast<float2*>(C);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * THREADS_X + tx;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc_re[TM][TN], acc_im[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int s = 0; s < TN; ++s) acc_re[r][s] = acc_im[r][s] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    // A: consecutive threads copy consecutive k of one row (coalesced), stored transposed
    for (int e = tid; e < BM * BK; e += NTHREADS) {
      const int i = e / BK, k = e % BK;
      as[k][i] = (row0 + i < M && k0 + k < K)
                     ? __ldg(A2 + (size_t)(row0 + i) * K + k0 + k) : make_float2(0.0f, 0.0f);
    }
    // B: consecutive threads copy consecutive columns of one k row (coalesced)
    for (int e = tid; e < BK * BN; e += NTHREADS) {
      const int k = e / BN, j = e % BN;
      bs[k][j] = (k0 + k < K && col0 + j < N)
                     ? __ldg(B2 + (size_t)(k0 + k) * N + col0 + j) : make_float2(0.0f, 0.0f);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float2 av[TM], bv[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) av[r] = as[k][ty + r * THREADS_Y];
#pragma unroll
      for (int s = 0; s < TN; ++s) bv[s] = bs[k][tx + s * THREADS_X];
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int s = 0; s < TN; ++s) {
          acc_re[r][s] += av[r].x * bv[s].x - av[r].y * bv[s].y;
          acc_im[r][s] += av[r].x * bv[s].y + av[r].y * bv[s].x;
        }
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const int i = row0 + ty + r * THREADS_Y;
    if (i >= M) continue;
#pragma unroll
    for (int s = 0; s < TN; ++s) {
      const int j = col0 + tx + s * THREADS_X;
      if (j < N) C2[(size_t)i * N + j] = make_float2(acc_re[r][s], acc_im[r][s]);
    }
  }
}
