// Implied Black-Scholes volatility of European calls by bisection on [VOL_LO, VOL_HI] with
// the early exit of the kernel as written. Expert parameterization (hand-written): THREADS
// threads a block (any multiple of 32); each thread solves ITEMS options THREADS apart with
// independent brackets, stepping all of them together until each has stopped
// (instruction-level parallelism over the long log/exp/divide chain; an option stops by its
// own rule, as written). HOIST 1 computes each option's per-option terms (log(S / K) + r T,
// sqrt T, the discounted strike) once before its loop instead of every step. CDF 0 is the
// polynomial normal CDF with its sign branch (as written), 1 the library's normcdff.
// FAST_MATH 1 uses the hardware __expf/__logf and a fast divide.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS. Defaults: as written.
#ifndef THREADS
#define THREADS 192
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef HOIST
#define HOIST 0
#endif
#ifndef CDF
#define CDF 0
#endif
#ifndef FAST_MATH
#define FAST_MATH 0
#endif
#define RATE 0.03f
#define VOL_LO 0.01f
#define VOL_HI 2.0f
#define VOL_TOL 1.0e-5f
#define PRICE_TOL 1.0e-6f
#define MAX_STEPS 40

#if FAST_MATH
#define EXP(v) __expf(v)
#define LOG(v) __logf(v)
#define DIV(a, b) __fdividef(a, b)
#else
#define EXP(v) expf(v)
#define LOG(v) logf(v)
#define DIV(a, b) ((a) / (b))
#endif

__device__ __forceinline__ float norm_cdf(float x) {
#if CDF
  return normcdff(x);
#else
  const float a = fabsf(x);
  const float k = DIV(1.0f, 1.0f + 0.2316419f * a);
  const float poly =
      k * (0.319381530f + k * (-0.356563782f + k * (1.781477937f + k * (-1.821255978f +
                                                                        k * 1.330274429f))));
  const float tail = 0.3989422804f * EXP(-0.5f * a * a) * poly;
  return x >= 0.0f ? 1.0f - tail : tail;
#endif
}

// One option's fixed terms: log(S / K) + r T, sqrt T and K exp(-r T).
struct Option {
  float S, drift, root_t, T, disc_k;
};

__device__ __forceinline__ Option make_option(float S, float K, float T) {
  Option o;
  o.S = S;
  o.T = T;
  o.root_t = sqrtf(T);
  o.drift = LOG(DIV(S, K)) + RATE * T;
  o.disc_k = K * EXP(-RATE * T);
  return o;
}

__device__ __forceinline__ float call_price(const Option& o, float S, float K, float T,
                                            float vol) {
#if HOIST
  const float d1 = DIV(o.drift + 0.5f * vol * vol * o.T, vol * o.root_t);
  const float d2 = d1 - vol * o.root_t;
  return o.S * norm_cdf(d1) - o.disc_k * norm_cdf(d2);
#else
  const float root_t = sqrtf(T);
  const float d1 = DIV(LOG(DIV(S, K)) + (RATE + 0.5f * vol * vol) * T, vol * root_t);
  const float d2 = d1 - vol * root_t;
  return S * norm_cdf(d1) - K * EXP(-RATE * T) * norm_cdf(d2);
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
implied_vol_bisect(float* __restrict__ vol, const float* __restrict__ price,
                   const float* __restrict__ spot, const float* __restrict__ strike,
                   const float* __restrict__ years, int n) {
  const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  float P[ITEMS], S[ITEMS], K[ITEMS], T[ITEMS], lo[ITEMS], hi[ITEMS];
  bool live[ITEMS];
  Option opt[ITEMS];
#pragma unroll
  for (int q = 0; q < ITEMS; ++q) {
    const int i = base + q * THREADS;
    const bool in = i < n;
    P[q] = in ? __ldg(price + i) : 1.0f;
    S[q] = in ? __ldg(spot + i) : 100.0f;
    K[q] = in ? __ldg(strike + i) : 100.0f;
    T[q] = in ? __ldg(years + i) : 1.0f;
    lo[q] = VOL_LO;
    hi[q] = VOL_HI;
    live[q] = in;
#if HOIST
    opt[q] = make_option(S[q], K[q], T[q]);
#endif
  }
  for (int step = 0; step < MAX_STEPS; ++step) {
    bool any = false;
#pragma unroll
    for (int q = 0; q < ITEMS; ++q) {
      if (live[q] && hi[q] - lo[q] > VOL_TOL) {
        const float mid = 0.5f * (lo[q] + hi[q]);
        const float diff = call_price(opt[q], S[q], K[q], T[q], mid) - P[q];
        if (fabsf(diff) < PRICE_TOL * P[q]) {
          lo[q] = mid;
          hi[q] = mid;
          live[q] = false;
        } else if (diff > 0.0f) {
          hi[q] = mid;
        } else {
          lo[q] = mid;
        }
      } else {
        live[q] = false;
      }
      any = any || live[q];
    }
    if (!any) break;
  }
#pragma unroll
  for (int q = 0; q < ITEMS; ++q) {
    const int i = base + q * THREADS;
    if (i < n) vol[i] = 0.5f * (lo[q] + hi[q]);
  }
}
