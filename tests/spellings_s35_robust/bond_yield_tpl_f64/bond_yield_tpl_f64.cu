// Session 35 respelling of the per-element compute family (corpus_compute_unseen26/
// bs_callput_hart): the yield to maturity of a bond (face 100, coupon c a period, m periods)
// at price p by Newton's method in double: f(y) = c (1 - v^m) / y + 100 v^m - p with
// v = 1 / (1 + y), at most 40 steps, leaving once a step is below 1e-12; a non-positive
// price or period count gives -1. The body a template over the block width instantiated at
// 128 by the extern "C" entry, an unsigned index, an early return, a do-while-free for loop
// with a break, double locals from float inputs.
// Launch: grid = ((n + 127) / 128), block = (128).

template <int BLOCK>
__device__ void yield_body(float *ytm, const float *price, const float *coupon,
                           const int *periods, int n)
{
    const unsigned gid = blockIdx.x * BLOCK + threadIdx.x;
    if (gid >= (unsigned)n)
        return;
    const double p = price[gid];
    const double c = coupon[gid];
    const int m = periods[gid];
    if (p <= 0.0 || m <= 0) {
        ytm[gid] = -1.0f;
        return;
    }
    double y = (c + (100.0 - p) / m) / ((100.0 + p) * 0.5); // the textbook first guess
    for (int it = 0; it < 40; ++it) {
        const double v = 1.0 / (1.0 + y);
        const double vm = pow(v, (double)m);
        const double f = c * (1.0 - vm) / y + 100.0 * vm - p;
        const double df = -c * (1.0 - vm) / (y * y) + (c / y - 100.0) * m * vm * v;
        const double step = f / df;
        y -= step;
        if (fabs(step) < 1e-12)
            break;
    }
    ytm[gid] = (float)y;
}

extern "C" __global__ void bond_ytm(float *ytm, const float *price, const float *coupon,
                                   const int *periods, int n)
{
    yield_body<128>(ytm, price, coupon, periods, n);
}
