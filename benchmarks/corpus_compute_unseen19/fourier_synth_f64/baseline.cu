// Evaluates a 512-term Fourier series at each sample, in double:
//   out[i] = sum_{k=1..512} a[k-1] cos(k t[i]) + b[k-1] sin(k t[i])
// with cos(k t), sin(k t) advanced by the rotation recurrence from cos(t), sin(t).
// Grid-stride loop, 64-bit sizes, 256 threads a block.
// Launch: grid = ((n + 255) / 256), block = (256).

#include <cstdint>

constexpr int kTerms = 512;

extern "C" __global__ void fourier_synth_f64(float* __restrict__ out,
                                             const float* __restrict__ t,
                                             const float* __restrict__ a,
                                             const float* __restrict__ b, int64_t n) {
  for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < n;
       idx += (int64_t)blockDim.x * gridDim.x) {
    const double theta = t[idx];
    const double c1 = cos(theta), s1 = sin(theta);
    double ck = c1, sk = s1, acc = 0.0;
    for (int k = 0; k < kTerms; ++k) {
      acc += (double)a[k] * ck + (double)b[k] * sk;
      const double cn = ck * c1 - sk * s1;
      sk = sk * c1 + ck * s1;
      ck = cn;
    }
    out[idx] = (float)acc;
  }
}
