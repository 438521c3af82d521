// out[i] = 48 rounds of a multiply-xorshift mixer on keys[i] ^ SEED.
// Expert parameterization (hand-written): a block of THREADS threads owns THREADS * ITEMS
// keys, ITEMS a thread strided by THREADS (coalesced), mixed together round by round so
// their multiply chains overlap; the round loop is unrolled by UNROLL (a divisor of 48).
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel's launch as written.

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 4
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#define ROUNDS 48
#define SEED 0x5bd1e995u

__device__ __forceinline__ unsigned mix_round(unsigned h, unsigned r) {
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h + r * 0x9e3779b9u;
}

extern "C" __global__ void __launch_bounds__(THREADS) hash_mix_rounds(unsigned* out,
                                                                      const unsigned* keys,
                                                                      int n) {
  const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  unsigned h[ITEMS];
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    h[it] = (i < n ? keys[i] : 0u) ^ SEED;
  }
  for (unsigned r = 0; r < ROUNDS; r += UNROLL) {
#pragma unroll
    for (unsigned u = 0; u < UNROLL; ++u) {
#pragma unroll
      for (int it = 0; it < ITEMS; ++it) h[it] = mix_round(h[it], r + u);
    }
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    if (i < n) out[i] = h[it];
  }
}
