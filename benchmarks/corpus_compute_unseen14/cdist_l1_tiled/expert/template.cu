// dist[i][j] = sum_k |x[i][k] - y[j][k]|, x [m, d], y [n, d]: a tiled product.
// Expert parameterization (hand-written): a block owns a BM x BN tile of dist and walks k
// in BK-deep slices staged in shared memory k-major (xs[k][row], ys[k][col], rows padded by
// PAD), zero-filled past m, n and d (|0 - 0| adds nothing); each of its
// (BM / TM) * (BN / TN) threads holds a TM x TN register tile, rows strided by BM / TM and
// columns by BN / TN, so a slice value read from shared memory serves TN (or TM) distances.
// Every distance adds its terms in k order, as written.
// Launch: grid = (ceil(n / BN), ceil(m / BM)), block = (BN / TN, BM / TM).
// Defaults: the kernel as written (16 x 16 tiles, a distance a thread, 16-deep slices).

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
#define PAD 1
#endif
#define RT (BM / TM)
#define CT (BN / TN)
#define NT (RT * CT)

extern "C" __global__ void __launch_bounds__(NT)
cdist_l1_tiled(float* dist, const float* x, const float* y, int m, int n, int d) {
  __shared__ float xs[BK][BM + PAD];
  __shared__ float ys[BK][BN + PAD];
  const int tid = threadIdx.y * CT + threadIdx.x;
  const int tr = threadIdx.y, tc = threadIdx.x;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < d; k0 += BK) {
    for (int e = tid; e < BM * BK; e += NT) {
      const int r = e / BK, k = e % BK;
      xs[k][r] = (row0 + r < m && k0 + k < d) ? x[(size_t)(row0 + r) * d + k0 + k] : 0.0f;
    }
    for (int e = tid; e < BN * BK; e += NT) {
      const int c = e / BK, k = e % BK;
      ys[k][c] = (col0 + c < n && k0 + k < d) ? y[(size_t)(col0 + c) * d + k0 + k] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = xs[k][tr + i * RT];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = ys[k][tc + j * CT];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += fabsf(a[i] - b[j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = row0 + tr + i * RT;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = col0 + tc + j * CT;
      if (row < m && col < n) dist[(size_t)row * n + col] = acc[i][j];
    }
  }
}
