// partials[b] = sum of x over block b's grid-stride share; the walk a while with the stride
// in a const local, the block's sum by warp shuffles then one warp over the warps' sums
#define NT 256

extern "C" __global__ void k(float* partials, const float* x, int n) {
  __shared__ float warp_sums[NT / 32];
  int i = blockIdx.x * NT + threadIdx.x;
  const int stride = NT * gridDim.x;
  float acc = 0.0f;
  while (i < n) {
    acc += x[i];
    i += stride;
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < NT / 32 ? warp_sums[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) partials[blockIdx.x] = v;
  }
}
