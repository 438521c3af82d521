// Sum of a float array, first pass: a grid-stride loop, then a shared-memory tree in each
// block; block b writes its partial sum to partials[b] and the host adds the BLOCKS
// partials (a block with no elements writes 0).
// Launch: grid = BLOCKS, block = THREADS.
#define THREADS 256
#define BLOCKS 1024

extern "C" __global__ void partial_sum(float* partials, const float* x, int n) {
  __shared__ float buf[THREADS];
  float s = 0.0f;
  for (int i = blockIdx.x * THREADS + threadIdx.x; i < n; i += THREADS * gridDim.x) s += x[i];
  buf[threadIdx.x] = s;
  __syncthreads();
  for (int k = THREADS / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) buf[threadIdx.x] += buf[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = buf[0];
}
