// S[b][i][j] = scale * <Q[b][i], K[b][j]> for half Q, K [BH, L, D], float S [BH, L, L].
// Expert parameterization (hand-written): a block of (BN / TN) x (BM / TM) threads owns a
// BM x BN tile of one batch-head's scores (blockIdx.z); each thread keeps a TM x TN register
// tile of sums (rows ty + r * (BM / TM), columns tx + s * (BN / TN): neighbouring threads
// read neighbouring shared words and write neighbouring scores). Each step stages a BK-deep
// slice of Q and of K transposed (qs[k][i], ks[k][j]) in shared memory as floats, rows
// padded by PAD, zeros past D and L; consecutive threads load consecutive d (coalesced).
// Per k a thread reads TM + TN floats for TM * TN multiply-adds; every sum adds its
// products in d order, as the kernel as written does.
// Launch: grid = (ceil(L / BN), ceil(L / BM), BH), block = (BN / TN, BM / TM).
// Defaults: the kernel as written (16 x 16 tile, slices of 16, one score per thread).
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

extern "C" __global__ void __launch_bounds__(NTHREADS)
qk_scores_f16(float* __restrict__ S, const __half* __restrict__ Q,
              const __half* __restrict__ K, int L, int D, float scale) {
  __shared__ float qs[BK][BM + PAD];
  __shared__ float ks[BK][BN + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * THREADS_X + tx;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const __half* qb = Q + (size_t)blockIdx.z * L * D;
  const __half* kb = K + (size_t)blockIdx.z * L * D;
  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int s = 0; s < TN; ++s) acc[r][s] = 0.0f;

  for (int k0 = 0; k0 < D; k0 += BK) {
    for (int e = tid; e < BM * BK; e += NTHREADS) {
      const int i = e / BK, k = e % BK;
      qs[k][i] = (row0 + i < L && k0 + k < D)
                     ? __half2float(qb[(size_t)(row0 + i) * D + k0 + k]) : 0.0f;
    }
    for (int e = tid; e < BN * BK; e += NTHREADS) {
      const int j = e / BK, k = e % BK;
      ks[k][j] = (col0 + j < L && k0 + k < D)
                     ? __half2float(kb[(size_t)(col0 + j) * D + k0 + k]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float qv[TM], kv[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) qv[r] = qs[k][ty + r * THREADS_Y];
#pragma unroll
      for (int s = 0; s < TN; ++s) kv[s] = ks[k][tx + s * THREADS_X];
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int s = 0; s < TN; ++s) acc[r][s] += qv[r] * kv[s];
    }
    __syncthreads();
  }
  float* sb = S + (size_t)blockIdx.z * L * L;
#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const int i = row0 + ty + r * THREADS_Y;
    if (i >= L) continue;
#pragma unroll
    for (int s = 0; s < TN; ++s) {
      const int j = col0 + tx + s * THREADS_X;
      if (j < L) sb[(size_t)i * L + j] = scale * acc[r][s];
    }
  }
}
