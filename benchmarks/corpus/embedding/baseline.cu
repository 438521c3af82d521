// Embedding lookup: out[t, :] = table[ids[t], :] for table [vocab, d] (float).
// Launch: grid = tokens, block = 256.
extern "C" __global__ void embedding(float* __restrict__ out, const float* __restrict__ table,
                                     const int* __restrict__ ids, int d) {
  int t = blockIdx.x;
  int id = ids[t];
  for (int j = threadIdx.x; j < d; j += 256) {
    out[(long long)t * d + j] = table[(long long)id * d + j];
  }
}
