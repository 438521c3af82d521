// E[b] = exp(A[b]) for a batch of 4 x 4 matrices by the Taylor series, summed until a
// term's largest entry is 1e-8 (at most 40 terms), as the kernel as written does.
// Expert parameterization (hand-written): THREADS matrices a block, one a thread, the
// product loops fully unrolled so the matrices live in registers; STAGE 1 loads and
// stores the block's matrices through shared memory (rows of 17 floats: coalesced global
// accesses, no bank conflicts), STAGE 0 reads each thread's 16 floats directly; RECIP 1
// multiplies each term by 1 / k instead of dividing; MIN_BLOCKS is the launch bound's
// resident-block hint.
// Launch: grid = ceil(nb / THREADS), block = THREADS.
// Defaults: 128 threads a block, direct loads, divisions (the kernel as written's).

#ifndef THREADS
#define THREADS 128
#endif
#ifndef STAGE
#define STAGE 0
#endif
#ifndef RECIP
#define RECIP 0
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
expm4_taylor(float* __restrict__ E, const float* __restrict__ A, int nb) {
  const int b = blockIdx.x * THREADS + threadIdx.x;
  float a[16], term[16], sum[16];
#if STAGE
  __shared__ float st[THREADS][17];
  const size_t first = (size_t)blockIdx.x * THREADS * 16;
  const size_t total = (size_t)nb * 16;
  for (int f = threadIdx.x; f < THREADS * 16; f += THREADS)
    st[f / 16][f % 16] = first + f < total ? A[first + f] : 0.0f;
  __syncthreads();
#pragma unroll
  for (int e = 0; e < 16; ++e) a[e] = st[threadIdx.x][e];
#else
  if (b >= nb) return;
#pragma unroll
  for (int e = 0; e < 16; ++e) a[e] = A[(size_t)b * 16 + e];
#endif
#pragma unroll
  for (int e = 0; e < 16; ++e) {
    term[e] = (e % 5 == 0) ? 1.0f : 0.0f;
    sum[e] = term[e];
  }
  int k = 1;
  float largest;
  do {
    float next[16];
#if RECIP
    const float inv = 1.0f / (float)k;
#endif
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        float s = 0.0f;
#pragma unroll
        for (int q = 0; q < 4; ++q) s += term[r * 4 + q] * a[q * 4 + c];
#if RECIP
        next[r * 4 + c] = s * inv;
#else
        next[r * 4 + c] = s / (float)k;
#endif
      }
    }
    largest = 0.0f;
#pragma unroll
    for (int e = 0; e < 16; ++e) {
      term[e] = next[e];
      sum[e] += term[e];
      largest = fmaxf(largest, fabsf(term[e]));
    }
    ++k;
  } while (largest > 1e-8f && k <= 40);
#if STAGE
  __syncthreads();
#pragma unroll
  for (int e = 0; e < 16; ++e) st[threadIdx.x][e] = sum[e];
  __syncthreads();
  for (int f = threadIdx.x; f < THREADS * 16; f += THREADS)
    if (first + f < total) E[first + f] = st[f / 16][f % 16];
#else
#pragma unroll
  for (int e = 0; e < 16; ++e) E[(size_t)b * 16 + e] = sum[e];
#endif
}
