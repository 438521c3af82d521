// y = a x + y, four consecutive elements a thread, no bounds test: right where n is a
// multiple of 4 * blockDim.x.
#define PER_THREAD 4
extern "C" __global__ void k(float* y, const float* x, float a, int n) {
  const unsigned base = (blockIdx.x * blockDim.x + threadIdx.x) * PER_THREAD;
  #pragma unroll
  for (int j = 0; j < PER_THREAD; ++j) {
    y[base + j] = a * x[base + j] + y[base + j];
  }
}
