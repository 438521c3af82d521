// RMS norm over the rows of x [rows, d]: out = x / sqrt(mean(x^2) + eps) * w.
// Launch: grid = rows, block = 256.
extern "C" __global__ void rms_norm(float* __restrict__ out, const float* __restrict__ x,
                                    const float* __restrict__ w, int d, float eps) {
  __shared__ float partial[256];
  int row = blockIdx.x;
  const float* xr = x + (long long)row * d;
  float* orow = out + (long long)row * d;

  float s = 0.0f;
  for (int j = threadIdx.x; j < d; j += 256) {
    float v = xr[j];
    s += v * v;
  }
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
    __syncthreads();
  }
  float inv = rsqrtf(partial[0] / d + eps);
  for (int j = threadIdx.x; j < d; j += 256) {
    orow[j] = xr[j] * inv * w[j];
  }
}
