// out[i] = J0(x[i]), the Bessel function of the first kind of order 0, by Miller's backward
// recurrence in double: j_{k-1} = (2k / x) j_k - j_{k+1} from j_61 = 0 and j_60 = 1e-30 down
// to j_0, normalised by the identity J0 + 2 (J2 + J4 + ...) = 1; the values are scaled down
// whenever they pass 1e60. x in [0.5, 30]. One element a thread, 256 threads a block.
// Launch: grid = ((n + 255) / 256), block = (256).

namespace bessel {

template <int M>
__device__ double j0_miller(double x) {
  double jp = 0.0, j = 1.0e-30, even = 0.0;
  int k = M;
  while (k > 0) {
    const double jm = 2.0 * k / x * j - jp;
    jp = j;
    j = jm;
    --k;
    if (k % 2 == 0 && k > 0) even += j;  // j is j_k now
    if (fabs(j) > 1.0e60) {
      j *= 1.0e-60;
      jp *= 1.0e-60;
      even *= 1.0e-60;
    }
  }
  return j / (j + 2.0 * even);
}

}  // namespace bessel

extern "C" __global__ void besselj0_miller_f64(float* __restrict__ out, const float* __restrict__ x,
                                               int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (float)bessel::j0_miller<60>(x[i]);
}
