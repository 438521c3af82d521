// Principal Lambert W per element: the kernel's three-way start, then Halley steps until the
// step is below 4e-7 relative (at most 12). Expert parameterization (hand-written): THREADS
// per block (multiples of 32), ITEMS elements per thread (element k at k * THREADS past the
// thread's first: coalesced) iterated in lockstep with independent state, so the exp and
// divide latencies of one element hide behind the others' (each element takes exactly the
// steps it takes as written: a finished one is masked, not stepped), and FAST_MATH 1 uses
// the hardware exp / log approximations and the fast divide.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written (256 threads, one element a thread, accurate math).
#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef FAST_MATH
#define FAST_MATH 0
#endif
#if FAST_MATH
#define EXP(v) __expf(v)
#define LOG(v) __logf(v)
#define DIV(a, b) __fdividef(a, b)
#else
#define EXP(v) expf(v)
#define LOG(v) logf(v)
#define DIV(a, b) ((a) / (b))
#endif

__device__ __forceinline__ float lambert_start(float x) {
  if (x < -0.32f) {
    const float p = sqrtf(fmaxf(2.0f * (2.718281828f * x + 1.0f), 0.0f));
    return -1.0f + p * (1.0f + p * (-1.0f / 3.0f + p * (11.0f / 72.0f)));
  }
  if (x < 3.0f) {
    const float l = log1pf(x);
    return l * (1.0f - DIV(log1pf(l), 2.0f + l));
  }
  const float l1 = LOG(x);
  const float l2 = LOG(l1);
  return l1 - l2 + DIV(l2, l1);
}

// one Halley step on w; false once the element is done (as the kernel as written breaks)
__device__ __forceinline__ bool halley_step(float& w, float x) {
  const float ew = EXP(w);
  const float f = w * ew - x;
  const float wp1 = w + 1.0f;
  if (wp1 < 1e-6f) return false;
  const float step = DIV(f, ew * wp1 - DIV((w + 2.0f) * f, 2.0f * wp1));
  w -= step;
  return fabsf(step) > 4e-7f * (1.0f + fabsf(w));
}

extern "C" __global__ void __launch_bounds__(THREADS)
lambertw_halley(float* __restrict__ w, const float* __restrict__ x, int n) {
  const size_t first = (size_t)blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  float xv[ITEMS], wv[ITEMS];
  bool live[ITEMS];
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const size_t i = first + (size_t)k * THREADS;
    xv[k] = i < (size_t)n ? __ldg(x + i) : 0.0f;  // W(0) = 0: a finished spare element
    wv[k] = lambert_start(xv[k]);
    live[k] = i < (size_t)n;
  }
  for (int it = 0; it < 12; ++it) {
    bool any = false;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      if (live[k]) live[k] = halley_step(wv[k], xv[k]);
      any |= live[k];
    }
    if (!any) break;
  }
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const size_t i = first + (size_t)k * THREADS;
    if (i < (size_t)n) w[i] = wv[k];
  }
}
