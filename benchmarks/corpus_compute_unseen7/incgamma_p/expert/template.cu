// Regularized lower incomplete gamma P(a, x) per element: the series for x < a + 1, else
// 1 - the Lentz continued fraction for Q(a, x), each iterated to kEps, at most kMaxIter
// steps. Expert parameterization (hand-written): THREADS threads a block; each thread takes
// ITEMS elements THREADS apart and iterates them side by side in one loop, each element with
// its own method, state and exit (the loop ends when every element of the thread is done),
// so independent division chains overlap; the loop is unrolled UNROLL times (the exit test
// stays in every step). Every element takes the same steps as in the kernel as written, so
// the results match it. FAST_MATH 1 uses __expf, __logf and __fdividef.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS. Defaults: as written.
#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef FAST_MATH
#define FAST_MATH 0
#endif
constexpr int kMaxIter = 300;
constexpr float kEps = 3.0e-7f;
constexpr float kTiny = 1.0e-30f;
// #pragma unroll takes a constant expression, not a macro
constexpr int kUnrollSteps = UNROLL;

#if FAST_MATH
#define DIV(num, den) __fdividef(num, den)
#define EXP(v) __expf(v)
#define LOG(v) __logf(v)
#else
#define DIV(num, den) ((num) / (den))
#define EXP(v) expf(v)
#define LOG(v) logf(v)
#endif

enum Method { kDone = 0, kSeries = 1, kFraction = 2 };

extern "C" __global__ void __launch_bounds__(THREADS, 1)
incgamma_p(float* __restrict__ p, const float* __restrict__ a, const float* __restrict__ x,
           int n) {
  const int first = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  // per element: its method and state (series: s0 = a + steps, s1 = term, s2 = sum;
  // fraction: s0 = b, s1 = c, s2 = d, s3 = h)
  float av[ITEMS], xv[ITEMS], s0[ITEMS], s1[ITEMS], s2[ITEMS], s3[ITEMS];
  int method[ITEMS];
#pragma unroll
  for (int u = 0; u < ITEMS; ++u) {
    const int i = first + u * THREADS;
    av[u] = i < n ? a[i] : 1.0f;
    xv[u] = i < n ? x[i] : 0.0f;
    s0[u] = s1[u] = s2[u] = s3[u] = 0.0f;
    method[u] = kDone;
    if (xv[u] <= 0.0f) continue;
    if (xv[u] < av[u] + 1.0f) {
      method[u] = kSeries;
      s0[u] = av[u];
      s1[u] = DIV(1.0f, av[u]);
      s2[u] = s1[u];
    } else {
      method[u] = kFraction;
      s0[u] = xv[u] + 1.0f - av[u];
      s1[u] = 1.0f / kTiny;
      s2[u] = DIV(1.0f, s0[u]);
      s3[u] = s2[u];
    }
  }
#pragma unroll (kUnrollSteps)
  for (int it = 1; it <= kMaxIter; ++it) {
    bool any = false;
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) {
      if (method[u] == kSeries) {
        s0[u] += 1.0f;
        s1[u] *= DIV(xv[u], s0[u]);
        s2[u] += s1[u];
        if (fabsf(s1[u]) < fabsf(s2[u]) * kEps) method[u] = kDone;
        any = true;
      } else if (method[u] == kFraction) {
        const float an = -it * (it - av[u]);
        s0[u] += 2.0f;
        float d = an * s2[u] + s0[u];
        if (fabsf(d) < kTiny) d = kTiny;
        float c = s0[u] + DIV(an, s1[u]);
        if (fabsf(c) < kTiny) c = kTiny;
        d = DIV(1.0f, d);
        const float step = d * c;
        s1[u] = c;
        s2[u] = d;
        s3[u] *= step;
        if (fabsf(step - 1.0f) < kEps) method[u] = kDone;
        any = true;
      }
    }
    if (!any) break;
  }
#pragma unroll
  for (int u = 0; u < ITEMS; ++u) {
    const int i = first + u * THREADS;
    if (i >= n) continue;
    if (xv[u] <= 0.0f) {
      p[i] = 0.0f;
      continue;
    }
    const float front = EXP(av[u] * LOG(xv[u]) - xv[u] - lgammaf(av[u]));
    p[i] = xv[u] < av[u] + 1.0f ? front * s2[u] : 1.0f - front * s3[u];
  }
}
