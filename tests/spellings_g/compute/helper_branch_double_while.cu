// out[i] = a damped fixed point of in[i] in double, the loop a while in a __device__ helper
// with an early return per branch
__device__ double damped(double x) {
  if (x < 0.0) return -x;
  double g = x + 1.0;
  int step = 0;
  while (step < 40) {
    g = 0.5 * (g + (x + 2.0) / g);
    ++step;
  }
  return g;
}

extern "C" __global__ void k(double* out, const double* in, int n) {
  int i = threadIdx.x + blockDim.x * blockIdx.x;
  if (i < n) out[i] = damped(in[i]);
}
