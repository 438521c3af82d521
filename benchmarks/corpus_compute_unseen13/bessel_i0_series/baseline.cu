// y[i] = I0(x[i]), the modified Bessel function of the first kind of order zero, summed
// from its power series sum_k ((x / 2)^2)^k / (k!)^2 in double until a term falls below
// 1e-17 of the sum (about 45 terms at |x| = 30, a few near 0), rounded to float.
// One point per thread, 256 threads a block.
// Launch: grid = ((n + 255) / 256), block = (256).

#define TERM_EPS 1e-17

extern "C" __global__ void bessel_i0_series(float* __restrict__ y, const float* __restrict__ x,
                                            int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double half = 0.5 * (double)x[i];
  const double q = half * half;
  double term = 1.0, sum = 1.0;
  int k = 1;
  do {
    term *= q / ((double)k * (double)k);
    sum += term;
    ++k;
  } while (term > TERM_EPS * sum);
  y[i] = (float)sum;
}
