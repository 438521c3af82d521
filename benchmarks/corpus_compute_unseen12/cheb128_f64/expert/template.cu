// y[i] = the 128-term Chebyshev series c (floats, summed in double) at x[i] mapped onto [-2, 3], clamped.
// Expert parameterization (hand-written): a block of THREADS threads owns THREADS * ITEMS
// consecutive points, ITEMS a thread (strided by THREADS, so loads stay coalesced), whose
// Clenshaw recurrences run interleaved in one loop (independent double chains in flight);
// the coefficients are read from global memory or staged in shared memory as doubles (SMEM 1); the
// recurrence loop is unrolled UNROLL times. Each point's recurrence is the kernel as
// written's, step for step.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written (256 threads, one point each, coefficients from global).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef SMEM
#define SMEM 0
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#define NCOEF 128
#define LO (-2.0)
#define HI 3.0
// #pragma unroll takes a constant expression, not a macro
constexpr int kUnroll = UNROLL;

extern "C" __global__ void __launch_bounds__(THREADS)
cheb128_f64(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ c,
            int n) {
#if SMEM
  __shared__ double cs[NCOEF];
  for (int j = threadIdx.x; j < NCOEF; j += THREADS) cs[j] = (double)c[j];
  __syncthreads();
#define COEF(j) cs[j]
#else
#define COEF(j) ((double)c[j])
#endif
  const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  double t[ITEMS], b1[ITEMS], b2[ITEMS];
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    const double v = i < n ? (2.0 * (double)x[i] - (LO + HI)) / (HI - LO) : 0.0;
    t[it] = v > 1.0 ? 1.0 : (v < -1.0 ? -1.0 : v);
    b1[it] = 0.0;
    b2[it] = 0.0;
  }
#pragma unroll (kUnroll)
  for (int j = NCOEF - 1; j > 0; --j) {
    const double cj = COEF(j);
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      const double b0 = 2.0 * t[it] * b1[it] - b2[it] + cj;
      b2[it] = b1[it];
      b1[it] = b0;
    }
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    if (i < n) y[i] = (float)(t[it] * b1[it] - b2[it] + COEF(0));
  }
}
