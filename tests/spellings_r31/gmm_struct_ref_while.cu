// Per-point log-likelihood under a 16-component 2-D Gaussian mixture kept in constant
// memory as one struct of arrays; the log-sum-exp is shifted by its largest term.
// Points interleaved (x, y); one point a thread, 256 a block.

struct Mixture {
  float mx[16], my[16];
  float pa[16], pb[16], pc[16];
  float lc[16];
};

__constant__ Mixture c_mix = {
    {1.687f, 0.635f, 1.259f, -2.465f, 0.784f, 2.885f, -0.46f, -2.326f,
     2.75f, 1.056f, -1.817f, 1.032f, 2.956f, -1.743f, 2.123f, 1.193f},
    {-1.67f, -1.891f, 2.725f, -0.957f, -0.352f, 0.937f, -0.358f, -2.998f,
     -1.438f, -0.167f, 1.568f, 0.638f, -0.419f, -1.854f, 1.708f, -1.877f},
    {2.35819f, 2.45292f, 1.63382f, 2.50399f, 5.12128f, 4.94858f, 1.48385f, 4.50959f,
     10.384f, 5.26617f, 0.948458f, 1.8701f, 1.93812f, 3.61471f, 1.18084f, 8.71559f},
    {1.88061f, 3.07013f, 0.281986f, -0.281235f, -1.06101f, -0.725657f, 0.551785f, 2.168f,
     0.361281f, 3.07848f, -1.43343f, -2.86142f, -1.28103f, 1.32511f, -0.695692f, 4.051f},
    {2.82165f, 14.1947f, 1.33672f, 0.755523f, 1.35749f, 7.44809f, 1.64856f, 3.96318f,
     0.798878f, 11.7951f, 12.5261f, 11.0696f, 3.57543f, 1.32106f, 1.9409f, 3.12816f},
    {-4.75511f, -2.91464f, -4.61557f, -4.11921f, -3.66271f, -2.79584f, -4.25296f, -3.05612f,
     -3.36235f, -3.59778f, -3.14676f, -3.57041f, -4.19654f, -3.8283f, -4.04434f, -3.27233f}};

__device__ inline void log_terms(float x, float y, int k, float& term) {
  const float dx = x - c_mix.mx[k];
  const float dy = y - c_mix.my[k];
  const float q = c_mix.pa[k] * dx * dx + 2.0f * c_mix.pb[k] * dx * dy + c_mix.pc[k] * dy * dy;
  term = c_mix.lc[k] - 0.5f * q;
}

extern "C" __global__ void gmm_loglik_k16(float* ll, const float* xy, int n) {
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid < n) {
    const float x = xy[2 * tid];
    const float y = xy[2 * tid + 1];
    float top;
    log_terms(x, y, 0, top);
    int k = 1;
    while (k < 16) {
      float t;
      log_terms(x, y, k, t);
      top = fmaxf(top, t);
      ++k;
    }
    float sum = 0.0f;
    for (int c = 0; c < 16; ++c) {
      float t;
      log_terms(x, y, c, t);
      sum += expf(t - top);
    }
    ll[tid] = top + logf(sum);
  }
}
