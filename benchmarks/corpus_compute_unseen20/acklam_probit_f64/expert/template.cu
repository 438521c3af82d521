/*
 * Probit by Acklam's approximations and ACK_REFINE Halley steps in double.
 * Expert parameterization (hand-written): THREADS a block, ITEMS values a thread strided by
 * THREADS (independent dependency chains interleaved through each step), and HOIST=1
 * computing the Halley steps of all ITEMS values side by side (erfc and exp of each step
 * issued together) instead of one value after the other.
 * Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
 * Defaults: the kernel as written (128 threads, one value a thread).
 */

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef HOIST
#define HOIST 0
#endif
#define ACK_REFINE (2)
#define ACK_PLOW (0.02425)
#define ACK_PHIGH (1.0 - ACK_PLOW)
#define ACK_SQRT2 (1.4142135623730951)
#define ACK_SQRT2PI (2.5066282746310002)

static __device__ __forceinline__ double ack_horner(const double *c, int m, double t)
{
    double s = c[m];
#pragma unroll
    for (int k = m - 1; k >= 0; --k)
        s = s * t + c[k];
    return s;
}

static __device__ __forceinline__ double ack_initial(double p)
{
    const double a[6] = {2.506628277459239e+00, -3.066479806614716e+01, 1.383577518672690e+02,
                         -2.759285104469687e+02, 2.209460984245205e+02, -3.969683028665376e+01};
    const double b[6] = {1.0, -1.328068155288572e+01, 6.680131188771972e+01,
                         -1.556989798598866e+02, 1.615858368580409e+02, -5.447609879822406e+01};
    const double c[6] = {2.938163982698783e+00, 4.374664141464968e+00, -2.549732539343734e+00,
                         -2.400758277161838e+00, -3.223964580411365e-01, -7.784894002430293e-03};
    const double d[5] = {1.0, 3.754408661907416e+00, 2.445134137142996e+00,
                         3.224671290700398e-01, 7.784695709041462e-03};
    if (p < ACK_PLOW) {
        const double q = sqrt(-2.0 * log(p));
        return ack_horner(c, 5, q) / ack_horner(d, 4, q);
    }
    if (p > ACK_PHIGH) {
        const double q = sqrt(-2.0 * log(1.0 - p));
        return -ack_horner(c, 5, q) / ack_horner(d, 4, q);
    }
    const double q = p - 0.5, r = q * q;
    return q * ack_horner(a, 5, r) / ack_horner(b, 5, r);
}

static __device__ __forceinline__ double ack_halley(double x, double p)
{
    const double e = 0.5 * erfc(-x / ACK_SQRT2) - p;
    const double u = e * ACK_SQRT2PI * exp(0.5 * x * x);
    return x - u / (1.0 + 0.5 * x * u);
}

extern "C" __global__ void __launch_bounds__(THREADS)
acklam_probit_f64(float *__restrict__ x, const float *__restrict__ p, int n)
{
    const int first = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
    double v[ITEMS], pv[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const int i = first + j * THREADS;
        pv[j] = i < n ? (double)__ldg(p + i) : 0.5;
        v[j] = ack_initial(pv[j]);
    }
#if HOIST
#pragma unroll
    for (int it = ACK_REFINE; it > 0; --it)
#pragma unroll
        for (int j = 0; j < ITEMS; ++j)
            v[j] = ack_halley(v[j], pv[j]);
#else
#pragma unroll
    for (int j = 0; j < ITEMS; ++j)
#pragma unroll
        for (int it = ACK_REFINE; it > 0; --it)
            v[j] = ack_halley(v[j], pv[j]);
#endif
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const int i = first + j * THREADS;
        if (i < n)
            x[i] = (float)v[j];
    }
}
