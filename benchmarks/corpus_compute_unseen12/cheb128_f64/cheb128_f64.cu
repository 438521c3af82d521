// y[i] = sum_j c[j] T_j(t) for the 128 Chebyshev coefficients c (floats, summed in double) at
// t = (2 x[i] - (LO + HI)) / (HI - LO), the point's place in the fit's interval [LO, HI];
// points outside the interval are clamped to its ends. Clenshaw's recurrence in double, a
// do-while from the top coefficient down. One point per thread, 256 threads a block.
// Launch: grid = ((n + 255) / 256), block = (256).

#define NCOEF 128
#define LO (-2.0)
#define HI 3.0

__device__ double clenshaw(const float* c, double t) {
  double b1 = 0.0, b2 = 0.0;
  int j = NCOEF - 1;
  do {
    const double b0 = 2.0 * t * b1 - b2 + (double)c[j];
    b2 = b1;
    b1 = b0;
    --j;
  } while (j > 0);
  return t * b1 - b2 + (double)c[0];
}

extern "C" __global__ void cheb128_f64(float* y, const float* x, const float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double t = (2.0 * (double)x[i] - (LO + HI)) / (HI - LO);
  if (t > 1.0) {
    t = 1.0;
  } else if (t < -1.0) {
    t = -1.0;
  }
  y[i] = (float)clenshaw(c, t);
}
