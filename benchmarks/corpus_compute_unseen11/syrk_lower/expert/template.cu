// C = A Aᵀ for A [n, k], lower triangle, zeros above (C [n, n]).
// Expert parameterization (hand-written): a block of (BT / TN) x (BT / TM) threads owns a
// square BT x BT tile of C; tiles wholly above the diagonal write their zeros and leave.
// Each thread keeps a TM x TN register tile (rows ty + r * (BT / TM), columns
// tx + s * (BT / TN)). Each step stages a BK-deep slice of the tile's rows and of its
// columns' rows of A, transposed (ai[q][row], aj[q][col]) with rows padded by PAD; on the
// diagonal tile both slices are the same rows and one copy serves both (SAME 1). Every sum
// adds its products in k order, as the kernel as written does.
// Launch: grid = (ceil(n / BT), ceil(n / BT)), block = (BT / TN, BT / TM).
// Defaults: the kernel as written (16 x 16 tile, slices of 16, one element per thread).

#ifndef BT
#define BT 16
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
#ifndef SAME
#define SAME 0
#endif
#define THREADS_X (BT / TN)
#define THREADS_Y (BT / TM)
#define NTHREADS (THREADS_X * THREADS_Y)

extern "C" __global__ void __launch_bounds__(NTHREADS)
syrk_lower(float* __restrict__ C, const float* __restrict__ A, int n, int k) {
  __shared__ float ai[BK][BT + PAD];
  __shared__ float aj[BK][BT + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * THREADS_X + tx;
  const int row0 = blockIdx.y * BT, col0 = blockIdx.x * BT;
  if (col0 > row0) {
#pragma unroll
    for (int r = 0; r < TM; ++r) {
      const int i = row0 + ty + r * THREADS_Y;
#pragma unroll
      for (int s = 0; s < TN; ++s) {
        const int j = col0 + tx + s * THREADS_X;
        if (i < n && j < n) C[(size_t)i * n + j] = 0.0f;
      }
    }
    return;
  }
  const bool diagonal = SAME && col0 == row0;
  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int s = 0; s < TN; ++s) acc[r][s] = 0.0f;

  for (int k0 = 0; k0 < k; k0 += BK) {
    for (int e = tid; e < BT * BK; e += NTHREADS) {
      const int row = e / BK, q = e % BK;
      const bool in_k = k0 + q < k;
      ai[q][row] = (row0 + row < n && in_k) ? A[(size_t)(row0 + row) * k + k0 + q] : 0.0f;
      if (!diagonal)
        aj[q][row] = (col0 + row < n && in_k) ? A[(size_t)(col0 + row) * k + k0 + q] : 0.0f;
    }
    __syncthreads();
    const float (*cols)[BT + PAD] = diagonal ? ai : aj;
#pragma unroll
    for (int q = 0; q < BK; ++q) {
      float a[TM], b[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) a[r] = ai[q][ty + r * THREADS_Y];
#pragma unroll
      for (int s = 0; s < TN; ++s) b[s] = cols[q][tx + s * THREADS_X];
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int s = 0; s < TN; ++s) acc[r][s] += a[r] * b[s];
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const int i = row0 + ty + r * THREADS_Y;
    if (i >= n) continue;
#pragma unroll
    for (int s = 0; s < TN; ++s) {
      const int j = col0 + tx + s * THREADS_X;
      if (j < n) C[(size_t)i * n + j] = (j <= i) ? acc[r][s] : 0.0f;
    }
  }
}
