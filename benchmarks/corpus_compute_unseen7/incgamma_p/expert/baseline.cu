// Regularized lower incomplete gamma function P(a, x) per element (the CDF of a gamma or
// chi-square variable): for x < a + 1 the power series, else 1 - the continued fraction
// for Q(a, x) evaluated by the modified Lentz method; each is iterated until its next
// factor changes the result by less than kEps relative, at most kMaxIter times. a > 0;
// x <= 0 gives 0.
// Launch: grid = (n + 255) / 256, block = 256.
constexpr int kMaxIter = 300;
constexpr float kEps = 3.0e-7f;
constexpr float kTiny = 1.0e-30f;

__device__ float lower_series(float a, float x) {
  float ap = a;
  float term = 1.0f / a;
  float sum = term;
  for (int it = 1; it <= kMaxIter; ++it) {
    ap += 1.0f;
    term *= x / ap;
    sum += term;
    if (fabsf(term) < fabsf(sum) * kEps) break;
  }
  return sum;
}

__device__ float upper_fraction(float a, float x) {
  float b = x + 1.0f - a;
  float c = 1.0f / kTiny;
  float d = 1.0f / b;
  float h = d;
  for (int it = 1; it <= kMaxIter; ++it) {
    const float an = -it * (it - a);
    b += 2.0f;
    d = an * d + b;
    if (fabsf(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (fabsf(c) < kTiny) c = kTiny;
    d = 1.0f / d;
    const float step = d * c;
    h *= step;
    if (fabsf(step - 1.0f) < kEps) break;
  }
  return h;
}

extern "C" __global__ void incgamma_p(float* p, const float* a, const float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float av = a[i];
  const float xv = x[i];
  if (xv <= 0.0f) {
    p[i] = 0.0f;
    return;
  }
  const float front = expf(av * logf(xv) - xv - lgammaf(av));
  if (xv < av + 1.0f) {
    p[i] = front * lower_series(av, xv);
    return;
  }
  p[i] = 1.0f - front * upper_fraction(av, xv);
}
