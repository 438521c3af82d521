// Real root of x^5 + x = a by Newton's method in double, another hand: constexpr limits, an
// early return, a counted for with a break once the step is small, the guess in a ternary.
constexpr int kMaxIter = 60;
constexpr double kTol = 1.0e-14;

extern "C" __global__ void quintic_newton_f64(float* y, const float* a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double t = a[i];
  double x = fabs(t) > 1.0 ? copysign(sqrt(sqrt(fabs(t))), t) : t;
  for (int it = 0; it < kMaxIter; ++it) {
    const double x2 = x * x;
    const double x4 = x2 * x2;
    const double dx = (x4 * x + x - t) / (5.0 * x4 + 1.0);
    x -= dx;
    if (!(fabs(dx) > kTol * (1.0 + fabs(x)))) break;
  }
  y[i] = (float)x;
}
