// partials[b] = sum of x (doubles) over block b's share: a for walk with the stride
// blockDim.x * gridDim.x, each warp's sum by a __shfl_down_sync loop from warpSize / 2, the
// warps' sums in shared slots, warp 0 (threadIdx.x < 32) folding them, thread 0 storing
extern "C" __global__ void k(double* partials, const double* x, int n) {
  __shared__ double warp_total[32];
  double acc = 0.0;
  for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < n; g += blockDim.x * gridDim.x) {
    acc = acc + x[g];
  }
  for (int d = warpSize / 2; d > 0; d >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, d);
  if ((threadIdx.x & 31) == 0) warp_total[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    double t = threadIdx.x < blockDim.x / warpSize ? warp_total[threadIdx.x] : 0.0;
    for (int d = warpSize / 2; d > 0; d >>= 1) t += __shfl_down_sync(0xffffffffu, t, d);
    if (threadIdx.x == 0) partials[blockIdx.x] = t;
  }
}
