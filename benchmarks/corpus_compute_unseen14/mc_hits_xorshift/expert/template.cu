// hits[i] = points of a 512-long xorshift32 stream seeded from i inside the quarter circle.
// Expert parameterization (hand-written): a block of THREADS threads owns THREADS * ITEMS
// streams, ITEMS a thread strided by THREADS (coalesced stores), stepped interleaved so
// their dependent xorshift chains overlap; the sample loop is unrolled by UNROLL.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written (128 threads, one stream each, no unrolling).

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#define SAMPLES 512

__device__ __forceinline__ unsigned xorshift32(unsigned s) {
  s ^= s << 13;
  s ^= s >> 17;
  s ^= s << 5;
  return s;
}

extern "C" __global__ void __launch_bounds__(THREADS) mc_hits_xorshift(int* hits, int n) {
  const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  unsigned s[ITEMS];
  int count[ITEMS];
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const unsigned i = (unsigned)(base + it * THREADS);
    s[it] = 0x9E3779B9u ^ (i * 0x85EBCA6Bu);
    if (s[it] == 0u) s[it] = 1u;
    count[it] = 0;
  }
  for (int k = 0; k < SAMPLES; k += UNROLL) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
      for (int it = 0; it < ITEMS; ++it) {
        s[it] = xorshift32(s[it]);
        const float x = (float)(s[it] >> 8) * (1.0f / 16777216.0f);
        s[it] = xorshift32(s[it]);
        const float y = (float)(s[it] >> 8) * (1.0f / 16777216.0f);
        count[it] += x * x + y * y < 1.0f ? 1 : 0;
      }
    }
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    if (i < n) hits[i] = count[it];
  }
}
