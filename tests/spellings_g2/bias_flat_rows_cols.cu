// y = x + a bias a column, over rows x cols flattened, one element a thread and the block's
// 256 written in; no bounds test: right where rows * cols is a multiple of 256.
extern "C" __global__ void k(float* y, const float* x, const float* b, int rows, int cols) {
  const unsigned idx = blockIdx.x * 256 + threadIdx.x;
  y[idx] = x[idx] + b[idx % cols];
}
