// G = exp(-gamma |x_i - y_j|^2) for X [M, D], Y [N, D], fp32. Expert parameterization
// (hand-written): a block of (BN / TN) x (BM / TM) threads owns a BM x BN tile of G; each
// thread keeps a TM x TN register tile of squared distances (rows ty + r * (BM / TM),
// columns tx + s * (BN / TN): neighbouring threads read neighbouring shared words). Each
// step stages BK coordinates of the block's BM X points and BN Y points in shared memory,
// transposed (xs[k][i], ys[k][j]: a thread's reads along i and j are contiguous), rows
// padded by PAD floats, zeros past D and past the last point (a zero coordinate on both
// sides adds nothing). Per coordinate a thread reads TM + TN values and does TM * TN
// difference-squares, in the kernel's order (d ascending), so the sums match it.
// Launch: grid = (ceil(N / BN), ceil(M / BM)), block = (BN / TN, BM / TM).
// Defaults: the kernel as written (16 x 16 tile, slices of 16, one output per thread).
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
#define THREADS_X (BN / TN)
#define THREADS_Y (BM / TM)
#define NTHREADS (THREADS_X * THREADS_Y)

extern "C" __global__ void __launch_bounds__(NTHREADS, 1)
rbf_gram(float* __restrict__ G, const float* __restrict__ X, const float* __restrict__ Y,
         int M, int N, int D, float gamma) {
  __shared__ float xs[BK][BM + PAD];
  __shared__ float ys[BK][BN + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * THREADS_X + tx;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int s = 0; s < TN; ++s) acc[r][s] = 0.0f;

  for (int d0 = 0; d0 < D; d0 += BK) {
    // consecutive threads copy consecutive coordinates of one point (coalesced rows)
    for (int e = tid; e < BM * BK; e += NTHREADS) {
      const int i = e / BK, k = e % BK;
      xs[k][i] = (row0 + i < M && d0 + k < D) ? __ldg(X + (size_t)(row0 + i) * D + d0 + k)
                                               : 0.0f;
    }
    for (int e = tid; e < BN * BK; e += NTHREADS) {
      const int j = e / BK, k = e % BK;
      ys[k][j] = (col0 + j < N && d0 + k < D) ? __ldg(Y + (size_t)(col0 + j) * D + d0 + k)
                                               : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float xv[TM], yv[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) xv[r] = xs[k][ty + r * THREADS_Y];
#pragma unroll
      for (int s = 0; s < TN; ++s) yv[s] = ys[k][tx + s * THREADS_X];
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int s = 0; s < TN; ++s) {
          const float t = xv[r] - yv[s];
          acc[r][s] += t * t;
        }
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const int i = row0 + ty + r * THREADS_Y;
    if (i >= M) continue;
#pragma unroll
    for (int s = 0; s < TN; ++s) {
      const int j = col0 + tx + s * THREADS_X;
      if (j < N) G[(size_t)i * N + j] = expf(-gamma * acc[r][s]);
    }
  }
}
