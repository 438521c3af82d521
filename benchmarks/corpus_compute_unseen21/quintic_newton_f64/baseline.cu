/*
 * Real root of the quintic x^5 + x = a (the Bring radical of a) by Newton's method in
 * double precision: started from |a|^(1/4) (above the root) where |a| > 1, else from a;
 * iterated until the step falls under 1e-14 (1 + |x|) or after QN_MAXIT steps.
 * a[i] as floats, y[i] = the root as a float. One value per thread, 128 threads per block.
 * Launch: grid = ((n + 127) / 128), block = (128).
 */

#define QN_MAXIT 60
#define QN_TOL 1.0e-14

extern "C" __global__ void quintic_newton_f64(float *y, const float *a, int n)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    int it;
    double t, x, x2, x4, f, df, dx;

    if (i >= n)
        return;
    t = (double)a[i];
    if (fabs(t) > 1.0)
        x = copysign(sqrt(sqrt(fabs(t))), t);
    else
        x = t;
    it = 0;
    do {
        x2 = x * x;
        x4 = x2 * x2;
        f = x4 * x + x - t;
        df = 5.0 * x4 + 1.0;
        dx = f / df;
        x = x - dx;
        it++;
    } while (fabs(dx) > QN_TOL * (1.0 + fabs(x)) && it < QN_MAXIT);
    y[i] = (float)x;
}
