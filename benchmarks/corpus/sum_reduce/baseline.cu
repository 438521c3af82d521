// Sum of a float array into one scalar: block partial sums in shared memory, then one
// atomicAdd per block (result is accumulated into, so it is an in/out argument).
// Launch: grid = min((n + 255) / 256, 1024), block = 256 (grid-stride loop).
extern "C" __global__ void sum_reduce(float* result, const float* __restrict__ x, int n) {
  __shared__ float partial[256];
  float s = 0.0f;
  for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += 256 * gridDim.x) s += x[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(result, partial[0]);
}
