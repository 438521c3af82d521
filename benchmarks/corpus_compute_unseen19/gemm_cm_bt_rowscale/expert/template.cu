// C = diag(s) * A * B^T, column-major (A: M x K, B: N x K, C: M x N, leading dimensions M,
// N, M).
// Expert parameterization (hand-written): a BM x BN tile of C a block, k in shared slices of
// BK (A's and B's slices both k-major, as column-major storage reads them unit-stride),
// each padded by PAD floats a row, and a TM x TN register tile a thread (rows strided by
// BM / TM, columns by BN / TN).
// Launch: grid = (ceil(M / BM), ceil(N / BN)), block = (BM / TM, BN / TN).
// Defaults: the kernel as written (a 16 x 16 tile, one element a thread).

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
#define RX (BM / TM)
#define RY (BN / TN)

extern "C" __global__ void __launch_bounds__(RX * RY) gemm_cm_bt_rowscale(
    float* __restrict__ c, const float* __restrict__ a, const float* __restrict__ b,
    const float* __restrict__ s, int M, int N, int K) {
  __shared__ float As[BK][BM + PAD];
  __shared__ float Bs[BK][BN + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * RX + tx;
  const int row0 = blockIdx.x * BM, col0 = blockIdx.y * BN;
  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int q = 0; q < TN; ++q) acc[r][q] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = tid; e < BK * BM; e += RX * RY) {
      const int kk = e / BM, ii = e % BM, row = row0 + ii, k = k0 + kk;
      As[kk][ii] = row < M && k < K ? a[(size_t)k * M + row] : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += RX * RY) {
      const int kk = e / BN, jj = e % BN, col = col0 + jj, k = k0 + kk;
      Bs[kk][jj] = col < N && k < K ? b[(size_t)k * N + col] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float ar[TM], br[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) ar[r] = As[kk][tx + r * RX];
#pragma unroll
      for (int q = 0; q < TN; ++q) br[q] = Bs[kk][ty + q * RY];
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int q = 0; q < TN; ++q) acc[r][q] = acc[r][q] + ar[r] * br[q];
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const int row = row0 + tx + r * RX;
    if (row >= M) continue;
    const float scale = s[row];
#pragma unroll
    for (int q = 0; q < TN; ++q) {
      const int col = col0 + ty + q * RY;
      if (col < N) c[(size_t)col * M + row] = scale * acc[r][q];
    }
  }
}
