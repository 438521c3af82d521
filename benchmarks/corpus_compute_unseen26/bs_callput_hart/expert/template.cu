// Black-Scholes-Merton prices of European calls (kind 0) and puts, in double; expired
// options at their intrinsic value.
// Expert parameterization (hand-written): THREADS a block; ITEMS options a thread, a block
// width apart (coalesced), their inputs all loaded before any is priced; PARITY = 1
// prices a put from its call by put-call parity (every option takes the same two CDFs of
// d1 and d2: no divergent call / put branch); CND = 1 takes the CDF as 0.5 erfc(-x / sqrt 2)
// (libdevice's erfc) instead of Hart's ranges; MINB blocks an SM asked of the compiler
// (__launch_bounds__' second argument: fewer registers, more warps to hide the double
// pipe's latency).
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = (THREADS).
// Defaults: the kernel as written (128 threads, one option, Hart's CDF, the call / put
// branch, no minimum).

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef PARITY
#define PARITY 0
#endif
#ifndef CND
#define CND 0
#endif
#ifndef MINB
#define MINB 1
#endif

static __device__ __forceinline__ double cnd(double x)
{
#if CND == 1
    return 0.5 * erfc(-0.70710678118654752440 * x);
#else
    const double ax = fabs(x);
    double c = 0.0;
    if (ax <= 37.0) {
        const double e = exp(-0.5 * ax * ax);
        if (ax < 7.07106781186547) {
            double p = 3.52624965998911e-02 * ax + 0.700383064443688;
            p = p * ax + 6.37396220353165;
            p = p * ax + 33.912866078383;
            p = p * ax + 112.079291497871;
            p = p * ax + 221.213596169931;
            p = p * ax + 220.206867912376;
            double q = 8.83883476483184e-02 * ax + 1.75566716318264;
            q = q * ax + 16.064177579207;
            q = q * ax + 86.7807322029461;
            q = q * ax + 296.564248779674;
            q = q * ax + 637.333633378831;
            q = q * ax + 793.826512519948;
            q = q * ax + 440.413735824752;
            c = e * p / q;
        } else {
            double f = ax + 0.65;
            f = ax + 4.0 / f;
            f = ax + 3.0 / f;
            f = ax + 2.0 / f;
            f = ax + 1.0 / f;
            c = e / f / 2.506628274631;
        }
    }
    return x > 0.0 ? 1.0 - c : c;
#endif
}

static __device__ __forceinline__ double price_one(double S, double K, double T, double v,
                                                   bool put, double r, double q)
{
    if (T <= 0.0)
        return put ? fmax(K - S, 0.0) : fmax(S - K, 0.0);
    const double vsqrt = v * sqrt(T);
    const double d1 = (log(S / K) + (r - q + 0.5 * v * v) * T) / vsqrt;
    const double d2 = d1 - vsqrt;
    const double dfS = S * exp(-q * T);
    const double dfK = K * exp(-r * T);
#if PARITY
    const double call = dfS * cnd(d1) - dfK * cnd(d2);
    return put ? call - dfS + dfK : call;
#else
    return put ? dfK * cnd(-d2) - dfS * cnd(-d1) : dfS * cnd(d1) - dfK * cnd(d2);
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
bs_callput_hart(float *__restrict__ price, const float *__restrict__ spot,
                const float *__restrict__ strike, const float *__restrict__ expiry,
                const float *__restrict__ vol, const int *__restrict__ kind, float rate,
                float divy, int n)
{
    const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
    float s[ITEMS], k[ITEMS], t[ITEMS], v[ITEMS];
    int put[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const int i = base + j * THREADS;
        if (i < n) {
            s[j] = spot[i];
            k[j] = strike[i];
            t[j] = expiry[i];
            v[j] = vol[i];
            put[j] = kind[i];
        }
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const int i = base + j * THREADS;
        if (i < n)
            price[i] = (float)price_one(s[j], k[j], t[j], v[j], put[j] != 0, rate, divy);
    }
}
