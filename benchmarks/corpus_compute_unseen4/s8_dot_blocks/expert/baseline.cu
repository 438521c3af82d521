// Dot product of two int8 vectors, first pass: a fixed grid of NUM_BLOCKS blocks walks the
// vectors with a grid-stride loop (thread t of block b takes elements b * BLOCK + t,
// then every NUM_BLOCKS * BLOCK further), each thread keeping an int sum; each block adds
// its threads' sums in shared memory and writes partial[b]. The host adds the NUM_BLOCKS
// partials.
// Launch: grid = NUM_BLOCKS, block = BLOCK.
#define NUM_BLOCKS 264  // two blocks per SM of an H100
#define BLOCK 256

extern "C" __global__ void s8_dot_blocks(int* partial, const signed char* x,
                                         const signed char* y, int n) {
  __shared__ int red[BLOCK];
  int sum = 0;
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += NUM_BLOCKS * BLOCK)
    sum += (int)x[i] * (int)y[i];
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = red[0];
}
