// The digamma function psi(x) = d/dx log Gamma(x) per element, as in the gradient of a
// Dirichlet or Beta log-likelihood (variational inference, topic models): float in, float
// out, computed in double. x <= 0 goes through the reflection psi(1 - x) - psi(x) =
// pi cot(pi x); the recurrence psi(x) = psi(x + 1) - 1 / x then walks x up to 10, where
// the asymptotic series log x - 1 / (2x) - sum B_2k / (2k x^2k) is accurate to double.
// Launch: grid = (n + 127) / 128, block = 128.
#define THREADS 128

__device__ double digamma(double x) {
  const double pi = 3.14159265358979323846;
  double result = 0.0;
  if (x <= 0.0) {
    result = -pi / tan(pi * x);
    x = 1.0 - x;
  }
  while (x < 10.0) {
    result -= 1.0 / x;
    x += 1.0;
  }
  const double r = 1.0 / x;
  const double r2 = r * r;
  const double series =
      r2 * (1.0 / 12 - r2 * (1.0 / 120 - r2 * (1.0 / 252 - r2 * (1.0 / 240 - r2 * (1.0 / 132)))));
  return result + log(x) - 0.5 * r - series;
}

extern "C" __global__ void digamma_f64(float* psi, const float* x, int n) {
  const int i = blockIdx.x * THREADS + threadIdx.x;
  if (i < n) psi[i] = (float)digamma((double)x[i]);
}
