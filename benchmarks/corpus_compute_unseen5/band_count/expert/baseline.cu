// Counting pass: counts[b] = how many of the kChunk consecutive elements of x that block b
// owns (elements b * kChunk up to the end of x) lie in the band [kBandLo, kBandHi). Each
// thread counts its share of the chunk, then adds it to one shared counter with atomicAdd;
// thread 0 writes the block's count. The host adds the ceil(n / kChunk) counts.
// Launch: grid = (n + 4095) / 4096, block = 128.
constexpr int kChunk = 4096;
constexpr float kBandLo = -0.5f;
constexpr float kBandHi = 1.25f;

extern "C" __global__ void band_count(int* counts, const float* x, int n) {
  __shared__ int block_total;
  if (threadIdx.x == 0) block_total = 0;
  __syncthreads();
  const float* chunk = x + (size_t)blockIdx.x * kChunk;
  const int len = min(kChunk, n - (int)blockIdx.x * kChunk);
  int mine = 0;
  for (int i = threadIdx.x; i < len; i += blockDim.x) {
    const float v = chunk[i];
    if (v >= kBandLo && v < kBandHi) mine++;
  }
  atomicAdd(&block_total, mine);
  __syncthreads();
  if (threadIdx.x == 0) counts[blockIdx.x] = block_total;
}
