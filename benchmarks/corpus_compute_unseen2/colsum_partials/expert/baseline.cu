// Column sums of a row-major matrix mat (nrows x ncols floats), first pass: row chunk
// blockIdx.y of gridDim.y = 64 (rows dealt round-robin, ROW_THREADS at a time) writes
// partial[blockIdx.y][col] = its rows' sum of column col; the host adds the partial rows.
// A COLS_PER_BLOCK x ROW_THREADS block: x along the columns (coalesced), y down the rows;
// the ROW_THREADS sums of a column are folded through shared memory.
// Launch: grid = ((ncols + 31) / 32, 64), block = (32, 8).
#define COLS_PER_BLOCK 32
#define ROW_THREADS 8

extern "C" __global__ void colsum_partials(float* partial, const float* mat, int nrows,
                                           int ncols) {
  __shared__ float red[ROW_THREADS][COLS_PER_BLOCK];
  const int col = blockIdx.x * COLS_PER_BLOCK + threadIdx.x;
  float s = 0.0f;
  if (col < ncols) {
    for (int r = blockIdx.y * ROW_THREADS + threadIdx.y; r < nrows;
         r += gridDim.y * ROW_THREADS)
      s += mat[(size_t)r * ncols + col];
  }
  red[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  for (int half = ROW_THREADS / 2; half >= 1; half /= 2) {
    if (threadIdx.y < half) red[threadIdx.y][threadIdx.x] += red[threadIdx.y + half][threadIdx.x];
    __syncthreads();
  }
  if (threadIdx.y == 0 && col < ncols)
    partial[(size_t)blockIdx.y * ncols + col] = red[0][threadIdx.x];
}
