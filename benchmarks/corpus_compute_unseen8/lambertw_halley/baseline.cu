// Principal branch of the Lambert W function, w = W0(x) with w * exp(w) = x, for x >= -1/e,
// as used for the Shockley diode equation or a delay-equation root: a branch picks the
// starting guess (a series around the branch point -1/e, a log1p form for moderate x, the
// asymptotic log form for large x), then Halley steps run until the step is below 4e-7
// relative (at most 12). The work sits in a __device__ helper; the kernel maps one element
// a thread.
// Launch: grid = (n + 255) / 256, block = 256.
__device__ float lambert_w0(float x) {
  float w;
  if (x < -0.32f) {
    // near the branch point: W = -1 + p - p^2 / 3 + 11 p^3 / 72, p = sqrt(2 (e x + 1))
    const float p = sqrtf(fmaxf(2.0f * (2.718281828f * x + 1.0f), 0.0f));
    w = -1.0f + p * (1.0f + p * (-1.0f / 3.0f + p * (11.0f / 72.0f)));
  } else if (x < 3.0f) {
    const float l = log1pf(x);
    w = l * (1.0f - log1pf(l) / (2.0f + l));
  } else {
    const float l1 = logf(x);
    const float l2 = logf(l1);
    w = l1 - l2 + l2 / l1;
  }
  for (int it = 0; it < 12; it++) {
    const float ew = expf(w);
    const float f = w * ew - x;
    const float wp1 = w + 1.0f;
    if (wp1 < 1e-6f) break;  // at the branch point itself
    const float step = f / (ew * wp1 - (w + 2.0f) * f / (2.0f * wp1));
    w -= step;
    if (fabsf(step) <= 4e-7f * (1.0f + fabsf(w))) break;
  }
  return w;
}

extern "C" __global__ void lambertw_halley(float* w, const float* x, int n) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (size_t)n) w[i] = lambert_w0(x[i]);
}
