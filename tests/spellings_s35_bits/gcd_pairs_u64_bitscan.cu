// gcd_binary_pairs in 64-bit arithmetic through pointer-taking helpers: the common factor
// of two counted by a bit-scan helper (a trailing-zero count loop with a counter), the
// parity by `% 2`, halvings by `/= 2`, a `for (;;)` with a `break`, a size_t index.
__device__ __forceinline__ int trailing_zeros(unsigned long long w) {
  int tz = 0;
  while (w != 0ull && (w & 1ull) == 0ull) {  // a zero w: 0
    w >>= 1;
    ++tz;
  }
  return tz;
}

__device__ void gcd_pair(const unsigned* pa, const unsigned* pb, unsigned* pg, int* pr) {
  unsigned long long u = *pa;
  unsigned long long v = *pb;
  if (u == 0ull || v == 0ull) {
    *pg = (unsigned)(u | v);
    *pr = 0;
    return;
  }
  const int common = trailing_zeros(u | v);
  u >>= common;
  v >>= common;
  while (u % 2 == 0)
    u /= 2;
  int count = 0;
  for (;;) {
    while (0 == v % 2)
      v /= 2;
    if (u > v) {
      const unsigned long long t = u;
      u = v;
      v = t;
    }
    v -= u;
    ++count;
    if (v == 0ull)
      break;
  }
  *pg = (unsigned)(u << common);
  *pr = count;
}

extern "C" __global__ void gcd_binary_pairs(unsigned* g, int* rounds, const unsigned* a,
                                            const unsigned* b, int n) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)n)
    return;
  gcd_pair(a + i, b + i, g + i, rounds + i);
}
