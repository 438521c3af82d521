// out[i] = keys[i] ^ SEED pushed through ROUNDS rounds of a multiply-xorshift mixer, each
// round adding r * golden ratio after the mix. The round is a functor handed to the driver
// as a template argument. Grid-stride loop; 256 threads a block, four keys a thread.
// Launch: grid = ((n + 1023) / 1024), block = (256).

#define ROUNDS 48
#define SEED 0x5bd1e995u

struct MixRound {
  __device__ unsigned operator()(unsigned h, unsigned r) const {
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return h + r * 0x9e3779b9u;
  }
};

template <class Round>
__device__ unsigned mix_all(unsigned h) {
  Round round;
  unsigned r = 0;
  for (;;) {
    h = round(h, r);
    if (++r == ROUNDS) break;
  }
  return h;
}

extern "C" __global__ void hash_mix_rounds(unsigned* out, const unsigned* keys, int n) {
  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = mix_all<MixRound>(keys[i] ^ SEED);
}
