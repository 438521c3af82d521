// The probit x = PHI^-1(p) by Acklam's approximation and two Halley steps in double, another
// hand: constants in a namespace, coefficient tables at file scope, a Horner helper over a
// template count, the work wrapped in the bounds test, a count-down while for the steps.
namespace acklam {
constexpr int kBlock = 128;
constexpr int kRefine = 2;
constexpr double kLow = 0.02425;
constexpr double kHigh = 1.0 - kLow;
constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2Pi = 2.5066282746310002;
}  // namespace acklam

__device__ const double kA[6] = {2.506628277459239e+00, -3.066479806614716e+01,
                                 1.383577518672690e+02, -2.759285104469687e+02,
                                 2.209460984245205e+02, -3.969683028665376e+01};
__device__ const double kB[6] = {1.0, -1.328068155288572e+01, 6.680131188771972e+01,
                                 -1.556989798598866e+02, 1.615858368580409e+02,
                                 -5.447609879822406e+01};
__device__ const double kC[6] = {2.938163982698783e+00, 4.374664141464968e+00,
                                 -2.549732539343734e+00, -2.400758277161838e+00,
                                 -3.223964580411365e-01, -7.784894002430293e-03};
__device__ const double kD[5] = {1.0, 3.754408661907416e+00, 2.445134137142996e+00,
                                 3.224671290700398e-01, 7.784695709041462e-03};

template <int M>
__device__ double horner(const double* c, double t) {
  double s = c[M];
  for (int k = M - 1; k >= 0; --k) s = s * t + c[k];
  return s;
}

__device__ double first_guess(double p) {
  if (p < acklam::kLow) {
    const double q = sqrt(-2.0 * log(p));
    return horner<5>(kC, q) / horner<4>(kD, q);
  }
  if (p > acklam::kHigh) {
    const double q = sqrt(-2.0 * log(1.0 - p));
    return -horner<5>(kC, q) / horner<4>(kD, q);
  }
  const double q = p - 0.5;
  const double r = q * q;
  return q * horner<5>(kA, r) / horner<5>(kB, r);
}

extern "C" __global__ void acklam_probit_f64(float* x, const float* p, int n) {
  const int i = blockIdx.x * acklam::kBlock + threadIdx.x;
  if (i < n) {
    const double pv = p[i];
    double v = first_guess(pv);
    int left = acklam::kRefine;
    while (left-- > 0) {
      const double e = 0.5 * erfc(-v / acklam::kSqrt2) - pv;
      const double u = e * acklam::kSqrt2Pi * exp(0.5 * v * v);
      v = v - u / (1.0 + 0.5 * v * u);
    }
    x[i] = static_cast<float>(v);
  }
}
