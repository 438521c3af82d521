// hits[i] = how many of 512 pseudo-random points (x, y) in [0, 1)^2 fall inside the quarter
// circle x^2 + y^2 < 1, the points drawn from a 32-bit xorshift stream seeded from i. One
// stream per thread, 128 threads a block.
// Launch: grid = ((n + 127) / 128), block = (128).

constexpr int kSamples = 512;

__device__ __forceinline__ unsigned xorshift32(unsigned s) {
  s ^= s << 13;
  s ^= s >> 17;
  s ^= s << 5;
  return s;
}

extern "C" __global__ void mc_hits_xorshift(int* hits, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned s = 0x9E3779B9u ^ ((unsigned)i * 0x85EBCA6Bu);
  if (s == 0u) s = 1u;
  int count = 0;
  int k = 0;
  do {
    s = xorshift32(s);
    float x = (float)(s >> 8) * (1.0f / 16777216.0f);
    s = xorshift32(s);
    float y = (float)(s >> 8) * (1.0f / 16777216.0f);
    if (x * x + y * y < 1.0f) ++count;
    ++k;
  } while (k < kSamples);
  hits[i] = count;
}
