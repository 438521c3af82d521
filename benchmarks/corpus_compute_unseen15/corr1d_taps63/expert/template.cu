// y[b][i] = sum over 63 taps of taps[k] * x[b][i + k - 31], zero padded, rows on blockIdx.y.
// Expert parameterization (hand-written): a block of THREADS threads owns THREADS * ITEMS
// outputs of a row, ITEMS a thread strided by THREADS (conflict-free shared reads,
// coalesced stores), and stages their window of THREADS * ITEMS + 62 inputs; each tap is
// read once for all ITEMS outputs; the tap loop runs in groups of UNROLL (a divisor of 63).
// Launch: grid = (ceil(len / (THREADS * ITEMS)), rows), block = THREADS.
// Defaults: the kernel as written.

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef UNROLL
#define UNROLL 9
#endif
#define TAPS 63
#define HALO 31
#define SPAN (THREADS * ITEMS)

__constant__ float taps[TAPS];

extern "C" __global__ void __launch_bounds__(THREADS) corr1d_taps63(float* __restrict__ y,
                                                                     const float* __restrict__ x,
                                                                     int len) {
  __shared__ float window[SPAN + TAPS - 1];
  const float* src = x + (size_t)blockIdx.y * len;
  float* dst = y + (size_t)blockIdx.y * len;
  const int first = blockIdx.x * SPAN;
  for (int s = threadIdx.x; s < SPAN + TAPS - 1; s += THREADS) {
    const int g = first + s - HALO;
    window[s] = (g >= 0 && g < len) ? src[g] : 0.0f;
  }
  __syncthreads();
  float acc[ITEMS];
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) acc[it] = 0.0f;
  for (int k = 0; k < TAPS; k += UNROLL) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const float w = taps[k + u];
#pragma unroll
      for (int it = 0; it < ITEMS; ++it) acc[it] += w * window[threadIdx.x + it * THREADS + k + u];
    }
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = first + threadIdx.x + it * THREADS;
    if (i < len) dst[i] = acc[it];
  }
}
