// *total += sum of x: a while walk (stride blockDim.x * gridDim.x in a local declared
// after the accumulator), a shared tree from blockDim.x >> 1 spelled with /= 2, thread 0
// adding the block's sum by atomicAdd
extern "C" __global__ void k(float* total, const float* x, int n) {
  __shared__ float cache[256];
  int pos = blockIdx.x * blockDim.x + threadIdx.x;
  float running = 0.0f;
  int jump = blockDim.x * gridDim.x;
  while (pos < n) {
    running = running + x[pos];
    pos += jump;
  }
  cache[threadIdx.x] = running;
  __syncthreads();
  for (int half = blockDim.x >> 1; half != 0; half /= 2) {
    if (threadIdx.x < half) cache[threadIdx.x] += cache[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(total, cache[0]);
}
