// Column sums of x [rows, cols] (float): one thread per column walks down the rows.
// Launch: grid = (cols + 255) / 256, block = 256.
extern "C" __global__ void col_sum(float* __restrict__ out, const float* __restrict__ x,
                                   int rows, int cols) {
  int c = blockIdx.x * 256 + threadIdx.x;
  if (c >= cols) return;
  float s = 0.0f;
  for (int r = 0; r < rows; ++r) s += x[(long long)r * cols + c];
  out[c] = s;
}
