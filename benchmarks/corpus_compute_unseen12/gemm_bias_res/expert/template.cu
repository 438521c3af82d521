// D = A B + bias + R (A [m, k], B [k, n], bias [n], R [m, n], row-major floats).
// Expert parameterization (hand-written): a block of (BN / TN) x (BM / TM) threads owns a
// BM x BN tile of D; each thread keeps a TM x TN register tile (rows ty + r * (BM / TM),
// columns tx + s * (BN / TN)). Each step stages a BK-deep slice of A transposed
// (as[q][row]) and of B (bs[q][col]), rows padded by PAD. Every sum adds its products in k
// order, then the bias and the residual, as the kernel as written does.
// Launch: grid = (ceil(n / BN), ceil(m / BM)), block = (BN / TN, BM / TM).
// Defaults: the kernel as written (16 x 16 tile, slices of 16, one element per thread).

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
gemm_bias_res(float* __restrict__ D, const float* __restrict__ A, const float* __restrict__ B,
              const float* __restrict__ bias, const float* __restrict__ R, int m, int n,
              int k) {
  __shared__ float as[BK][BM + PAD];
  __shared__ float bs[BK][BN + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * THREADS_X + tx;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int s = 0; s < TN; ++s) acc[r][s] = 0.0f;

  for (int k0 = 0; k0 < k; k0 += BK) {
    for (int e = tid; e < BM * BK; e += NTHREADS) {
      const int row = e / BK, q = e % BK;
      as[q][row] = (row0 + row < m && k0 + q < k) ? A[(size_t)(row0 + row) * k + k0 + q]
                                                  : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += NTHREADS) {
      const int q = e / BN, c = e % BN;
      bs[q][c] = (k0 + q < k && col0 + c < n) ? B[(size_t)(k0 + q) * n + col0 + c] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < BK; ++q) {
      float a[TM], b[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) a[r] = as[q][ty + r * THREADS_Y];
#pragma unroll
      for (int s = 0; s < TN; ++s) b[s] = bs[q][tx + s * THREADS_X];
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int s = 0; s < TN; ++s) acc[r][s] += a[r] * b[s];
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const int i = row0 + ty + r * THREADS_Y;
    if (i >= m) continue;
#pragma unroll
    for (int s = 0; s < TN; ++s) {
      const int j = col0 + tx + s * THREADS_X;
      if (j < n) {
        const size_t at = (size_t)i * n + j;
        D[at] = acc[r][s] + bias[j] + R[at];
      }
    }
  }
}
