// Pearson correlation matrix of the p columns of X (n x p, column-major), R p x p
// column-major: R(i,j) = sc(i) sc(j) sum_k (X(k,i) - mu(i)) (X(k,j) - mu(j)).
// Expert parameterization (hand-written): a BM x BN tile of R a block (i: blockIdx.x,
// j: blockIdx.y, as written), k in shared slices of BK (centred on load, read unit-stride
// along each column of X), each slice row padded by PAD floats, and a TM x TN register tile
// a thread (i strided by BM / TM, j by BN / TN).
// Launch: grid = (ceil(p / BM), ceil(p / BN)), block = (BM / TM, BN / TN).
// Defaults: the kernel as written (16 x 16 tiles of 16, one element a thread).

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
#define RX (BM / TM)
#define RY (BN / TN)

extern "C" __global__ void __launch_bounds__(RX * RY) pearson_cm_tiled(
    float* __restrict__ r, const float* __restrict__ x, const float* __restrict__ mu,
    const float* __restrict__ sc, int n, int p) {
  __shared__ float xi[BK][BM + PAD];
  __shared__ float xj[BK][BN + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * RX + tx;
  const int i0 = blockIdx.x * BM, j0 = blockIdx.y * BN;
  float acc[TM][TN];
#pragma unroll
  for (int a = 0; a < TM; ++a)
#pragma unroll
    for (int b = 0; b < TN; ++b) acc[a][b] = 0.0f;
  for (int k0 = 0; k0 < n; k0 += BK) {
    for (int e = tid; e < BK * BM; e += RX * RY) {
      const int kk = e % BK, ii = e / BK, i = i0 + ii, k = k0 + kk;
      xi[kk][ii] = i < p && k < n ? x[(size_t)i * n + k] - mu[i] : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += RX * RY) {
      const int kk = e % BK, jj = e / BK, j = j0 + jj, k = k0 + kk;
      xj[kk][jj] = j < p && k < n ? x[(size_t)j * n + k] - mu[j] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float av[TM], bv[TN];
#pragma unroll
      for (int a = 0; a < TM; ++a) av[a] = xi[kk][tx + a * RX];
#pragma unroll
      for (int b = 0; b < TN; ++b) bv[b] = xj[kk][ty + b * RY];
#pragma unroll
      for (int a = 0; a < TM; ++a)
#pragma unroll
        for (int b = 0; b < TN; ++b) acc[a][b] += av[a] * bv[b];
    }
    __syncthreads();
  }
#pragma unroll
  for (int b = 0; b < TN; ++b) {
    const int j = j0 + ty + b * RY;
    if (j >= p) continue;
    const float sj = sc[j];
#pragma unroll
    for (int a = 0; a < TM; ++a) {
      const int i = i0 + tx + a * RX;
      if (i < p) r[(size_t)j * p + i] = acc[a][b] * sc[i] * sj;
    }
  }
}
