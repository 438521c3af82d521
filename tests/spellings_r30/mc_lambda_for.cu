// mc_hits_xorshift, another hand: macros, the step a lambda, a for loop, the count added
// by a ternary, the body wrapped in an if, unsigned index.
#define SAMPLES 512
#define TO_UNIT (1.0f / 16777216.0f)

extern "C" __global__ void mc_hits_xorshift(int* __restrict__ hits, int n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (unsigned)n) {
    auto next = [](unsigned s) {
      s ^= s << 13;
      s ^= s >> 17;
      s ^= s << 5;
      return s;
    };
    unsigned s = 0x9E3779B9u ^ (i * 0x85EBCA6Bu);
    s = s == 0u ? 1u : s;
    int count = 0;
    for (int k = 0; k < SAMPLES; ++k) {
      s = next(s);
      const float x = (float)(s >> 8) * TO_UNIT;
      s = next(s);
      const float y = (float)(s >> 8) * TO_UNIT;
      count += (x * x + y * y < 1.0f) ? 1 : 0;
    }
    hits[i] = count;
  }
}
