// steps[i] = Collatz steps taking start[i] to 1, capped at MAX_STEPS.
// Expert parameterization (hand-written): a block of THREADS threads owns THREADS * ITEMS
// starts, ITEMS a thread strided by THREADS (coalesced), whose orbits advance together;
// UNROLL guarded steps run between checks of the exit; SHORTCUT takes an odd step and the
// halving that always follows it as one. A count may then pass the cap by one on the last
// step, where the kernel as written stops at the cap: the stored count is clamped to it.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written.

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef SHORTCUT
#define SHORTCUT 0
#endif
#define MAX_STEPS 1000

extern "C" __global__ void __launch_bounds__(THREADS) collatz_steps(int* steps,
                                                                    const unsigned* start,
                                                                    int n) {
  const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  unsigned long long v[ITEMS];
  int count[ITEMS];
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    v[it] = i < n ? start[i] : 1ull;
    count[it] = 0;
  }
  bool busy = true;
  while (busy) {
    busy = false;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
      for (int it = 0; it < ITEMS; ++it) {
        if (v[it] > 1ull && count[it] < MAX_STEPS) {
          busy = true;
          if (v[it] & 1ull) {
#if SHORTCUT
            v[it] = (3ull * v[it] + 1ull) >> 1;
            count[it] += 2;
#else
            v[it] = 3ull * v[it] + 1ull;
            count[it] += 1;
#endif
          } else {
            v[it] >>= 1;
            count[it] += 1;
          }
        }
      }
    }
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    if (i < n) steps[i] = count[it] < MAX_STEPS ? count[it] : MAX_STEPS;
  }
}
