// Darcy friction factor of turbulent flow in a smooth pipe from the Prandtl-von Karman law,
//     1 / sqrt(f) = 2 log10(Re sqrt(f)) - 0.8,  i.e.  x + 2 log10(x) = 2 log10(Re) - 0.8,
// on x = 1 / sqrt(f) by Newton's method from x = 8 until a step is below 1e-12 x (at most
// 40 steps); laminar flow (Re < 2300) takes f = 64 / Re. Float in and out, double
// arithmetic. Spelled with macros, an int index guarding a block, a do-while in a
// __forceinline__ helper, and the slope kept in a local assigned once, its quotient first.
// Launch: grid = ((count + 127) / 128), block = (128).

#define TWO_OVER_LN10 0.8685889638065036
#define NEWTON_STEPS 40
#define LAMINAR 2300.0

__device__ __forceinline__ double prandtl_x(double re)
{
    const double c = 2.0 * log10(re) - 0.8;
    double x = 8.0, step;
    int k = 0;
    do {
        double resid = x + TWO_OVER_LN10 * log(x) - c;
        double slope;
        slope = TWO_OVER_LN10 / x + 1.0;
        step = resid / slope;
        x = x - step;
    } while (fabs(step) > 1e-12 * x && ++k < NEWTON_STEPS);
    return x;
}

extern "C" __global__ void prandtl_smooth_f64(float *fric, const float *reynolds, int count)
{
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    if (idx < count) {
        double re = reynolds[idx];
        if (re < LAMINAR) {
            fric[idx] = (float)(64.0 / re);
        } else {
            double x = prandtl_x(re);
            fric[idx] = (float)(1.0 / (x * x));
        }
    }
}
