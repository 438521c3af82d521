/*
 * Student's t distribution function in double: p = I/2 (t <= 0) or 1 - I/2 (t > 0) with
 * I = I_x(nu/2, 1/2), x = nu / (nu + t^2), 1 - x carried as t^2 / (nu + t^2); I_x by the
 * betacf continued fraction (modified Lentz) on whichever of I_x(a, b) and
 * 1 - I_{1-x}(b, a) converges faster, until a step changes it by less than TCDF_EPS.
 * Expert parameterization (hand-written): THREADS a block, ITEMS values a thread strided by
 * THREADS (their fractions run one after the other), CHECK fraction steps between
 * convergence tests (a converged fraction's further steps multiply it by 1 to within an
 * ulp), HALF=1 lgamma(1/2) = log(pi)/2 folded to a constant, MINB the blocks per SM asked
 * of the register allocator (0: none, as written).
 * Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
 * Defaults: the kernel as written (128 threads, one value a thread, a test every step).
 */

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef CHECK
#define CHECK 1
#endif
#ifndef HALF
#define HALF 0
#endif
#ifndef MINB
#define MINB 0
#endif
#define TCDF_MAXIT 400
#define TCDF_EPS 1.0e-15
#define TCDF_FPMIN 1.0e-300
#define TCDF_LGAMMA_HALF 0.57236494292470008707

static __device__ __forceinline__ double tcdf_clamp(double v)
{
    return fabs(v) < TCDF_FPMIN ? TCDF_FPMIN : v;
}

static __device__ __forceinline__ double tcdf_betacf(double a, double b, double x)
{
    const double qab = a + b, qap = a + 1.0, qam = a - 1.0;
    double c = 1.0;
    double d = 1.0 / tcdf_clamp(1.0 - qab * x / qap);
    double h = d;
    for (int m0 = 1; m0 <= TCDF_MAXIT; m0 += CHECK) {
        double del = 1.0;
#pragma unroll
        for (int s = 0; s < CHECK; ++s) {
            const int m = m0 + s;
            if (m > TCDF_MAXIT)
                break;
            const int m2 = 2 * m;
            double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
            d = 1.0 / tcdf_clamp(1.0 + aa * d);
            c = tcdf_clamp(1.0 + aa / c);
            h *= d * c;
            aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
            d = 1.0 / tcdf_clamp(1.0 + aa * d);
            c = tcdf_clamp(1.0 + aa / c);
            del = d * c;
            h *= del;
        }
        if (fabs(del - 1.0) < TCDF_EPS)
            break;
    }
    return h;
}

static __device__ __forceinline__ double tcdf_value(double tt, double v)
{
    const double den = v + tt * tt;
    const double x = v / den, xc = tt * tt / den;
    const double a = 0.5 * v, b = 0.5;
    double ib;
    if (x <= 0.0) {
        ib = 0.0;
    } else if (xc <= 0.0) {
        ib = 1.0;
    } else {
#if HALF
        const double lgb = TCDF_LGAMMA_HALF;
#else
        const double lgb = lgamma(b);
#endif
        const double bt = exp(lgamma(a + b) - lgamma(a) - lgb + a * log(x) + b * log(xc));
        if (x < (a + 1.0) / (a + b + 2.0))
            ib = bt * tcdf_betacf(a, b, x) / a;
        else
            ib = 1.0 - bt * tcdf_betacf(b, a, xc) / b;
    }
    return tt > 0.0 ? 1.0 - 0.5 * ib : 0.5 * ib;
}

/* a minimum of 0 blocks an SM is no request (nvcc reads it as absent) */
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
student_t_cdf_f64(float *__restrict__ p, const float *__restrict__ t,
                  const float *__restrict__ nu, int n)
{
    const int first = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
#pragma unroll 1
    for (int j = 0; j < ITEMS; ++j) {
        const int i = first + j * THREADS;
        if (i < n)
            p[i] = (float)tcdf_value((double)__ldg(t + i), (double)__ldg(nu + i));
    }
}
