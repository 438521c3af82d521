// Principal branch of the Lambert W function, w e^w = x, for x >= 0, by Halley's method
// from log1p(x) until a step is below 1e-14 (1 + w) (at most 40 steps); x below 1e-10
// returns x itself (W(x) = x - x^2 + ..., the same float). Float in and out, double
// arithmetic; one value a thread, a size_t index, constexpr limits, the Halley step in its
// textbook form f / (f' - f f'' / (2 f')) inside the kernel's own loop.
// Launch: grid = ((n + 255) / 256), block = (256).

constexpr int kMaxIter = 40;
constexpr double kTol = 1e-14;

extern "C" __global__ void lambertw_halley_f64(float *w, const float *x, int n)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)n)
        return;
    const double xi = x[i];
    if (xi < 1e-10) {
        w[i] = (float)xi;
        return;
    }
    double v = log1p(xi);
    for (int k = 0; k < kMaxIter; ++k) {
        const double ev = exp(v);
        const double f = v * ev - xi;
        const double fp = ev * (v + 1.0);
        const double fpp = ev * (v + 2.0);
        const double step = f / (fp - f * fpp / (2.0 * fp));
        v -= step;
        if (fabs(step) <= kTol * (1.0 + v))
            break;
    }
    w[i] = (float)v;
}
