// 7-tap, 16 -> 16 channel 1-D convolution of [B, 16, T] signals with zero padding, weights
// and biases in constant memory. Expert parameterization (hand-written): a block of THREADS
// threads covers THREADS * T_ITEMS consecutive samples of CO output channels of one batch
// item; a thread owns T_ITEMS consecutive samples of CO channels (CO * T_ITEMS accumulators).
// Per input channel it loads a window of T_ITEMS + 6 samples once (from global memory, or
// with USE_SMEM 1 from the block's tile of all 16 channels staged in shared memory) and
// feeds every output it touches, so an input value is read once per thread, not 7 * 16
// times per output. The weights stay uniform across the block (constant-memory broadcasts).
// Each output is summed in the kernel's order (bias, then channel by channel, tap by tap;
// a zero padding sample adds nothing), so the results match it.
// Launch: grid = (ceil(T / (THREADS * T_ITEMS)), 16 / CO, B), block = THREADS.
// Defaults: the kernel as written (a sample of one channel a thread, 128 threads).
#ifndef THREADS
#define THREADS 128
#endif
#ifndef T_ITEMS
#define T_ITEMS 1
#endif
#ifndef CO
#define CO 1
#endif
#ifndef USE_SMEM
#define USE_SMEM 0
#endif
#ifndef C_UNROLL
#define C_UNROLL 1
#endif
#define CH 16
#define TAPS 7
#define HALO (TAPS / 2)
#define SPAN (THREADS * T_ITEMS)
#define WIN (T_ITEMS + 2 * HALO)
// #pragma unroll takes a constant expression, not a macro
constexpr int kChannelUnroll = C_UNROLL;

__constant__ float weights[CH * CH * TAPS];  // [o][c][k]
__constant__ float biases[CH];

extern "C" __global__ void __launch_bounds__(THREADS, 1)
conv1d_mix7(float* __restrict__ out, const float* __restrict__ in, int T) {
  const int o0 = blockIdx.y * CO;
  const size_t b = blockIdx.z;
  const float* src = in + b * CH * (size_t)T;
  const long long base = (long long)blockIdx.x * SPAN;
  const long long t0 = base + (long long)threadIdx.x * T_ITEMS;
#if USE_SMEM
  __shared__ float tile[CH][SPAN + 2 * HALO];
  for (int e = threadIdx.x; e < CH * (SPAN + 2 * HALO); e += THREADS) {
    const int c = e / (SPAN + 2 * HALO), j = e % (SPAN + 2 * HALO);
    const long long s = base + j - HALO;
    tile[c][j] = (s >= 0 && s < T) ? __ldg(src + (size_t)c * T + s) : 0.0f;
  }
  __syncthreads();
#endif
  float acc[CO][T_ITEMS];
#pragma unroll
  for (int q = 0; q < CO; ++q)
#pragma unroll
    for (int u = 0; u < T_ITEMS; ++u) acc[q][u] = biases[o0 + q];

#pragma unroll (kChannelUnroll)
  for (int c = 0; c < CH; ++c) {
    float win[WIN];
#pragma unroll
    for (int j = 0; j < WIN; ++j) {
#if USE_SMEM
      win[j] = tile[c][threadIdx.x * T_ITEMS + j];
#else
      const long long s = t0 + j - HALO;
      win[j] = (s >= 0 && s < T) ? __ldg(src + (size_t)c * T + s) : 0.0f;
#endif
    }
#pragma unroll
    for (int q = 0; q < CO; ++q)
#pragma unroll
      for (int k = 0; k < TAPS; ++k) {
        const float w = weights[((o0 + q) * CH + c) * TAPS + k];
#pragma unroll
        for (int u = 0; u < T_ITEMS; ++u) acc[q][u] += w * win[u + k];
      }
  }
#pragma unroll
  for (int q = 0; q < CO; ++q)
#pragma unroll
    for (int u = 0; u < T_ITEMS; ++u) {
      const long long t = t0 + u;
      if (t < T) out[(b * CH + o0 + q) * (size_t)T + t] = acc[q][u];
    }
}
