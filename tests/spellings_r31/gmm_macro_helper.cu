/* Log-likelihood of 2-D points under a fixed 16-component Gaussian mixture (precision
 * matrices [[pa, pb], [pb, pc]], log-normalisers lc including the weights):
 *   ll[i] = log sum_k exp(lc[k] - 0.5 d^T P_k d), taken as max + log sum exp(. - max).
 * xy holds the points interleaved. One point per thread, 256 threads per block. */

#define NCOMP 16
#define THREADS 256

__constant__ float MEAN_X[NCOMP] = {
    1.687f, 0.635f, 1.259f, -2.465f, 0.784f, 2.885f, -0.46f, -2.326f,
    2.75f, 1.056f, -1.817f, 1.032f, 2.956f, -1.743f, 2.123f, 1.193f};
__constant__ float MEAN_Y[NCOMP] = {
    -1.67f, -1.891f, 2.725f, -0.957f, -0.352f, 0.937f, -0.358f, -2.998f,
    -1.438f, -0.167f, 1.568f, 0.638f, -0.419f, -1.854f, 1.708f, -1.877f};
__constant__ float PREC_A[NCOMP] = {
    2.35819f, 2.45292f, 1.63382f, 2.50399f, 5.12128f, 4.94858f, 1.48385f, 4.50959f,
    10.384f, 5.26617f, 0.948458f, 1.8701f, 1.93812f, 3.61471f, 1.18084f, 8.71559f};
__constant__ float PREC_B[NCOMP] = {
    1.88061f, 3.07013f, 0.281986f, -0.281235f, -1.06101f, -0.725657f, 0.551785f, 2.168f,
    0.361281f, 3.07848f, -1.43343f, -2.86142f, -1.28103f, 1.32511f, -0.695692f, 4.051f};
__constant__ float PREC_C[NCOMP] = {
    2.82165f, 14.1947f, 1.33672f, 0.755523f, 1.35749f, 7.44809f, 1.64856f, 3.96318f,
    0.798878f, 11.7951f, 12.5261f, 11.0696f, 3.57543f, 1.32106f, 1.9409f, 3.12816f};
__constant__ float LOGC[NCOMP] = {
    -4.75511f, -2.91464f, -4.61557f, -4.11921f, -3.66271f, -2.79584f, -4.25296f, -3.05612f,
    -3.36235f, -3.59778f, -3.14676f, -3.57041f, -4.19654f, -3.8283f, -4.04434f, -3.27233f};

__device__ __forceinline__ float component_log(float px, float py, int k)
{
    float dx = px - MEAN_X[k];
    float dy = py - MEAN_Y[k];
    float q = PREC_A[k] * dx * dx + 2.0f * PREC_B[k] * dx * dy + PREC_C[k] * dy * dy;
    return LOGC[k] - 0.5f * q;
}

extern "C" __global__ void gmm_loglik_k16(float *ll, const float *xy, int n)
{
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i >= n)
        return;
    float px = xy[2 * i], py = xy[2 * i + 1];

    float best = component_log(px, py, 0);
    for (int k = 1; k < NCOMP; k++)
        best = fmaxf(best, component_log(px, py, k));

    float s = 0.0f;
    for (int k = 0; k < NCOMP; k++)
        s += expf(component_log(px, py, k) - best);
    ll[i] = best + logf(s);
}
