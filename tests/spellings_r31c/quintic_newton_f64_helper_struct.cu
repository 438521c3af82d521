/* Real root of x^5 + x = a by Newton's method in double, another hand: the step a helper
 * returning a struct by value, unsigned indices, the work wrapped in the bounds test, a
 * do-while counting its steps, #ifndef limits. */
#ifndef MAX_STEPS
#define MAX_STEPS 60
#endif
#ifndef TOLERANCE
#define TOLERANCE 1.0e-14
#endif

struct NewtonStep {
    double x;
    double dx;
};

__device__ NewtonStep newton_step(double x, double t)
{
    const double x2 = x * x;
    const double x4 = x2 * x2;
    const double f = x4 * x + x - t;
    const double df = 5.0 * x4 + 1.0;
    const double dx = f / df;
    NewtonStep s;
    s.x = x - dx;
    s.dx = dx;
    return s;
}

extern "C" __global__ void quintic_newton_f64(float *y, const float *a, int n)
{
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (unsigned)n) {
        const double t = (double)a[i];
        double x = t;
        if (fabs(t) > 1.0)
            x = copysign(sqrt(sqrt(fabs(t))), t);
        unsigned steps = 0;
        NewtonStep s;
        do {
            s = newton_step(x, t);
            x = s.x;
            ++steps;
        } while (fabs(s.dx) > TOLERANCE * (1.0 + fabs(x)) && steps < MAX_STEPS);
        y[i] = (float)x;
    }
}
