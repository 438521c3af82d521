// Implied Black-Scholes volatility of European calls: for each option i (spot S, strike K,
// years to expiry T, market price P) find vol in [VOL_LO, VOL_HI] with
// call_price(S, K, T, vol) = P by bisection (the call price grows with vol). The bracket is
// halved until it is narrower than VOL_TOL or MAX_STEPS steps were taken; an option whose
// midpoint prices within PRICE_TOL (relative) of P stops there. The normal CDF is the
// Abramowitz-Stegun polynomial 26.2.17 (absolute error below 7.5e-8), mirrored for x < 0.
// Launch: grid = (n + 191) / 192, block = 192.
#define RATE 0.03f
#define VOL_LO 0.01f
#define VOL_HI 2.0f
#define VOL_TOL 1.0e-5f
#ifndef PRICE_TOL
#define PRICE_TOL 1.0e-6f
#endif
#ifndef MAX_STEPS
#define MAX_STEPS 40
#endif

__device__ float norm_cdf(float x) {
  const float a = fabsf(x);
  const float k = 1.0f / (1.0f + 0.2316419f * a);
  const float poly =
      k * (0.319381530f + k * (-0.356563782f + k * (1.781477937f + k * (-1.821255978f +
                                                                        k * 1.330274429f))));
  const float tail = 0.3989422804f * expf(-0.5f * a * a) * poly;
  if (x >= 0.0f) return 1.0f - tail;
  return tail;
}

__device__ float call_price(float S, float K, float T, float vol) {
  const float root_t = sqrtf(T);
  const float d1 = (logf(S / K) + (RATE + 0.5f * vol * vol) * T) / (vol * root_t);
  const float d2 = d1 - vol * root_t;
  return S * norm_cdf(d1) - K * expf(-RATE * T) * norm_cdf(d2);
}

extern "C" __global__ void implied_vol_bisect(float* vol, const float* price, const float* spot,
                                              const float* strike, const float* years, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float P = price[i], S = spot[i], K = strike[i], T = years[i];
    float lo = VOL_LO, hi = VOL_HI;
    int step = 0;
    while (hi - lo > VOL_TOL && step < MAX_STEPS) {
      const float mid = 0.5f * (lo + hi);
      const float diff = call_price(S, K, T, mid) - P;
      if (fabsf(diff) < PRICE_TOL * P) {
        lo = mid;
        hi = mid;
        break;
      }
      if (diff > 0.0f)
        hi = mid;
      else
        lo = mid;
      ++step;
    }
    vol[i] = 0.5f * (lo + hi);
  }
}
