// out[r, c] = max(x[r, c] + bias[c], 0) for x [rows, cols] (float).
// Launch: grid = rows, block = 128.
extern "C" __global__ void bias_relu(float* __restrict__ out, const float* __restrict__ x,
                                     const float* __restrict__ bias, int cols) {
  long long base = (long long)blockIdx.x * cols;
  for (int c = threadIdx.x; c < cols; c += 128) {
    out[base + c] = fmaxf(x[base + c] + bias[c], 0.0f);
  }
}
