// partials[b] = sum of x over block b's grid-stride share: a while walk whose stride is a
// local (gridDim.x * blockDim.x), each warp's sum by five unrolled __shfl_xor_sync, warp 0
// over the warps' sums through lane / warp locals, lane 0 of warp 0 writing the partial
extern "C" __global__ void k(float* partials, const float* x, int n) {
  __shared__ float per_warp[32];
  unsigned idx = threadIdx.x + blockIdx.x * blockDim.x;
  unsigned step = gridDim.x * blockDim.x;
  float sum = 0.f;
  while (idx < n) {
    sum += x[idx];
    idx += step;
  }
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  sum += __shfl_xor_sync(0xffffffff, sum, 16);
  sum += __shfl_xor_sync(0xffffffff, sum, 8);
  sum += __shfl_xor_sync(0xffffffff, sum, 4);
  sum += __shfl_xor_sync(0xffffffff, sum, 2);
  sum += __shfl_xor_sync(0xffffffff, sum, 1);
  if (lane == 0) per_warp[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    float v = lane < blockDim.x / 32 ? per_warp[lane] : 0.f;
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffff, v, off);
    if (lane == 0) partials[blockIdx.x] = v;
  }
}
