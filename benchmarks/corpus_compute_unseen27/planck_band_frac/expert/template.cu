// Fraction of a black body's power in the band [lam_lo, lam_hi] um at T[i] K:
// F(lam_hi T) - F(lam_lo T), F by the small-x expansion below x = c2 / (lambda T) = 2 and
// the exponential series (until a term is below 1e-7 of the sum, at most 32) from 2 up;
// 0 at or below 0 K.
// Expert parameterization (hand-written): THREADS a block, ITEMS temperatures a thread
// (THREADS apart: coalesced); MINB blocks an SM asked of the compiler (__launch_bounds__'
// second argument); FAST = 1 takes __fdividef for c2 / (lambda T) and __expf for e^(-x);
// UNROLL = 1 unrolls the 32-term series loop whole, so each 1 / n is a folded constant
// (the same float IEEE division gives) and the break stays.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = (THREADS).
// Defaults: the kernel as written (256 threads, one temperature a thread).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef MINB
#define MINB 1
#endif
#ifndef FAST
#define FAST 0
#endif
#ifndef UNROLL
#define UNROLL 0
#endif

#define C2_UM_K 14387.769f
#define FIFTEEN_OVER_PI4 0.15398973382026503f

static __device__ __forceinline__ float fraction_below(float lambda_t)
{
#if FAST
    const float x = __fdividef(C2_UM_K, lambda_t);
#else
    const float x = C2_UM_K / lambda_t;
#endif
    if (x < 2.0f) {
        const float x2 = x * x;
        const float poly = 1.0f / 3.0f - x / 8.0f + x2 / 60.0f - x2 * x2 / 5040.0f +
                           x2 * x2 * x2 / 272160.0f - x2 * x2 * x2 * x2 / 13305600.0f;
        return 1.0f - FIFTEEN_OVER_PI4 * x * x2 * poly;
    }
#if FAST
    const float e = __expf(-x);
#else
    const float e = expf(-x);
#endif
    float en = 1.0f;
    float sum = 0.0f;
#if UNROLL
#pragma unroll
#else
#pragma unroll 1
#endif
    for (int n = 1; n <= 32; ++n) {
        en *= e;
        const float inv = 1.0f / (float)n;
        const float term = en * inv * (x * x * x + 3.0f * x * x * inv + 6.0f * x * inv * inv +
                                       6.0f * inv * inv * inv);
        sum += term;
        if (term < 1e-7f * sum)
            break;
    }
    return FIFTEEN_OVER_PI4 * sum;
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
planck_band_frac(float *__restrict__ frac, const float *__restrict__ T, float lam_lo,
                 float lam_hi, size_t n)
{
    const size_t base = (size_t)blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const size_t i = base + (size_t)k * THREADS;
        if (i < n) {
            const float t = T[i];
            frac[i] = t <= 0.0f ? 0.0f
                                : fraction_below(lam_hi * t) - fraction_below(lam_lo * t);
        }
    }
}
