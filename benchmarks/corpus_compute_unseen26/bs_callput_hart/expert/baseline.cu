// Black-Scholes-Merton prices of European calls and puts, in double: kind[i] == 0 a call,
// otherwise a put; an expired option (expiry <= 0) is worth its intrinsic value. The
// normal CDF is Hart's double-precision algorithm (as West, 2005, gives it) by ranges of
// |x|: a ratio of two polynomials below 7.07, a continued fraction below 37, zero past.
// One option a thread of 128.
// Launch: grid = ((n + 127) / 128), block = (128).

__device__ double cnd_hart(double x)
{
    double ax = fabs(x);
    double c;
    if (ax > 37.0) {
        c = 0.0;
    } else {
        double e = exp(-0.5 * ax * ax);
        if (ax < 7.07106781186547) {
            double p = 3.52624965998911e-02 * ax + 0.700383064443688;
            p = p * ax + 6.37396220353165;
            p = p * ax + 33.912866078383;
            p = p * ax + 112.079291497871;
            p = p * ax + 221.213596169931;
            p = p * ax + 220.206867912376;
            double q = 8.83883476483184e-02 * ax + 1.75566716318264;
            q = q * ax + 16.064177579207;
            q = q * ax + 86.7807322029461;
            q = q * ax + 296.564248779674;
            q = q * ax + 637.333633378831;
            q = q * ax + 793.826512519948;
            q = q * ax + 440.413735824752;
            c = e * p / q;
        } else {
            double f = ax + 0.65;
            f = ax + 4.0 / f;
            f = ax + 3.0 / f;
            f = ax + 2.0 / f;
            f = ax + 1.0 / f;
            c = e / f / 2.506628274631;
        }
    }
    return x > 0.0 ? 1.0 - c : c;
}

extern "C" __global__ void bs_callput_hart(float *price, const float *spot, const float *strike,
                                           const float *expiry, const float *vol,
                                           const int *kind, float rate, float divy, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double S = spot[i], K = strike[i], T = expiry[i], v = vol[i];
    double r = rate, q = divy;
    double value;
    if (T <= 0.0) {
        value = kind[i] == 0 ? fmax(S - K, 0.0) : fmax(K - S, 0.0);
    } else {
        double vsqrt = v * sqrt(T);
        double d1 = (log(S / K) + (r - q + 0.5 * v * v) * T) / vsqrt;
        double d2 = d1 - vsqrt;
        double dfS = S * exp(-q * T);
        double dfK = K * exp(-r * T);
        if (kind[i] == 0)
            value = dfS * cnd_hart(d1) - dfK * cnd_hart(d2);
        else
            value = dfK * cnd_hart(-d2) - dfS * cnd_hart(-d1);
    }
    price[i] = (float)value;
}
