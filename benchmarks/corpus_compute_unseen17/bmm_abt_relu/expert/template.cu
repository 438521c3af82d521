// Batched c[l] = relu(a[l] b[l]^T + bias).
// Expert parameterization (hand-written): a block computes a BM x BN tile of c[l] with
// (BN / TN) x (BM / TM) threads, each owning TM x TN outputs strided by the thread grid.
// Each k slice of BK is staged in shared memory k-major for both operands (rows padded by
// PAD), loaded by every thread in a strided loop with zeros past the edges; the k loop
// keeps the TM + TN operands in registers.
// Launch: grid = (ceil(N / BN), ceil(M / BM), L), block = (BN / TN, BM / TM).
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
#define TX (BN / TN)
#define TY (BM / TM)

extern "C" __global__ void __launch_bounds__(TX * TY) bmm_abt_relu(
    float* __restrict__ c, const float* __restrict__ a, const float* __restrict__ b,
    const float* __restrict__ bias, int M, int N, int K) {
  __shared__ float at[BK][BM + PAD];
  __shared__ float bt[BK][BN + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TX + tx;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const float* al = a + (size_t)blockIdx.z * M * K;
  const float* bl = b + (size_t)blockIdx.z * N * K;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = tid; e < BM * BK; e += TX * TY) {
      const int r = e / BK, q = e % BK;
      const int gr = row0 + r, gk = k0 + q;
      at[q][r] = (gr < M && gk < K) ? al[(size_t)gr * K + gk] : 0.0f;
    }
    for (int e = tid; e < BN * BK; e += TX * TY) {
      const int r = e / BK, q = e % BK;
      const int gr = col0 + r, gk = k0 + q;
      bt[q][r] = (gr < N && gk < K) ? bl[(size_t)gr * K + gk] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float av[TM], bv[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) av[i] = at[kk][ty + i * TY];
#pragma unroll
      for (int j = 0; j < TN; ++j) bv[j] = bt[kk][tx + j * TX];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = row0 + ty + i * TY;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = col0 + tx + j * TX;
      if (r < M && col < N) {
        const float v = acc[i][j] + bias[col];
        c[((size_t)blockIdx.z * M + r) * N + col] = v > 0.0f ? v : 0.0f;
      }
    }
  }
}
