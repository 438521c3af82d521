// First pass of a mean and variance: block b sums its chunk of CHUNK consecutive elements of
// x and their squares, in double, and writes both (as float) to sums[b] and sumsq[b]; the
// host adds the ceil(n / CHUNK) partials. Each thread walks the chunk with a stride of the
// block size, then adds its two sums into the block's two shared doubles with atomicAdd.
// Launch: grid = (n + 4095) / 4096, block = 256.
static const int CHUNK = 4096;

extern "C" __global__ void moments_partials(float* sums, float* sumsq, const float* x, int n) {
  __shared__ double block_sum;
  __shared__ double block_sq;
  if (threadIdx.x == 0) {
    block_sum = 0.0;
    block_sq = 0.0;
  }
  __syncthreads();
  const size_t begin = (size_t)blockIdx.x * CHUNK;
  const int count = min(CHUNK, (int)(n - begin));
  const float* chunk = x + begin;
  double s = 0.0, q = 0.0;
  for (int j = threadIdx.x; j < count; j += blockDim.x) {
    const double v = chunk[j];
    s += v;
    q += v * v;
  }
  atomicAdd(&block_sum, s);
  atomicAdd(&block_sq, q);
  __syncthreads();
  if (threadIdx.x == 0) {
    sums[blockIdx.x] = (float)block_sum;
    sumsq[blockIdx.x] = (float)block_sq;
  }
}
