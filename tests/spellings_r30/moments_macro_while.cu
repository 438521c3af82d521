// moments_partials, another hand: a macro chunk, one shared array of two doubles, a while
// over the chunk with indices from the chunk's start, an early return for all but thread 0.
#define CHUNK 4096

extern "C" __global__ void moments_partials(float* __restrict__ sums, float* __restrict__ sumsq,
                                            const float* __restrict__ x, int n) {
  __shared__ double acc[2];
  const unsigned tid = threadIdx.x;
  if (tid == 0) {
    acc[0] = 0.0;
    acc[1] = 0.0;
  }
  __syncthreads();
  const size_t begin = (size_t)blockIdx.x * CHUNK;
  const int count = min(CHUNK, (int)(n - begin));
  double s = 0.0, q = 0.0;
  int j = tid;
  while (j < count) {
    const double v = x[begin + j];
    s += v;
    q += v * v;
    j += blockDim.x;
  }
  atomicAdd(&acc[0], s);
  atomicAdd(&acc[1], q);
  __syncthreads();
  if (tid != 0) return;
  sums[blockIdx.x] = (float)acc[0];
  sumsq[blockIdx.x] = (float)acc[1];
}
