// Absolute maximum of a half-precision tensor, the first pass of an FP8 / int8 scaling
// step: 264 blocks (two for each of an H100's 132 SMs) walk x with a grid-stride loop,
// each keeps its threads' running max |x| in float, folds them with a shared-memory tree
// and writes partial[blockIdx.x]; the host takes the max of the 264 partials. The body is
// a function template over the block size, instantiated at 256.
// Launch: grid = 264, block = 256.
#include <cuda_fp16.h>

template <int BLOCK>
__device__ void block_absmax(float* partial, const __half* x, int n) {
  __shared__ float red[BLOCK];
  float m = 0.0f;
  for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < n;
       i += (long long)gridDim.x * BLOCK)
    m = fmaxf(m, fabsf(__half2float(x[i])));
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = red[0];
}

extern "C" __global__ void amax_f16_partials(float* partial, const __half* x, int n) {
  block_absmax<256>(partial, x, n);
}
