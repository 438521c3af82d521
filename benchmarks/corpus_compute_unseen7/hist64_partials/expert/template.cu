// Per-chunk histograms of x in 64 bins of width 1/8 over [-4, 4), ends clamped, one row of
// counts per 8192-element chunk slot. Expert parameterization (hand-written): a block of
// THREADS threads takes CHUNKS consecutive chunks, reads them VEC floats at a time (VEC 1
// scalar as written; 2 and 4 float2 / float4: a block's range starts a multiple of 32 KB
// into the buffer, so it is aligned; the elements past the last whole vector are read one
// at a time) and counts into COPIES sub-histograms in shared memory (warp w adds to copy
// w % COPIES; rows padded by one counter so the copies' same bins sit in different banks).
// It writes the summed counts to the row of its first chunk and zeros to its other rows, so
// the host's per-bin sums are right. The bin is computed exactly as written.
// Launch: grid = ceil(n / (8192 * CHUNKS)), block = THREADS. Defaults: the kernel as written.
#ifndef CHUNKS
#define CHUNKS 1
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef COPIES
#define COPIES 1
#endif
#define CHUNK 8192
#define SPAN (CHUNK * CHUNKS)
#define BINS 64
#define LO (-4.0f)
#define BINS_PER_UNIT 8.0f

__device__ __forceinline__ void count(int* hist, float v) {
  int bin = (int)floorf((v - LO) * BINS_PER_UNIT);
  bin = min(max(bin, 0), BINS - 1);
  atomicAdd(&hist[bin], 1);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hist64_partials(int* __restrict__ counts, const float* __restrict__ x, int n) {
  __shared__ int hist[COPIES][BINS + 1];
  const int tid = threadIdx.x;
  for (int e = tid; e < COPIES * (BINS + 1); e += THREADS)
    hist[e / (BINS + 1)][e % (BINS + 1)] = 0;
  __syncthreads();
  int* mine = hist[(tid / 32) % COPIES];
  const size_t begin = (size_t)blockIdx.x * SPAN;
  const int count_here = (int)min((size_t)SPAN, (size_t)n - begin);
  const float* span = x + begin;
#if VEC == 1
  for (int j = tid; j < count_here; j += THREADS) count(mine, __ldg(span + j));
#else
  const int whole = count_here / VEC;
  for (int g = tid; g < whole; g += THREADS) {
#if VEC == 4
    const float4 v = __ldg(reinterpret_cast<const float4*>(span) + g);
    count(mine, v.x);
    count(mine, v.y);
    count(mine, v.z);
    count(mine, v.w);
#else
    const float2 v = __ldg(reinterpret_cast<const float2*>(span) + g);
    count(mine, v.x);
    count(mine, v.y);
#endif
  }
  for (int j = whole * VEC + tid; j < count_here; j += THREADS) count(mine, __ldg(span + j));
#endif
  __syncthreads();
  const int rows = (n + CHUNK - 1) / CHUNK;
  const size_t row0 = (size_t)blockIdx.x * CHUNKS;
  for (int bin = tid; bin < BINS; bin += THREADS) {
    int total = 0;
#pragma unroll
    for (int k = 0; k < COPIES; ++k) total += hist[k][bin];
    counts[row0 * BINS + bin] = total;
  }
  // the other rows of the block's chunks that exist: zeros
  for (int e = tid; e < (CHUNKS - 1) * BINS; e += THREADS) {
    const size_t row = row0 + 1 + e / BINS;
    if (row < (size_t)rows) counts[row * BINS + e % BINS] = 0;
  }
}
