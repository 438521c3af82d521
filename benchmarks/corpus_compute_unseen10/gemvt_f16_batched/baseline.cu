// Batched transposed matrix-vector product with half-precision matrices (the backward pass
// of a linear layer per sample, or projecting a batch of row-major weight blocks): for
// every batch entry b and column j,
//   y[b][j] = sum over i of A[b][i][j] * x[b][i]
// A is [batch, rows, cols] half, x [batch, rows] and y [batch, cols] float, sums in float.
// A thread owns a column and walks down it (neighbouring threads read neighbouring halves
// of a row); blockIdx.y is the batch entry.
// Launch: grid = ((cols + 255) / 256, batch), block = 256.
#include <cuda_fp16.h>

#define THREADS 256

extern "C" __global__ void gemvt_f16_batched(float* y, const __half* A, const float* x,
                                             int rows, int cols) {
  const int col = blockIdx.x * THREADS + threadIdx.x;
  const int b = blockIdx.y;
  if (col >= cols) return;
  const __half* a = A + (size_t)b * rows * cols + col;
  const float* xb = x + (size_t)b * rows;
  float sum = 0.0f;
  int i = 0;
  while (i < rows) {
    sum += __half2float(*a) * xb[i];
    a += cols;
    ++i;
  }
  y[(size_t)b * cols + col] = sum;
}
