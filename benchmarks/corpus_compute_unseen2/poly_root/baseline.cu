// Per element i: the root x in [0, 1] of p(x) = y[i], where p is polynomial sel[i] of a
// table of NPOLY degree-DEG polynomials in constant memory (coef[s * (DEG + 1) + k] is
// the x^k coefficient of polynomial s; each is increasing on [0, 1], y[i] lies between
// p(0) and p(1)). Safeguarded Newton from x = 0.5: the bracket [lo, hi] shrinks on the
// sign of p(x) - y, a Newton step that leaves it is replaced by bisection, and the
// iteration stops once a step moves x by less than TOL (or after MAX_STEPS steps).
// Launch: grid = (n + 127) / 128, block = 128.
#define NPOLY 8
#define DEG 7
#define MAX_STEPS 60
#define TOL 1e-6f

__constant__ float coef[NPOLY * (DEG + 1)];

extern "C" __global__ void poly_root(float* root, const float* y, const int* sel, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) {
    const float* c = &coef[sel[i] * (DEG + 1)];
    const float target = y[i];
    float lo = 0.0f, hi = 1.0f, x = 0.5f;
    for (int step = 0; step < MAX_STEPS; step++) {
      float p = c[DEG], dp = 0.0f;
      for (int k = DEG - 1; k >= 0; k--) {
        dp = dp * x + p;
        p = p * x + c[k];
      }
      const float f = p - target;
      if (f < 0.0f)
        lo = x;
      else
        hi = x;
      float xn = x - f / dp;
      if (!(xn > lo && xn < hi)) xn = 0.5f * (lo + hi);
      const float dx = fabsf(xn - x);
      x = xn;
      if (dx < TOL) break;
    }
    root[i] = x;
  }
}
