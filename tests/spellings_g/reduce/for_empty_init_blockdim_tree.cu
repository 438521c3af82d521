// partials[b] = sum of x over block b's share: `for (; i < n; i += stride)` with the stride
// from blockDim and gridDim, a shared tree whose start is blockDim.x / 2
extern "C" __global__ void k(float* partials, const float* x, int n) {
  __shared__ float red[256];
  unsigned t = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x + t;
  float s = 0.0f;
  for (; i < (unsigned)n; i += blockDim.x * gridDim.x) s += x[i];
  red[t] = s;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) red[t] += red[t + half];
    __syncthreads();
  }
  if (t == 0) partials[blockIdx.x] = red[0];
}
