// Fraction of a black body's emitted power that falls in the wavelength band
// [lam_lo, lam_hi] (micrometres) at temperature T[i] (kelvin): frac = F(lam_hi T) -
// F(lam_lo T), F(lambda T) the fraction below lambda (x = c2 / (lambda T)): for x >= 2 the
// series 15 / pi^4 sum_n e^(-n x) / n (x^3 + 3 x^2 / n + 6 x / n^2 + 6 / n^3), summed
// until a term falls below 1e-7 of the sum (at most 32 terms); below 2 the small-x
// expansion 1 - 15 / pi^4 x^3 (1/3 - x/8 + x^2/60 - x^4/5040 + x^6/272160 - x^8/13305600).
// A temperature at or below zero radiates nothing (frac 0). A branchy __device__ helper
// with an early-out, a data-dependent loop with a break, a size_t index and an early
// return past n; one temperature a thread.
// Launch: grid = ((n + 255) / 256), block = (256).

#define C2_UM_K 14387.769f                   // second radiation constant, um K
#define FIFTEEN_OVER_PI4 0.15398973382026503f // 15 / pi^4

__device__ float fraction_below(float lambda_t)
{
    const float x = C2_UM_K / lambda_t;
    if (x < 2.0f) {
        const float x2 = x * x;
        float poly = 1.0f / 3.0f - x / 8.0f + x2 / 60.0f - x2 * x2 / 5040.0f +
                     x2 * x2 * x2 / 272160.0f - x2 * x2 * x2 * x2 / 13305600.0f;
        return 1.0f - FIFTEEN_OVER_PI4 * x * x2 * poly;
    }
    const float e = expf(-x);
    float en = 1.0f; // e^(-n x)
    float sum = 0.0f;
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

extern "C" __global__ void planck_band_frac(float *frac, const float *T, float lam_lo,
                                            float lam_hi, size_t n)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float t = T[i];
    if (t <= 0.0f) {
        frac[i] = 0.0f;
        return;
    }
    frac[i] = fraction_below(lam_hi * t) - fraction_below(lam_lo * t);
}
