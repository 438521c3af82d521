// Mean of a periodic 64-knot Catmull-Rom spline over 64 golden-rotation points from u[i].
// Expert parameterization (hand-written): THREADS a block, a grid of ceil(n / (THREADS *
// SPAN)) blocks (SPAN values a thread over the grid-stride loop), ITEMS of a thread's values
// evaluated side by side (independent chains sharing each orbit offset), and the sample
// loop unrolled by UNROLL.
// Launch: grid = ceil(n / (THREADS * SPAN)), block = THREADS.
// Defaults: the kernel as written (256 threads, eight values a thread, one at a time).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef SPAN
#define SPAN 8
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#define KNOTS 64
#define SAMPLES 64
#define STEP 0.61803398875f

static __device__ __forceinline__ float wrap_unit(float t) { return t >= 1.0f ? t - 1.0f : t; }

static __device__ __forceinline__ float catmull_rom(const float* knots, float t) {
  const float s = t * KNOTS;
  const int i = min((int)s, KNOTS - 1);
  const float f = s - i;
  const float p0 = knots[(i + KNOTS - 1) & (KNOTS - 1)];
  const float p1 = knots[i];
  const float p2 = knots[(i + 1) & (KNOTS - 1)];
  const float p3 = knots[(i + 2) & (KNOTS - 1)];
  const float c1 = 0.5f * (p2 - p0);
  const float c2 = p0 - 2.5f * p1 + 2.0f * p2 - 0.5f * p3;
  const float c3 = 0.5f * (p3 - p0) + 1.5f * (p1 - p2);
  return ((c3 * f + c2) * f + c1) * f + p1;
}

extern "C" __global__ void __launch_bounds__(THREADS) crspline_rotmean(
    float* __restrict__ out, const float* __restrict__ u, const float* __restrict__ table,
    int n) {
  __shared__ float knots[KNOTS];
  for (int j = threadIdx.x; j < KNOTS; j += THREADS) knots[j] = table[j];
  __syncthreads();
  const int stride = gridDim.x * THREADS;
  for (int base = blockIdx.x * THREADS + threadIdx.x; base < n; base += stride * ITEMS) {
    float v[ITEMS], total[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int i = base + j * stride;
      v[j] = i < n ? __ldg(u + i) : 0.0f;
      total[j] = 0.0f;
    }
    float offset = 0.0f;
#pragma unroll 1
    for (int k0 = 0; k0 < SAMPLES; k0 += UNROLL) {
#pragma unroll
      for (int k = 0; k < UNROLL; ++k) {
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) total[j] += catmull_rom(knots, wrap_unit(v[j] + offset));
        offset = wrap_unit(offset + STEP);
      }
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int i = base + j * stride;
      if (i < n) out[i] = total[j] * (1.0f / SAMPLES);
    }
  }
}
