// sgemm_nt, C = A . B^T (A M x K, B N x K, C M x N; fp32 row-major). Expert
// parameterization (hand-written): a 1-D block computes a BM x BN tile of C; both operand
// tiles are read along K from global memory and stored k-major in shared memory
// (As[k][m], Bs[k][n]) so the inner product reads consecutive floats across threads;
// each thread keeps a TM x TN register tile (rows tr + i * BM / TM, columns
// tc + j * BN / TN); VEC 4 loads the tiles as float4 when K % 4 == 0; PAD pads the k-rows.
// Launch: grid = (ceil(N / BN), ceil(M / BM)), block = (BM / TM) * (BN / TN).
// Defaults: the kernel as written (BLOCKSIZE = 32).
#ifndef BM
#define BM 32
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
#define VEC 1
#endif
#ifndef PAD
#define PAD 0
#endif

#define THREAD_COLS (BN / TN)
#define THREAD_ROWS (BM / TM)
#define THREADS (THREAD_COLS * THREAD_ROWS)

// Stage rows [first, first + ROWS) of a row-major matrix with `limit` rows and K columns,
// columns [k0, k0 + BK), into tile[k][row] (zeros outside the matrix).
#define STAGE_TILE(tile, src, ROWS, first, limit)                                        \
  if (vec) {                                                                             \
    for (int v = tid; v < ROWS * (BK / 4); v += THREADS) {                               \
      const int r = v / (BK / 4), c = (v % (BK / 4)) * 4;                                \
      float4 q = make_float4(0.0f, 0.0f, 0.0f, 0.0f);                                    \
      if (first + r < limit && k0 + c < K)                                               \
        q = *reinterpret_cast<const float4*>(src + (long long)r * K + k0 + c);           \
      tile[c][r] = q.x;                                                                  \
      tile[c + 1][r] = q.y;                                                              \
      tile[c + 2][r] = q.z;                                                              \
      tile[c + 3][r] = q.w;                                                              \
    }                                                                                    \
  } else {                                                                               \
    for (int e = tid; e < ROWS * BK; e += THREADS) {                                     \
      const int r = e / BK, c = e % BK;                                                  \
      tile[c][r] = (first + r < limit && k0 + c < K) ? src[(long long)r * K + k0 + c]    \
                                                     : 0.0f;                             \
    }                                                                                    \
  }

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_nt(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
         int M, int N, int K) {
  __shared__ float As[BK][BM + PAD];
  __shared__ float Bs[BK][BN + PAD];
  const int tid = threadIdx.x;
  const int tr = tid / THREAD_COLS, tc = tid % THREAD_COLS;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  A += (long long)m0 * K;
  B += (long long)n0 * K;
  C += (long long)m0 * N + n0;
  // float4 loads need 16-byte aligned rows: K % 4 == 0 (k0 is a multiple of BK >= 8)
  const bool vec = VEC == 4 && (K & 3) == 0;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    STAGE_TILE(As, A, BM, m0, M)
    STAGE_TILE(Bs, B, BN, n0, N)
    __syncthreads();
#pragma unroll
    for (int q = 0; q < BK; ++q) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[q][tr + i * THREAD_ROWS];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[q][tc + j * THREAD_COLS];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = tr + i * THREAD_ROWS;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int c = tc + j * THREAD_COLS;
      if (m0 + r < M && n0 + c < N) C[(long long)r * N + c] = acc[i][j];
    }
  }
}
