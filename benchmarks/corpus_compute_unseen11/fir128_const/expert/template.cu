// y[c][i] = sum_t taps[t] * x[c][i + t], 128 taps in constant memory, x [ch, n + 127].
// Expert parameterization (hand-written): a block of THREADS threads computes THREADS *
// ITEMS consecutive outputs of one channel (blockIdx.y). SMEM 1 stages the block's inputs
// (its outputs plus 127) in shared memory once, zeros past the channel's end; SMEM 0 reads
// them through the cache. CONTIG 0 gives a thread the outputs threadIdx.x + m * THREADS (a
// tap read once for ITEMS multiply-adds, neighbouring threads on neighbouring words);
// CONTIG 1 gives it ITEMS consecutive outputs and slides a window of ITEMS inputs through
// registers (one new input per tap for ITEMS multiply-adds). Every output adds its taps in
// order, as the kernel as written does.
// Launch: grid = (ceil(n / (THREADS * ITEMS)), ch), block = THREADS.
// Defaults: the kernel as written (256 threads, one output each, inputs from the cache).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef SMEM
#define SMEM 0
#endif
#ifndef CONTIG
#define CONTIG 0
#endif
#define FIR_TAPS 128
#define SPAN (THREADS * ITEMS)

__constant__ float taps[FIR_TAPS];

extern "C" __global__ void __launch_bounds__(THREADS)
fir128_const(float* __restrict__ y, const float* __restrict__ x, int n) {
  const int total = n + FIR_TAPS - 1;
  const float* xc = x + (size_t)blockIdx.y * total;
  float* yc = y + (size_t)blockIdx.y * n;
  const int base = blockIdx.x * SPAN;
#if SMEM
  __shared__ float win[SPAN + FIR_TAPS - 1];
  for (int e = threadIdx.x; e < SPAN + FIR_TAPS - 1; e += THREADS)
    win[e] = base + e < total ? xc[base + e] : 0.0f;
  __syncthreads();
#define FETCH(idx) win[idx]
#else
#define FETCH(idx) (base + (idx) < total ? xc[base + (idx)] : 0.0f)
#endif
  float acc[ITEMS];
#pragma unroll
  for (int m = 0; m < ITEMS; ++m) acc[m] = 0.0f;
#if CONTIG
  const int o0 = threadIdx.x * ITEMS;
  float w[ITEMS];
#pragma unroll
  for (int m = 0; m < ITEMS; ++m) w[m] = FETCH(o0 + m);
#pragma unroll
  for (int t = 0; t < FIR_TAPS; ++t) {
    const float h = taps[t];
#pragma unroll
    for (int m = 0; m < ITEMS; ++m) acc[m] += h * w[m];
    if (t + 1 < FIR_TAPS) {
#pragma unroll
      for (int m = 0; m + 1 < ITEMS; ++m) w[m] = w[m + 1];
      w[ITEMS - 1] = FETCH(o0 + ITEMS + t);
    }
  }
#pragma unroll
  for (int m = 0; m < ITEMS; ++m)
    if (base + o0 + m < n) yc[base + o0 + m] = acc[m];
#else
#pragma unroll 16
  for (int t = 0; t < FIR_TAPS; ++t) {
    const float h = taps[t];
#pragma unroll
    for (int m = 0; m < ITEMS; ++m) acc[m] += h * FETCH(threadIdx.x + m * THREADS + t);
  }
#pragma unroll
  for (int m = 0; m < ITEMS; ++m) {
    const int o = threadIdx.x + m * THREADS;
    if (base + o < n) yc[base + o] = acc[m];
  }
#endif
#undef FETCH
}
