// c = a^T b for a [k, m] and b [k, n], c [m, n].
// Expert parameterization (hand-written): a (BN / TN) x (BM / TM) block computes a BM x BN
// tile of c, TM x TN outputs a thread in registers, strided by the block's extent (so the
// shared reads of a warp are broadcast along m and consecutive along n, and the stores
// coalesced); slices of BK rows of a and b are staged in shared memory, PAD floats of
// padding a row; each slice's loads are spread over all threads in linear order.
// Launch: grid = (ceil(n / BN), ceil(m / BM)), block = (BN / TN, BM / TM).
// Defaults: the kernel as written (16 x 16 tiles, one output a thread, padded).

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
#define TX (BN / TN)
#define TY (BM / TM)
#define NT (TX * TY)

extern "C" __global__ void __launch_bounds__(NT) gemm_atb_tiled(float* c, const float* a,
                                                                const float* b, int m, int n,
                                                                int k) {
  __shared__ float at[BK][BM + PAD];
  __shared__ float bt[BK][BN + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * TX + tx;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  for (int t0 = 0; t0 < k; t0 += BK) {
    for (int e = tid; e < BK * BM; e += NT) {
      const int t = t0 + e / BM, r = m0 + e % BM;
      at[e / BM][e % BM] = (t < k && r < m) ? a[(size_t)t * m + r] : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += NT) {
      const int t = t0 + e / BN, q = n0 + e % BN;
      bt[e / BN][e % BN] = (t < k && q < n) ? b[(size_t)t * n + q] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int s = 0; s < BK; ++s) {
      float ar[TM], br[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) ar[i] = at[s][ty + i * TY];
#pragma unroll
      for (int j = 0; j < TN; ++j) br[j] = bt[s][tx + j * TX];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += ar[i] * br[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = m0 + ty + i * TY;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int q = n0 + tx + j * TX;
      if (r < m && q < n) c[(size_t)r * n + q] = acc[i][j];
    }
  }
}
