// Inclusive prefix sum along each row, as in a cumulative-probability table for sampling
// or a ragged-offset computation: y[r][c] = x[r][0] + ... + x[r][c] for x, y [rows, cols]
// row-major fp32. One block per row walks it in 256-element chunks: each chunk is scanned
// in shared memory (Hillis-Steele, log2(256) = 8 rounds) and offset by the running total of
// the chunks before it.
// Launch: grid = rows, block = 256.
#define BLOCK 256

extern "C" __global__ void row_cumsum(float* y, const float* x, int rows, int cols) {
  __shared__ float buf[BLOCK];
  const int t = threadIdx.x;
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* yr = y + (size_t)blockIdx.x * cols;
  float carry = 0.0f;
  for (int c0 = 0; c0 < cols; c0 += BLOCK) {
    const int c = c0 + t;
    buf[t] = c < cols ? xr[c] : 0.0f;
    __syncthreads();
    for (int off = 1; off < BLOCK; off *= 2) {
      const float v = t >= off ? buf[t - off] : 0.0f;
      __syncthreads();
      buf[t] += v;
      __syncthreads();
    }
    if (c < cols) yr[c] = carry + buf[t];
    carry += buf[BLOCK - 1];
    __syncthreads();
  }
}
