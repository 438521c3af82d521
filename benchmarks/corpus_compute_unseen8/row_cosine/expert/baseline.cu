// Row-wise cosine similarity of two matrices, as in a contrastive loss or a retrieval
// re-rank: cosv[r] = <a_r, b_r> / max(|a_r| |b_r|, 1e-20) for a, b [rows, cols] row-major
// fp32. A warp per row: each lane strides the row by 32 accumulating the three sums, the
// warp adds them with xor shuffles and lane 0 writes. Four warps (rows) a block; a warp past
// the last row leaves at once.
// Launch: grid = (rows + 3) / 4, block = 128.
#define ROWS_PER_BLOCK 4

extern "C" __global__ void row_cosine(float* cosv, const float* a, const float* b, int rows,
                                      int cols) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
  if (row >= rows) return;
  const float* ar = a + (size_t)row * cols;
  const float* br = b + (size_t)row * cols;
  float ab = 0.0f, aa = 0.0f, bb = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    const float u = ar[c], v = br[c];
    ab += u * v;
    aa += u * u;
    bb += v * v;
  }
  for (int off = 16; off > 0; off >>= 1) {
    ab += __shfl_xor_sync(0xffffffffu, ab, off);
    aa += __shfl_xor_sync(0xffffffffu, aa, off);
    bb += __shfl_xor_sync(0xffffffffu, bb, off);
  }
  if (lane == 0) cosv[row] = ab / fmaxf(sqrtf(aa) * sqrtf(bb), 1e-20f);
}
