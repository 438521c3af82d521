// P[s] = A[:, K_s] B[K_s, :] for the four k slices (ceil(k / 4) deep), blockIdx.z the slice.
// Expert parameterization (hand-written): a block of (BN / TN) x (BM / TM) threads owns a
// BM x BN tile of its slice; each thread keeps a TM x TN register tile (rows ty + r * (BM /
// TM), columns tx + s * (BN / TN)). Each step stages a BK-deep piece of A transposed
// (as[q][row]) and of B (bs[q][col]), rows padded by PAD; loads of A run along k, of B
// along n (coalesced). Every sum adds its products in k order, as the kernel as written.
// Launch: grid = (ceil(n / BN), ceil(m / BM), 4), block = (BN / TN, BM / TM).
// Defaults: the kernel as written (16 x 16 tile, pieces of 16, one element per thread).

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
#define NX (BN / TN)
#define NY (BM / TM)
#define NT (NX * NY)
#define SPLITS 4

extern "C" __global__ void __launch_bounds__(NT)
gemm_splitk4(float* __restrict__ P, const float* __restrict__ A, const float* __restrict__ B,
             int m, int n, int k) {
  __shared__ float as[BK][BM + PAD];
  __shared__ float bs[BK][BN + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * NX + tx;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN, slice = blockIdx.z;
  const int ks = (k + SPLITS - 1) / SPLITS;
  const int k_begin = slice * ks;
  const int k_end = min(k, k_begin + ks);
  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int s = 0; s < TN; ++s) acc[r][s] = 0.0f;

  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
    for (int e = tid; e < BM * BK; e += NT) {
      const int r = e / BK, q = e % BK;
      as[q][r] = (row0 + r < m && k0 + q < k_end) ? A[(size_t)(row0 + r) * k + k0 + q] : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += NT) {
      const int q = e / BN, c = e % BN;
      bs[q][c] = (k0 + q < k_end && col0 + c < n) ? B[(size_t)(k0 + q) * n + col0 + c] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < BK; ++q) {
      float av[TM], bv[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) av[r] = as[q][ty + r * NY];
#pragma unroll
      for (int s = 0; s < TN; ++s) bv[s] = bs[q][tx + s * NX];
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int s = 0; s < TN; ++s) acc[r][s] += av[r] * bv[s];
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const int i = row0 + ty + r * NY;
    if (i >= m) continue;
#pragma unroll
    for (int s = 0; s < TN; ++s) {
      const int j = col0 + tx + s * NX;
      if (j < n) P[((size_t)slice * m + i) * n + j] = acc[r][s];
    }
  }
}
