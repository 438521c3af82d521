// Counting pass: counts[b] = how many of the CHUNK consecutive elements of x that block b
// owns (elements b * CHUNK up to the end of x) lie in the band [BAND_LO, BAND_HI). Each
// thread counts its share of the chunk, then adds it to one shared counter with atomicAdd;
// thread 0 writes the block's count. The host adds the ceil(n / CHUNK) counts.
// Launch: grid = (n + CHUNK - 1) / CHUNK, block = 128.
#define CHUNK 4096
#define BAND_LO -0.5f
#define BAND_HI 1.25f

extern "C" __global__ void band_count(int* counts, const float* x, int n) {
  __shared__ int block_total;
  if (threadIdx.x == 0) block_total = 0;
  __syncthreads();
  const float* chunk = x + (size_t)blockIdx.x * CHUNK;
  const int len = min(CHUNK, n - (int)blockIdx.x * CHUNK);
  int mine = 0;
  for (int i = threadIdx.x; i < len; i += blockDim.x) {
    const float v = chunk[i];
    if (v >= BAND_LO && v < BAND_HI) mine++;
  }
  atomicAdd(&block_total, mine);
  __syncthreads();
  if (threadIdx.x == 0) counts[blockIdx.x] = block_total;
}
