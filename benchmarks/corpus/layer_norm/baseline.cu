// Layer norm with affine over rows of x [rows, d]:
//   out = (x - mean) / sqrt(var + eps) * gamma + beta   (two-pass variance)
// Launch: grid = rows, block = 256.
extern "C" __global__ void layer_norm(float* __restrict__ out, const float* __restrict__ x,
                                      const float* __restrict__ gamma,
                                      const float* __restrict__ beta, int d, float eps) {
  __shared__ float buf[256];
  const float* xr = x + (long long)blockIdx.x * d;
  int tid = threadIdx.x;

  float s = 0.0f;
  for (int j = tid; j < d; j += 256) s += xr[j];
  buf[tid] = s;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (tid < k) buf[tid] += buf[tid + k];
    __syncthreads();
  }
  float mean = buf[0] / d;
  __syncthreads();

  float q = 0.0f;
  for (int j = tid; j < d; j += 256) {
    float c = xr[j] - mean;
    q += c * c;
  }
  buf[tid] = q;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (tid < k) buf[tid] += buf[tid + k];
    __syncthreads();
  }
  float rstd = rsqrtf(buf[0] / d + eps);

  for (int j = tid; j < d; j += 256) {
    out[(long long)blockIdx.x * d + j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
  }
}
