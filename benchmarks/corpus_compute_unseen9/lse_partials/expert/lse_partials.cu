// First pass of a log-sum-exp over one long vector (the normaliser of a softmax over a
// huge vocabulary, or a log-likelihood total): 512 blocks of 256 threads walk x with a
// grid-stride loop; each thread keeps an online pair (m, s) = (its max, the sum of
// exp(x - m) over its elements), the block merges its pairs with a shared-memory tree and
// writes pmax[b], psum[b]. The host merges the 512 pairs: lse = M + log(sum s_b e^(m_b - M)).
// Launch: grid = 512, block = 256.
#define NUM_BLOCKS 512
#define BLOCK_SIZE 256
#define LOWEST -3.0e38f  // the start of a max: below any x, and exp(LOWEST - x) is 0

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mx = fmaxf(m, m2);
  s = s * expf(m - mx) + s2 * expf(m2 - mx);
  m = mx;
}

extern "C" __global__ void lse_partials(float* __restrict__ pmax, float* __restrict__ psum,
                                        const float* __restrict__ x, int n) {
  __shared__ float sm[BLOCK_SIZE], ss[BLOCK_SIZE];
  const int t = threadIdx.x;
  float m = LOWEST, s = 0.0f;
  for (int i = blockIdx.x * BLOCK_SIZE + t; i < n; i += NUM_BLOCKS * BLOCK_SIZE) {
    const float v = x[i];
    if (v > m) {
      s = s * expf(m - v) + 1.0f;
      m = v;
    } else {
      s += expf(v - m);
    }
  }
  sm[t] = m;
  ss[t] = s;
  __syncthreads();
  for (int stride = BLOCK_SIZE / 2; stride > 0; stride /= 2) {
    if (t < stride) merge(sm[t], ss[t], sm[t + stride], ss[t + stride]);
    __syncthreads();
  }
  if (t == 0) {
    pmax[blockIdx.x] = sm[0];
    psum[blockIdx.x] = ss[0];
  }
}
