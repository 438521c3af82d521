// For every b < batch: out[b] (rows x cols) = lhs[b] (rows x inner) . rhs[b] (inner x cols),
// float, each matrix row-major and the matrices packed back to back. Small matrices,
// many of them: one block per TW x TW piece of one product, staged through shared memory.
// Launch: grid = ((cols + TW - 1) / TW, (rows + TW - 1) / TW, batch), block = (TW, TW).
#ifndef TW
#define TW 16
#endif

extern "C" __global__ void batched_matmul(float* out, const float* lhs, const float* rhs,
                                          int batch, int rows, int inner, int cols) {
  __shared__ float sl[TW][TW];
  __shared__ float sr[TW][TW];
  int b = blockIdx.z;
  const float* L = lhs + (long long)b * rows * inner;
  const float* Rm = rhs + (long long)b * inner * cols;
  int r = blockIdx.y * TW + threadIdx.y;
  int c = blockIdx.x * TW + threadIdx.x;
  float sum = 0.0f;
  for (int p = 0; p < inner; p += TW) {
    int lc = p + threadIdx.x, rr = p + threadIdx.y;
    sl[threadIdx.y][threadIdx.x] = (r < rows && lc < inner) ? L[r * inner + lc] : 0.0f;
    sr[threadIdx.y][threadIdx.x] = (rr < inner && c < cols) ? Rm[rr * cols + c] : 0.0f;
    __syncthreads();
    for (int q = 0; q < TW; ++q) sum += sl[threadIdx.y][q] * sr[q][threadIdx.x];
    __syncthreads();
  }
  if (r < rows && c < cols) out[((long long)b * rows + r) * cols + c] = sum;
}
