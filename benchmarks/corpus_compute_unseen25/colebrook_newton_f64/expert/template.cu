// Darcy friction factor of pipe flow from the Colebrook-White equation,
//     1 / sqrt(f) = -2 log10(rel / 3.7 + 2.51 / (Re sqrt(f))),
// by Newton's method on x = 1 / sqrt(f) until a step is below 1e-12 x (at most 50 steps);
// laminar flow (Re < 2300) takes f = 64 / Re, a branch (no Newton steps). Float in and out,
// double arithmetic.
// Expert parameterization (hand-written): THREADS a block; ITEMS pipes a thread, a block
// width apart, their Newton steps interleaved in one loop (each its own exit test, the loop
// ending when all have converged: independent logarithms and divisions in flight); INIT = 1
// starts from Swamee and Jain's explicit approximation (within about 1 % of the root: two or
// three steps fewer than from 8, for an exp and two logs); FAST = 1 takes a step with one
// division instead of two and a natural log scaled by 2 / ln 10 instead of log10. Every
// variant converges to the same root to a few ulps.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = (THREADS).
// Defaults: the kernel as written (128 threads, one pipe a thread, from 8, two divisions).

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef INIT
#define INIT 0
#endif
#ifndef FAST
#define FAST 0
#endif

#define LAMINAR_RE 2300.0
#define MAX_STEPS 50
#define LN10 2.302585092994046

static __device__ __forceinline__ double first_guess(double a, double re)
{
#if INIT
    return -2.0 * log10(a + 5.74 * exp(-0.9 * log(re)));  // Re^-0.9, no pow call
#else
    return 8.0;
#endif
}

// The Newton step g / g' of g(x) = x + 2 log10(a + b x).
static __device__ __forceinline__ double newton_step(double x, double a, double b)
{
    const double arg = a + b * x;
#if FAST
    const double al = arg * LN10;
    const double g = x + (2.0 / LN10) * log(arg);
    return g * al / (al + 2.0 * b);
#else
    const double g = x + 2.0 * log10(arg);
    const double dg = 1.0 + 2.0 * b / (arg * LN10);
    return g / dg;
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS)
colebrook_newton_f64(float *__restrict__ f, const float *__restrict__ Re,
                     const float *__restrict__ rel, int n)
{
    const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
#if ITEMS == 1
    const int i = base;
    if (i >= n)
        return;
    const double re = Re[i];
    if (re < LAMINAR_RE) {
        f[i] = (float)(64.0 / re);
        return;
    }
    const double a = (double)rel[i] / 3.7, b = 2.51 / re;
    double x = first_guess(a, re);
    for (int it = 0; it < MAX_STEPS; ++it) {
        const double dx = newton_step(x, a, b);
        x -= dx;
        if (fabs(dx) < 1e-12 * x)
            break;
    }
    f[i] = (float)(1.0 / (x * x));
#else
    double x[ITEMS], a[ITEMS], b[ITEMS];
    bool live[ITEMS], turbulent[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int i = base + k * THREADS;
        x[k] = a[k] = b[k] = 0.0;
        live[k] = turbulent[k] = false;
        if (i < n) {
            const double re = Re[i];
            if (re < LAMINAR_RE) {
                f[i] = (float)(64.0 / re);
            } else {
                a[k] = (double)rel[i] / 3.7;
                b[k] = 2.51 / re;
                x[k] = first_guess(a[k], re);
                live[k] = turbulent[k] = true;
            }
        }
    }
    for (int it = 0; it < MAX_STEPS; ++it) {
        bool any = false;
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            if (live[k]) {
                const double dx = newton_step(x[k], a[k], b[k]);
                x[k] -= dx;
                live[k] = !(fabs(dx) < 1e-12 * x[k]);
                any = any || live[k];
            }
        }
        if (!any)
            break;
    }
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        if (turbulent[k])
            f[base + k * THREADS] = (float)(1.0 / (x[k] * x[k]));
#endif
}
