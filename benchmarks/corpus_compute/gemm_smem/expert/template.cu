// C [M, N] = A [M, K] * B [K, N], float, row-major. Expert parameterization of the
// textbook tiled multiply (hand-written): a block computes a BM x BN tile of C from
// shared tiles of A (BM x BK, stored k-major) and B (BK x BN); each thread keeps a
// TM x TN register tile of accumulators (rows ty + i * (BM / TM), columns
// tx + j * (BN / TN): conflict-free shared reads, coalesced stores).
// Launch: grid = (ceil(N / BN), ceil(M / BM)), block = (BN / TN, BM / TM).
// The defaults (16, 16, 16, 1, 1, VEC 1, PAD 0) are the kernel as written.
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
#ifndef VEC
#define VEC 1  // 4: float4 global loads where K (for A) or N (for B) is a multiple of 4
#endif
#ifndef PAD
#define PAD 0  // extra column of the k-major A tile (its stores are strided)
#endif

#define THREADS_X (BN / TN)
#define THREADS_Y (BM / TM)
#define THREADS (THREADS_X * THREADS_Y)

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_smem(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B,
          int M, int N, int K) {
  __shared__ float As[BK][BM + PAD];
  __shared__ __align__(16) float Bs[BK][BN];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * THREADS_X + tx;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    // A tile, BM rows x BK columns, stored transposed: As[k][m]
    if (VEC == 4 && (K & 3) == 0) {
      for (int v = tid; v < BM * (BK / 4); v += THREADS) {
        const int r = v / (BK / 4), c = (v % (BK / 4)) * 4;
        const int gr = row0 + r, gc = k0 + c;
        float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        // K % 4 == 0 and gc % 4 == 0: gc < K means gc + 3 < K
        if (gr < M && gc < K) a = *reinterpret_cast<const float4*>(A + (size_t)gr * K + gc);
        As[c][r] = a.x;
        As[c + 1][r] = a.y;
        As[c + 2][r] = a.z;
        As[c + 3][r] = a.w;
      }
    } else {
      for (int e = tid; e < BM * BK; e += THREADS) {
        const int r = e / BK, c = e % BK;
        const int gr = row0 + r, gc = k0 + c;
        As[c][r] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : 0.0f;
      }
    }
    // B tile, BK rows x BN columns: Bs[k][n]
    if (VEC == 4 && (N & 3) == 0) {
      for (int v = tid; v < BK * (BN / 4); v += THREADS) {
        const int r = v / (BN / 4), c = (v % (BN / 4)) * 4;
        const int gr = k0 + r, gc = col0 + c;
        float4 b = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (gr < K && gc < N) b = *reinterpret_cast<const float4*>(B + (size_t)gr * N + gc);
        *reinterpret_cast<float4*>(&Bs[r][c]) = b;
      }
    } else {
      for (int e = tid; e < BK * BN; e += THREADS) {
        const int r = e / BN, c = e % BN;
        const int gr = k0 + r, gc = col0 + c;
        Bs[r][c] = (gr < K && gc < N) ? B[(size_t)gr * N + gc] : 0.0f;
      }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[k][ty + i * THREADS_Y];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx + j * THREADS_X];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = row0 + ty + i * THREADS_Y;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int c = col0 + tx + j * THREADS_X;
      if (r < M && c < N) C[(size_t)r * N + c] = acc[i][j];
    }
  }
}
