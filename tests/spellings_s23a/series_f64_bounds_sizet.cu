// per element, in double: a damped cosine series summed until its terms fall below 1e-12
// or 40 terms, with a branch on the sign of the argument (float in and out);
// __launch_bounds__(128), a size_t index and an early return
extern "C" __global__ void __launch_bounds__(128) k(float* out, const float* xs, int n) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)n) return;
  const double x = xs[i];
  const double a = x < 0.0 ? -x : x;
  double term = 1.0, sum = 1.0;
  for (int m = 1; m < 40; ++m) {
    term *= -a * a / ((2.0 * m - 1.0) * (2.0 * m));
    sum += term;
    if (fabs(term) < 1e-12) break;
  }
  out[i] = (float)(x < 0.0 ? sum * exp(x) : sum / (1.0 + x));
}
