// Darcy friction factor of pipe flow from the Colebrook-White equation,
//     1 / sqrt(f) = -2 log10(rel / 3.7 + 2.51 / (Re sqrt(f))),
// solved for each pipe by Newton's method on x = 1 / sqrt(f), from x = 8 until a step is
// smaller than 1e-12 x (at most 50 steps); laminar flow (Re < 2300) takes f = 64 / Re and
// returns early. Float in and out, double arithmetic; one pipe a thread.
// Launch: grid = ((n + 127) / 128), block = (128).

#define LAMINAR_RE 2300.0
#define MAX_STEPS 50
#define LN10 2.302585092994046

__device__ double colebrook(double re, double rel)
{
    const double a = rel / 3.7;
    const double b = 2.51 / re;
    double x = 8.0;
    for (int it = 0; it < MAX_STEPS; ++it) {
        double arg = a + b * x;
        double g = x + 2.0 * log10(arg);
        double dg = 1.0 + 2.0 * b / (arg * LN10);
        double dx = g / dg;
        x -= dx;
        if (fabs(dx) < 1e-12 * x)
            break;
    }
    return 1.0 / (x * x);
}

extern "C" __global__ void colebrook_newton_f64(float *f, const float *Re, const float *rel,
                                                int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double re = Re[i];
    if (re < LAMINAR_RE) {
        f[i] = (float)(64.0 / re);
        return;
    }
    f[i] = (float)colebrook(re, rel[i]);
}
