// y[i] = the logistic map x <- r x (1 - x) iterated 64 times from x[i], r from a per-element
// rate: a template helper over the iteration count, one element a thread, the point from a
// 2-D grid of 1-D blocks flattened, the store under an if.
// Launch: grid = (64, (n + 64 * 256 - 1) / (64 * 256)), block = 256.
template <int ITERS>
__device__ float logistic(float r, float v) {
#pragma unroll 4
  for (int k = 0; k < ITERS; ++k) v = r * v * (1.0f - v);
  return v;
}

extern "C" __global__ void v2_logistic_template_iters(float* y, const float* x,
                                                      const float* rate, int n) {
  const int i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = logistic<64>(3.5f + 0.4f * rate[i], x[i]);
}
