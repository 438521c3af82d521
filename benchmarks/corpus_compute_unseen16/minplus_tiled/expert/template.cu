// Min-plus product d[i][j] = min_k a[i][k] + b[k][j].
// Expert parameterization (hand-written): a block computes a BM x BN tile of d with
// (BN / TN) x (BM / TM) threads, each owning TM x TN outputs strided by the thread grid.
// Each k slice of BK is staged in shared memory: a transposed to k-major (row padded by
// PAD), b as is; every thread loads its share of both slices in a strided loop, padding
// out-of-range entries with BIG. The k loop keeps the TM + TN operands in registers.
// Launch: grid = (ceil(n / BN), ceil(m / BM)), block = (BN / TN, BM / TM).
// Defaults: the kernel's launch as written.

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
#define BIG 3.0e38f
#define TX (BN / TN)
#define TY (BM / TM)

extern "C" __global__ void __launch_bounds__(TX * TY) minplus_tiled(
    float* __restrict__ d, const float* __restrict__ a, const float* __restrict__ b, int m,
    int n, int k) {
  __shared__ float at[BK][BM + PAD];
  __shared__ float bs[BK][BN];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TX + tx;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float best[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) best[i][j] = BIG;
  for (int k0 = 0; k0 < k; k0 += BK) {
    for (int e = tid; e < BM * BK; e += TX * TY) {
      const int r = e / BK, c = e % BK;
      const int gr = row0 + r, gc = k0 + c;
      at[c][r] = (gr < m && gc < k) ? a[(size_t)gr * k + gc] : BIG;
    }
    for (int e = tid; e < BK * BN; e += TX * TY) {
      const int r = e / BN, c = e % BN;
      const int gr = k0 + r, gc = col0 + c;
      bs[r][c] = (gr < k && gc < n) ? b[(size_t)gr * n + gc] : BIG;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float av[TM], bv[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) av[i] = at[kk][ty + i * TY];
#pragma unroll
      for (int j = 0; j < TN; ++j) bv[j] = bs[kk][tx + j * TX];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) best[i][j] = fminf(best[i][j], av[i] + bv[j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = row0 + ty + i * TY;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int c = col0 + tx + j * TX;
      if (r < m && c < n) d[(size_t)r * n + c] = best[i][j];
    }
  }
}
