// mc_hits_xorshift, another hand: a helper stepping the state by reference and returning
// the point's coordinate, a count-down while loop, static constexpr samples.
static constexpr int kSamples = 512;

__device__ __forceinline__ float next_unit(unsigned& state) {
  state ^= state << 13;
  state ^= state >> 17;
  state ^= state << 5;
  return (float)(state >> 8) * (1.0f / 16777216.0f);
}

extern "C" __global__ void mc_hits_xorshift(int* hits, int n) {
  const int gid = threadIdx.x + blockIdx.x * blockDim.x;
  if (gid >= n) return;
  unsigned state = 0x9E3779B9u ^ ((unsigned)gid * 0x85EBCA6Bu);
  if (!state) state = 1u;
  int inside = 0;
  int left = kSamples;
  while (left-- > 0) {
    const float px = next_unit(state);
    const float py = next_unit(state);
    if (px * px + py * py < 1.0f) inside++;
  }
  hits[gid] = inside;
}
