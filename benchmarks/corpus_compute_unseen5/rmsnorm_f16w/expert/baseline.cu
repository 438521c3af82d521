// RMS normalisation of each row of a half-precision matrix x [rows, cols] with a
// half-precision weight w [cols]:
//   y[r][c] = x[r][c] / sqrt(mean over c of x[r][c]^2 + EPS) * w[c]
// sums in float, y rounded to half. One block of 256 threads per row: the threads stride
// along the row, add their sums of squares in a shared-memory tree, then scale the row.
// Launch: grid = rows, block = 256.
#include <cuda_fp16.h>

#define EPS 1e-5f
#define ROW_THREADS 256

// The sum of v over the N threads of the block (a tree in buf, N a power of two); every
// thread gets it.
template <int N>
__device__ float block_sum(float v, float* buf) {
  buf[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = N >> 1; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  return buf[0];
}

extern "C" __global__ void rmsnorm_f16w(__half* y, const __half* x, const __half* w, int rows,
                                        int cols) {
  __shared__ float partial[ROW_THREADS];
  const int row = blockIdx.x;
  const __half* xr = x + (size_t)row * cols;
  __half* yr = y + (size_t)row * cols;
  float ss = 0.0f;
  for (int c = threadIdx.x; c < cols; c += ROW_THREADS) {
    const float v = __half2float(xr[c]);
    ss += v * v;
  }
  const float inv = rsqrtf(block_sum<ROW_THREADS>(ss, partial) / cols + EPS);
  for (int c = threadIdx.x; c < cols; c += ROW_THREADS)
    yr[c] = __float2half(__half2float(xr[c]) * inv * __half2float(w[c]));
}
