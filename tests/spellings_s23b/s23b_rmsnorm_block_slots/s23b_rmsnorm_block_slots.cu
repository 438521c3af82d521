// y[r, :] = x[r, :] * g / sqrt(mean(x[r, :]^2) + 1e-5): one block of 256 a row; each warp
// folds with down shuffles into its shared slot, every thread adds the eight slots.
// Launch: grid = rows, block = 256.
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

extern "C" __global__ void s23b_rmsnorm_block_slots(float* y, const float* x, const float* g,
                                                    int rows, int cols) {
  __shared__ float part[kWarps];
  const int row = blockIdx.x;
  if (row >= rows) return;
  const float* xr = x + (size_t)row * cols;
  float ss = 0.0f;
  for (int c = threadIdx.x; c < cols; c += kThreads) ss += xr[c] * xr[c];
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_down_sync(0xffffffffu, ss, o);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = ss;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) total += part[w];
  const float inv = rsqrtf(total / cols + 1e-5f);
  float* yr = y + (size_t)row * cols;
  for (int c = threadIdx.x; c < cols; c += kThreads) yr[c] = xr[c] * inv * g[c];
}
