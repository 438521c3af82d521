// Sum of a float array, first pass. A function template over the block size (instantiated
// at 256) strides the grid in a while loop, then halves a shared tree in a do-while; block
// b writes partials[b] and the host adds them.
// Launch: grid = 512, block = 256.
template <int NT>
__device__ void block_partial(float* partials, const float* x, int n) {
  __shared__ float red[NT];
  float acc = 0.0f;
  int i = blockIdx.x * NT + threadIdx.x;
  while (i < n) {
    acc += x[i];
    i += NT * gridDim.x;
  }
  red[threadIdx.x] = acc;
  __syncthreads();
  int half = NT / 2;
  do {
    if (threadIdx.x < half) red[threadIdx.x] += red[threadIdx.x + half];
    __syncthreads();
    half /= 2;
  } while (half > 0);
  if (threadIdx.x == 0) partials[blockIdx.x] = red[0];
}

extern "C" __global__ void v2_partials_template_do(float* partials, const float* x, int n) {
  block_partial<256>(partials, x, n);
}
