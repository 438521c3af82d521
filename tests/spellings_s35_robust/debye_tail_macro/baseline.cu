// Session 35 respelling of the per-element compute family (corpus_compute_unseen27/
// planck_band_frac): the Debye-like tail D(x) = sum_k e^(-k x) (x^3 / k + 3 x^2 / k^2 +
// 6 x / k^3 + 6 / k^4) at x = theta / T[i], summed in a while loop until a term falls below
// 1e-7 of the sum (at most MAX_TERMS terms); below x = 0.25 a short polynomial; a zero
// temperature gives 0. Macros for the block width and the limits, a guard (no early
// return), __restrict__ pointers, a static helper with a while loop and a break.
// Launch: grid = ((n + 127) / 128), block = (128).

#define TPB 128
#define MAX_TERMS 24
#define REL_TOL 1e-7f

static __device__ float debye_tail(float x)
{
    if (x < 0.25f)
        return 6.4939394f - x * x * x / 3.0f + x * x * x * x / 8.0f;
    const float e = expf(-x);
    float ek = 1.0f, acc = 0.0f;
    int k = 1;
    while (k <= MAX_TERMS) {
        ek *= e;
        const float rk = 1.0f / (float)k;
        const float t = ek * rk * (x * x * x + rk * (3.0f * x * x + rk * (6.0f * x + 6.0f * rk)));
        acc += t;
        if (t < REL_TOL * acc)
            break;
        ++k;
    }
    return acc;
}

extern "C" __global__ void debye_tail_eval(float *__restrict__ out,
                                           const float *__restrict__ temp, float theta, int n)
{
    int idx = blockIdx.x * TPB + threadIdx.x;
    if (idx < n) {
        float T = temp[idx];
        float v = 0.0f;
        if (T > 0.0f)
            v = debye_tail(theta / T);
        out[idx] = v;
    }
}
