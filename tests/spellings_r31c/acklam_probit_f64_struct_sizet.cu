/* Acklam's probit in double, another hand: a size_t index, the refinement a struct holding
 * p with a member function, a Horner helper walking the coefficients down with a while,
 * #define constants without parentheses, a for over the refinement steps. */
#define PLOW 0.02425
#define PHIGH (1 - PLOW)
#define REFINE 2
#define THREADS 128

struct Halley {
  double p;
  __device__ double step(double x) const {
    double e = 0.5 * erfc(-x / 1.4142135623730951) - p;
    double u = e * 2.5066282746310002 * exp(0.5 * x * x);
    return x - u / (1.0 + 0.5 * x * u);
  }
};

__device__ double horner(const double *c, int m, double t) {
  double s = c[m];
  int k = m;
  while (k > 0) {
    --k;
    s = s * t + c[k];
  }
  return s;
}

__device__ double initial(double p) {
  const double a[6] = {2.506628277459239e+00, -3.066479806614716e+01, 1.383577518672690e+02,
                       -2.759285104469687e+02, 2.209460984245205e+02, -3.969683028665376e+01};
  const double b[6] = {1.0, -1.328068155288572e+01, 6.680131188771972e+01,
                       -1.556989798598866e+02, 1.615858368580409e+02, -5.447609879822406e+01};
  const double c[6] = {2.938163982698783e+00, 4.374664141464968e+00, -2.549732539343734e+00,
                       -2.400758277161838e+00, -3.223964580411365e-01, -7.784894002430293e-03};
  const double d[5] = {1.0, 3.754408661907416e+00, 2.445134137142996e+00,
                       3.224671290700398e-01, 7.784695709041462e-03};
  double q;
  if (p < PLOW) {
    q = sqrt(-2.0 * log(p));
    return horner(c, 5, q) / horner(d, 4, q);
  } else if (p > PHIGH) {
    q = sqrt(-2.0 * log(1.0 - p));
    return -horner(c, 5, q) / horner(d, 4, q);
  }
  q = p - 0.5;
  return q * horner(a, 5, q * q) / horner(b, 5, q * q);
}

extern "C" __global__ void acklam_probit_f64(float *x, const float *p, int n) {
  size_t i = (size_t)blockIdx.x * THREADS + threadIdx.x;
  if (i >= (size_t)n) return;
  const Halley h = {(double)p[i]};
  double v = initial(h.p);
  for (int it = 0; it < REFINE; ++it) v = h.step(v);
  x[i] = (float)v;
}
