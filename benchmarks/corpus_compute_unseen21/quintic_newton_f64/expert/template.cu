/*
 * Real root of x^5 + x = a by Newton's method in double, from |a|^(1/4) where |a| > 1,
 * else from a, until the step falls under 1e-14 (1 + |x|) or after QN_MAXIT steps.
 * Expert parameterization (hand-written): THREADS a block, ITEMS values a thread strided
 * by THREADS, LOCKSTEP=1 iterating a thread's values in one loop (each frozen once
 * converged) instead of one after the other, STEPS Newton steps between convergence tests.
 * Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
 * Defaults: the kernel as written (128 threads, one value a thread, a test every step).
 */

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef LOCKSTEP
#define LOCKSTEP 0
#endif
#ifndef STEPS
#define STEPS 1
#endif
#define QN_MAXIT 60
#define QN_TOL 1.0e-14

static __device__ __forceinline__ double qn_step(double x, double t, double *dx)
{
    const double x2 = x * x, x4 = x2 * x2;
    *dx = (x4 * x + x - t) / (5.0 * x4 + 1.0);
    return x - *dx;
}

static __device__ __forceinline__ double qn_guess(double t)
{
    return fabs(t) > 1.0 ? copysign(sqrt(sqrt(fabs(t))), t) : t;
}

extern "C" __global__ void __launch_bounds__(THREADS)
quintic_newton_f64(float *__restrict__ y, const float *__restrict__ a, int n)
{
    const int first = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
    double t[ITEMS], x[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const int i = first + j * THREADS;
        t[j] = i < n ? (double)__ldg(a + i) : 0.0;
        x[j] = qn_guess(t[j]);
    }
#if LOCKSTEP
    bool active[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) active[j] = true;
    for (int it = 0; it < QN_MAXIT;) {
        bool any = false;
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            if (!active[j]) continue;
            double dx = 0.0;
#pragma unroll
            for (int s = 0; s < STEPS; ++s)
                if (it + s < QN_MAXIT) x[j] = qn_step(x[j], t[j], &dx);
            active[j] = fabs(dx) > QN_TOL * (1.0 + fabs(x[j]));
            any = any || active[j];
        }
        it += STEPS;
        if (!any) break;
    }
#else
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        int it = 0;
        double dx;
        do {
#pragma unroll
            for (int s = 0; s < STEPS; ++s)
                if (it + s < QN_MAXIT) x[j] = qn_step(x[j], t[j], &dx);
            it += STEPS;
        } while (fabs(dx) > QN_TOL * (1.0 + fabs(x[j])) && it < QN_MAXIT);
    }
#endif
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const int i = first + j * THREADS;
        if (i < n)
            y[i] = (float)x[j];
    }
}
