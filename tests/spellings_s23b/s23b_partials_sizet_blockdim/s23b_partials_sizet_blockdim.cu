// Sum of a float array, first pass: block b writes partials[b], the host adds them. The
// indices are size_t, the strides read blockDim.x and gridDim.x, the tree halves an
// unsigned stride from blockDim.x / 2.
// Launch: grid = 480, block = 256.
extern "C" __global__ void s23b_partials_sizet_blockdim(float* partials,
                                                        const float* __restrict__ x, int n) {
  __shared__ float sdata[256];
  const size_t stride = (size_t)blockDim.x * gridDim.x;
  float acc = 0.0f;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += stride)
    acc += __ldg(&x[i]);
  sdata[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = sdata[0];
}
