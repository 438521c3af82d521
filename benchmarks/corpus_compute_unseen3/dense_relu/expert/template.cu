// Y [M, N] = relu(X [M, K] * W^T + b), W stored [N, K], float. Expert parameterization
// (hand-written): a block computes a BM x BN tile of Y from shared tiles of X (BM x BK) and
// W (BN x BK), both stored k-major (xs[k][m], ws[k][n]) so the k loop reads a row of each;
// every thread keeps a TM x TN register tile of accumulators (rows ty + i * (BM / TM),
// columns tx + j * (BN / TN): conflict-free shared reads, coalesced stores) and applies
// the bias and the ReLU to it before the one store. Both operands are contiguous along K,
// so VEC 4 reads them as float4 where K is a multiple of 4; PAD skews the k-major tiles
// against the bank conflicts of their transposing stores.
// Launch: grid = (ceil(N / BN), ceil(M / BM)), block = (BN / TN, BM / TM).
// The defaults (8, 32, 32, 1, 1, VEC 1, PAD 0) launch the kernel as written.
#ifndef BM
#define BM 8
#endif
#ifndef BN
#define BN 32
#endif
#ifndef BK
#define BK 32
#endif
#ifndef TM
#define TM 1
#endif
#ifndef TN
#define TN 1
#endif
#ifndef VEC
#define VEC 1  // 4: float4 global loads of X and W where K is a multiple of 4
#endif
#ifndef PAD
#define PAD 0  // extra columns of the k-major tiles
#endif

#define THREADS_X (BN / TN)
#define THREADS_Y (BM / TM)
#define THREADS (THREADS_X * THREADS_Y)

extern "C" __global__ void __launch_bounds__(THREADS)
dense_relu(float* __restrict__ Y, const float* __restrict__ X, const float* __restrict__ W,
           const float* __restrict__ b, int M, int N, int K) {
  __shared__ float xs[BK][BM + PAD];
  __shared__ float ws[BK][BN + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * THREADS_X + tx;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    if (VEC == 4 && (K & 3) == 0) {
      // K % 4 == 0 and k0 + c a multiple of 4: k0 + c < K means all four lanes are in range
      for (int v = tid; v < BM * (BK / 4); v += THREADS) {
        const int r = v / (BK / 4), c = (v % (BK / 4)) * 4;
        const int gr = row0 + r, gk = k0 + c;
        float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (gr < M && gk < K) a = __ldg(reinterpret_cast<const float4*>(X + (size_t)gr * K + gk));
        xs[c][r] = a.x;
        xs[c + 1][r] = a.y;
        xs[c + 2][r] = a.z;
        xs[c + 3][r] = a.w;
      }
      for (int v = tid; v < BN * (BK / 4); v += THREADS) {
        const int r = v / (BK / 4), c = (v % (BK / 4)) * 4;
        const int gn = col0 + r, gk = k0 + c;
        float4 w = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (gn < N && gk < K) w = __ldg(reinterpret_cast<const float4*>(W + (size_t)gn * K + gk));
        ws[c][r] = w.x;
        ws[c + 1][r] = w.y;
        ws[c + 2][r] = w.z;
        ws[c + 3][r] = w.w;
      }
    } else {
      for (int e = tid; e < BM * BK; e += THREADS) {
        const int r = e / BK, c = e % BK;
        const int gr = row0 + r, gk = k0 + c;
        xs[c][r] = (gr < M && gk < K) ? __ldg(X + (size_t)gr * K + gk) : 0.0f;
      }
      for (int e = tid; e < BN * BK; e += THREADS) {
        const int r = e / BK, c = e % BK;
        const int gn = col0 + r, gk = k0 + c;
        ws[c][r] = (gn < N && gk < K) ? __ldg(W + (size_t)gn * K + gk) : 0.0f;
      }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], w[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = xs[k][ty + i * THREADS_Y];
#pragma unroll
      for (int j = 0; j < TN; ++j) w[j] = ws[k][tx + j * THREADS_X];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * w[j];
    }
    __syncthreads();
  }

  // epilogue: bias per output column, then the ReLU, one store per output
#pragma unroll
  for (int j = 0; j < TN; ++j) {
    const int c = col0 + tx + j * THREADS_X;
    const float bias = c < N ? __ldg(b + c) : 0.0f;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int r = row0 + ty + i * THREADS_Y;
      if (r < M && c < N) Y[(size_t)r * N + c] = fmaxf(acc[i][j] + bias, 0.0f);
    }
  }
}
