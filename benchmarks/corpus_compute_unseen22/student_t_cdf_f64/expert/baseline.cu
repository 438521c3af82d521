/*
 * Student's t distribution function, p[i] = P(T <= t[i]) for T with nu[i] degrees of
 * freedom, in double precision through the regularized incomplete beta function:
 *     x = nu / (nu + t^2),  I = I_x(nu / 2, 1 / 2),  p = I / 2 (t <= 0), 1 - I / 2 (t > 0).
 * I_x(a, b) by the continued fraction of Numerical Recipes' betacf (modified Lentz), taken
 * on I_x(a, b) or 1 - I_{1-x}(b, a), whichever converges faster; 1 - x is carried as
 * t^2 / (nu + t^2) (no cancellation). The fraction runs until a step changes it by less
 * than TCDF_EPS or after TCDF_MAXIT steps: its length depends on the data.
 * t and nu as floats, p as a float. One value per thread, 128 threads per block.
 * Launch: grid = ((n + 127) / 128), block = (128).
 */

#define TCDF_MAXIT 400
#define TCDF_EPS 1.0e-15
#define TCDF_FPMIN 1.0e-300

/* the continued fraction for I_x(a, b), x below (a + 1) / (a + b + 2) */
static __device__ double betacf(double a, double b, double x)
{
    int m, m2;
    double aa, c, d, del, h, qab, qam, qap;

    qab = a + b;
    qap = a + 1.0;
    qam = a - 1.0;
    c = 1.0;
    d = 1.0 - qab * x / qap;
    if (fabs(d) < TCDF_FPMIN)
        d = TCDF_FPMIN;
    d = 1.0 / d;
    h = d;
    for (m = 1; m <= TCDF_MAXIT; m++) {
        m2 = 2 * m;
        aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if (fabs(d) < TCDF_FPMIN)
            d = TCDF_FPMIN;
        c = 1.0 + aa / c;
        if (fabs(c) < TCDF_FPMIN)
            c = TCDF_FPMIN;
        d = 1.0 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if (fabs(d) < TCDF_FPMIN)
            d = TCDF_FPMIN;
        c = 1.0 + aa / c;
        if (fabs(c) < TCDF_FPMIN)
            c = TCDF_FPMIN;
        d = 1.0 / d;
        del = d * c;
        h *= del;
        if (fabs(del - 1.0) < TCDF_EPS)
            break;
    }
    return h;
}

/* I_x(a, b) with xc = 1 - x given */
static __device__ double betai(double a, double b, double x, double xc)
{
    double bt;

    if (x <= 0.0)
        return 0.0;
    if (xc <= 0.0)
        return 1.0;
    bt = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log(xc));
    if (x < (a + 1.0) / (a + b + 2.0))
        return bt * betacf(a, b, x) / a;
    return 1.0 - bt * betacf(b, a, xc) / b;
}

extern "C" __global__ void student_t_cdf_f64(float *p, const float *t, const float *nu, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double tt, v, den, ib;

    if (i >= n)
        return;
    tt = (double)t[i];
    v = (double)nu[i];
    den = v + tt * tt;
    ib = betai(0.5 * v, 0.5, v / den, tt * tt / den);
    p[i] = (float)(tt > 0.0 ? 1.0 - 0.5 * ib : 0.5 * ib);
}
