/*
 * Inverse of the standard normal distribution function (the probit), x = PHI^-1(p),
 * by P. J. Acklam's rational approximations (a central region and two tails), each
 * followed by ACK_REFINE Halley steps on PHI(x) - p, in double precision.
 * p[i] in (0, 1) as floats; x[i] = the probit as a float.
 * One value per thread, 128 threads per block.
 * Launch: grid = ((n + 127) / 128), block = (128).
 */

#define ACK_BLOCK (128)
#define ACK_REFINE (2)
#define ACK_PLOW (0.02425)
#define ACK_PHIGH (1.0 - ACK_PLOW)
#define ACK_SQRT2 (1.4142135623730951)
#define ACK_SQRT2PI (2.5066282746310002)

/* evaluates c[0] + c[1] t + ... + c[m] t^m by Horner's rule */
static __device__ double ack_horner(const double *c, int m, double t)
{
    double s;
    int k;

    s = c[m];
    for (k = m - 1; k >= 0; --k)
        s = s * t + c[k];
    return s;
}

/* Acklam's first approximation of the probit of p */
static __device__ double ack_initial(double p)
{
    /* coefficients, constant term first */
    const double a[6] = {2.506628277459239e+00, -3.066479806614716e+01, 1.383577518672690e+02,
                         -2.759285104469687e+02, 2.209460984245205e+02, -3.969683028665376e+01};
    const double b[6] = {1.0, -1.328068155288572e+01, 6.680131188771972e+01,
                         -1.556989798598866e+02, 1.615858368580409e+02, -5.447609879822406e+01};
    const double c[6] = {2.938163982698783e+00, 4.374664141464968e+00, -2.549732539343734e+00,
                         -2.400758277161838e+00, -3.223964580411365e-01, -7.784894002430293e-03};
    const double d[5] = {1.0, 3.754408661907416e+00, 2.445134137142996e+00,
                         3.224671290700398e-01, 7.784695709041462e-03};
    double q, r;

    if (p < ACK_PLOW) {
        q = sqrt(-2.0 * log(p));
        return ack_horner(c, 5, q) / ack_horner(d, 4, q);
    }
    if (p > ACK_PHIGH) {
        q = sqrt(-2.0 * log(1.0 - p));
        return -ack_horner(c, 5, q) / ack_horner(d, 4, q);
    }
    q = p - 0.5;
    r = q * q;
    return q * ack_horner(a, 5, r) / ack_horner(b, 5, r);
}

/* one Halley step on PHI(x) - p = 0 */
static __device__ double ack_halley(double x, double p)
{
    double e, u;

    e = 0.5 * erfc(-x / ACK_SQRT2) - p;
    u = e * ACK_SQRT2PI * exp(0.5 * x * x);
    return x - u / (1.0 + 0.5 * x * u);
}

extern "C" __global__ void acklam_probit_f64(float *x, const float *p, int n)
{
    int i, it;
    double v, pv;

    i = blockIdx.x * ACK_BLOCK + threadIdx.x;
    if (i >= n)
        return;
    pv = (double)p[i];
    v = ack_initial(pv);
    for (it = ACK_REFINE; it > 0; --it)
        v = ack_halley(v, pv);
    x[i] = (float)v;
}
