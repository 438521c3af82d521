// Row-wise L2 normalisation of x [rows, cols]:
//   norms[r] = ||x[r, :]||_2,  y[r, :] = x[r, :] / max(norms[r], EPS)
// One warp per row: a block of (32, ROWS_PER_BLOCK) threads, threadIdx.y picks the row, the
// 32 lanes stride along it and combine their sums of squares with shuffles.
// Launch: grid = (rows + 7) / 8, block = (32, 8).
#define ROWS_PER_BLOCK 8
#define EPS 1e-12f

extern "C" __global__ void row_l2norm(float* y, float* norms, const float* x, int rows,
                                      int cols) {
  int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.y;
  if (row >= rows) return;  // the whole warp: all 32 lanes share threadIdx.y
  const float* xr = x + (size_t)row * cols;
  float ss = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 32) ss += xr[c] * xr[c];
  for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffff, ss, off);
  float norm = sqrtf(ss);
  float inv = 1.0f / fmaxf(norm, EPS);
  float* yr = y + (size_t)row * cols;
  for (int c = threadIdx.x; c < cols; c += 32) yr[c] = xr[c] * inv;
  if (threadIdx.x == 0) norms[row] = norm;
}
