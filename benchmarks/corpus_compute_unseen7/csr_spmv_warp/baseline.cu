// Sparse matrix times vector, y = A x, A [rows, cols] in CSR form (row_ptr [rows + 1],
// col_idx and vals [nnz], column indices in any order), fp32. The "vector" CSR kernel: one
// warp per row, lane l takes the row's nonzeros l, l + 32, ...; the lanes' sums are added
// with shuffles and lane 0 writes y. Four warps a block; a warp past the last row leaves.
// Launch: grid = (rows + 3) / 4, block = 128.
enum { kWarp = 32, kWarpsPerBlock = 4 };

extern "C" __global__ void csr_spmv_warp(float* y, const int* row_ptr, const int* col_idx,
                                         const float* vals, const float* x, int rows) {
  const int lane = threadIdx.x % kWarp;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarp;
  if (row >= rows) return;  // the whole warp: its lanes share the row
  const int begin = row_ptr[row];
  const int end = row_ptr[row + 1];
  float sum = 0.0f;
  for (int j = begin + lane; j < end; j += kWarp) sum += vals[j] * x[col_idx[j]];
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) y[row] = sum;
}
