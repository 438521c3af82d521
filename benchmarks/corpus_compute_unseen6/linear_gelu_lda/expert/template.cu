// Y = gelu_tanh(X W + bias), X [M, K] with row stride ldx, W [K, N], fp32. Expert
// parameterization (hand-written): a block of (BN / TN) x (BM / TM) threads owns a BM x BN
// tile of Y; each thread keeps a TM x TN register tile of accumulators (rows
// ty + r * (BM / TM), columns tx + s * (BN / TN): neighbouring threads read neighbouring
// shared words). Each step stages a BM x BK slice of X and a BK x BN slice of W in shared
// memory (rows padded by PAD floats, zeros past the edges) with all threads cooperating;
// per k a thread reads TM values of X and TN of W and does TM * TN multiply-adds. The bias
// and gelu are applied to the registers before the store.
// Launch: grid = (ceil(N / BN), ceil(M / BM)), block = (BN / TN, BM / TM).
// Defaults: the kernel as written (16 x 32 tile, depth 16, one output per thread).
#ifndef BM
#define BM 16
#endif
#ifndef BN
#define BN 32
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

__device__ __forceinline__ float gelu_tanh(float v) {
  const float inner = 0.7978845608f * (v + 0.044715f * v * v * v);
  return 0.5f * v * (1.0f + tanhf(inner));
}

extern "C" __global__ void __launch_bounds__(NTHREADS, 1)
linear_gelu_lda(float* __restrict__ Y, const float* __restrict__ X,
                const float* __restrict__ W, const float* __restrict__ bias, int M, int N,
                int K, int ldx) {
  __shared__ float xs[BK][BM + PAD];  // xs[k][i]: X's slice transposed (a row of i per k)
  __shared__ float ws[BK][BN + PAD];  // ws[k][j]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * THREADS_X + tx;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int s = 0; s < TN; ++s) acc[r][s] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = tid; e < BM * BK; e += NTHREADS) {
      const int i = e / BK, kk = e % BK;  // consecutive threads: consecutive k of one row
      xs[kk][i] = (row0 + i < M && k0 + kk < K) ? X[(size_t)(row0 + i) * ldx + k0 + kk] : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += NTHREADS) {
      const int kk = e / BN, j = e % BN;
      ws[kk][j] = (k0 + kk < K && col0 + j < N) ? W[(size_t)(k0 + kk) * N + col0 + j] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float xv[TM], wv[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) xv[r] = xs[kk][ty + r * THREADS_Y];
#pragma unroll
      for (int s = 0; s < TN; ++s) wv[s] = ws[kk][tx + s * THREADS_X];
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int s = 0; s < TN; ++s) acc[r][s] += xv[r] * wv[s];
    }
    __syncthreads();
  }
#pragma unroll
  for (int s = 0; s < TN; ++s) {
    const int j = col0 + tx + s * THREADS_X;
    if (j >= N) continue;
    const float b = bias[j];
#pragma unroll
    for (int r = 0; r < TM; ++r) {
      const int i = row0 + ty + r * THREADS_Y;
      if (i < M) Y[(size_t)i * N + j] = gelu_tanh(acc[r][s] + b);
    }
  }
}
