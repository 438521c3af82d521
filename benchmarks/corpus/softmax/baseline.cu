// Row softmax of x [rows, cols] (float), numerically stable (max subtracted).
// Launch: grid = rows, block = 256.
extern "C" __global__ void softmax(float* __restrict__ y, const float* __restrict__ x, int cols) {
  __shared__ float red[256];
  const float* xr = x + (long long)blockIdx.x * cols;
  float* yr = y + (long long)blockIdx.x * cols;

  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += 256) m = fmaxf(m, xr[c]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = 128; s > 0; s /= 2) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();

  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 256) sum += __expf(xr[c] - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = 128; s > 0; s /= 2) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  float inv = 1.0f / red[0];

  for (int c = threadIdx.x; c < cols; c += 256) yr[c] = __expf(xr[c] - m) * inv;
}
