// y = x correlated with a 31-tap __constant__ filter, zero outside [0, n); one output a
// thread, an early return past n, the input read through a helper returning the sample or
// zero, the taps counted from -R to R
#define R 15
__constant__ float taps[2 * R + 1];
__device__ __forceinline__ float sample(const float* x, int i, int n) {
  return (i >= 0 && i < n) ? x[i] : 0.0f;
}

extern "C" __global__ void k(float* y, const float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  for (int t = -R; t <= R; ++t) acc += taps[t + R] * sample(x, i + t, n);
  y[i] = acc;
}
