// Weighted sum of squared errors, first pass: block b adds w[i] * (pred[i] - target[i])^2
// over its own chunk of CHUNK consecutive elements (its THREADS threads stride through the
// chunk), reduces the per-thread sums in shared memory and writes partials[b]; the host adds
// the ceil(n / CHUNK) partials.
// Launch: grid = (n + CHUNK - 1) / CHUNK, block = THREADS.
#define THREADS 256
#define CHUNK 4096

extern "C" __global__ void sse_partials(float* partials, const float* pred, const float* target,
                                        const float* w, int n) {
  __shared__ float buf[THREADS];
  int begin = blockIdx.x * CHUNK;
  int end = min(begin + CHUNK, n);
  float s = 0.0f;
  for (int i = begin + threadIdx.x; i < end; i += THREADS) {
    float d = pred[i] - target[i];
    s += w[i] * d * d;
  }
  buf[threadIdx.x] = s;
  __syncthreads();
  for (int k = THREADS / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) buf[threadIdx.x] += buf[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = buf[0];
}
