// X[b][k] = direct 64-point complex DFT of each signal of a batch, twiddles in shared memory.
// Expert parameterization (hand-written): a block of (64 / KT, BATCHES) threads owns
// BATCHES signals; each thread sums KT bins of its signal (k = tx + m * 64 / KT), so every
// input value loaded serves KT bins; STAGE 1 copies the block's signals to shared memory
// first (coalesced float2 loads) instead of reading them through the cache per bin; the
// loop over the 64 inputs is unrolled by UNROLL. Every bin adds its 64 terms in order.
// Launch: grid = ceil(batch / BATCHES), block = (64 / KT, BATCHES).
// Defaults: the kernel as written (4 signals a block, a bin a thread, from global).

#ifndef BATCHES
#define BATCHES 4
#endif
#ifndef KT
#define KT 1
#endif
#ifndef STAGE
#define STAGE 0
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#define NPT 64
#define TX (NPT / KT)

extern "C" __global__ void
dft64_batched(float* __restrict__ out, const float* __restrict__ in, int batch) {
  __shared__ float2 tw[NPT];
  const int tid = threadIdx.y * TX + threadIdx.x;
  for (int t = tid; t < NPT; t += TX * BATCHES) {
    const float angle = -6.28318530717958647f * (float)t / 64.0f;
    tw[t] = make_float2(cosf(angle), sinf(angle));
  }
  const int first = blockIdx.x * BATCHES;
#if STAGE
  __shared__ float2 xs[BATCHES * NPT];
  const float2* src = reinterpret_cast<const float2*>(in) + (size_t)first * NPT;
  for (int e = tid; e < BATCHES * NPT; e += TX * BATCHES)
    if (first + e / NPT < batch) xs[e] = src[e];
#endif
  __syncthreads();
  const int b = first + threadIdx.y;
  if (b >= batch) return;
#if STAGE
  const float2* xb = xs + threadIdx.y * NPT;
#else
  const float2* xb = reinterpret_cast<const float2*>(in) + (size_t)b * NPT;
#endif
  float re[KT], im[KT];
#pragma unroll
  for (int m = 0; m < KT; ++m) { re[m] = 0.0f; im[m] = 0.0f; }
  for (int j0 = 0; j0 < NPT; j0 += UNROLL) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int j = j0 + u;
      const float2 v = xb[j];
#pragma unroll
      for (int m = 0; m < KT; ++m) {
        const int k = threadIdx.x + m * TX;
        const float2 w = tw[(j * k) & (NPT - 1)];
        re[m] += v.x * w.x - v.y * w.y;
        im[m] += v.x * w.y + v.y * w.x;
      }
    }
  }
  float2* yb = reinterpret_cast<float2*>(out) + (size_t)b * NPT;
#pragma unroll
  for (int m = 0; m < KT; ++m) yb[threadIdx.x + m * TX] = make_float2(re[m], im[m]);
}
