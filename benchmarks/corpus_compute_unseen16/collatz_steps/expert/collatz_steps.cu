// steps[i] = how many Collatz steps (v -> v / 2 when even, 3 v + 1 when odd) take start[i]
// to 1, counted up to MAX_STEPS, in 64-bit arithmetic (the orbits of 32-bit starts pass
// 2^32). One start a thread, 128 threads a block.
// Launch: grid = ((n + 127) / 128), block = (128).

#define MAX_STEPS 1000

__device__ __forceinline__ void collatz_step(unsigned long long& v, int& count) {
  if (v & 1ull)
    v = 3ull * v + 1ull;
  else
    v >>= 1;
  ++count;
}

extern "C" __global__ void collatz_steps(int* steps, const unsigned* start, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned long long v = start[i];
  int count = 0;
  for (;;) {
    if (v <= 1ull || count == MAX_STEPS) break;
    collatz_step(v, count);
  }
  steps[i] = count;
}
