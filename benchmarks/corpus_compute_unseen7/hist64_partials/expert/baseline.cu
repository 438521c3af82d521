// Histogram partials: block b counts its CHUNK consecutive elements of x into 64 equal
// bins of width 1/8 over [-4, 4) (values below -4 land in bin 0, values at or above 4 in
// bin 63) with one shared histogram and shared-memory atomics, then writes its 64 counts to
// counts[b][0..63]; the host adds the ceil(n / CHUNK) rows.
// Launch: grid = (n + 8191) / 8192, block = 256.
#define CHUNK 8192
#define THREADS 256
#define BINS 64
#define LO (-4.0f)
#define BINS_PER_UNIT 8.0f

extern "C" __global__ void hist64_partials(int* counts, const float* x, int n) {
  __shared__ int hist[BINS];
  if (threadIdx.x < BINS) hist[threadIdx.x] = 0;
  __syncthreads();
  const long long begin = (long long)blockIdx.x * CHUNK;
  long long end = begin + CHUNK;
  if (end > n) end = n;
  for (long long j = begin + threadIdx.x; j < end; j += THREADS) {
    int bin = (int)floorf((x[j] - LO) * BINS_PER_UNIT);
    if (bin < 0) bin = 0;
    if (bin > BINS - 1) bin = BINS - 1;
    atomicAdd(&hist[bin], 1);
  }
  __syncthreads();
  if (threadIdx.x < BINS) counts[(long long)blockIdx.x * BINS + threadIdx.x] = hist[threadIdx.x];
}
