// C = A^T A / K + 0.01 I (A: K x N row-major, C: N x N row-major).
// Expert parameterization (hand-written): a BM x BN tile of C a block (rows: blockIdx.y,
// columns: blockIdx.x, as written), k in shared slices of BK (both slices k-major, read
// unit-stride from A's rows), each padded by PAD floats a row, and a TM x TN register tile
// a thread (rows strided by BM / TM, columns by BN / TN).
// Launch: grid = (ceil(N / BN), ceil(N / BM)), block = (BN / TN, BM / TM).
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
#define PAD 0
#endif
#define RX (BN / TN)
#define RY (BM / TM)
#define RIDGE 0.01f

extern "C" __global__ void __launch_bounds__(RX * RY) gram_ata_ridge(
    float* __restrict__ C, const float* __restrict__ A, int K, int N) {
  __shared__ float As[BK][BM + PAD];
  __shared__ float Bs[BK][BN + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * RX + tx;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int q = 0; q < TN; ++q) acc[r][q] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = tid; e < BK * BM; e += RX * RY) {
      const int kk = e / BM, ii = e % BM, i = row0 + ii, k = k0 + kk;
      As[kk][ii] = i < N && k < K ? A[(size_t)k * N + i] : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += RX * RY) {
      const int kk = e / BN, jj = e % BN, j = col0 + jj, k = k0 + kk;
      Bs[kk][jj] = j < N && k < K ? A[(size_t)k * N + j] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float ar[TM], br[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) ar[r] = As[kk][ty + r * RY];
#pragma unroll
      for (int q = 0; q < TN; ++q) br[q] = Bs[kk][tx + q * RX];
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int q = 0; q < TN; ++q) acc[r][q] += ar[r] * br[q];
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const int row = row0 + ty + r * RY;
    if (row >= N) continue;
#pragma unroll
    for (int q = 0; q < TN; ++q) {
      const int col = col0 + tx + q * RX;
      if (col < N) C[(size_t)row * N + col] = acc[r][q] / K + (row == col ? RIDGE : 0.0f);
    }
  }
}
