// Rows of x [rows, d] scaled to unit L2 norm: out = x / max(||x||, 1e-12).
// Launch: grid = rows, block = 512.
extern "C" __global__ void l2_normalize(float* __restrict__ out, const float* __restrict__ x,
                                        int d) {
  __shared__ float acc[512];
  const float* xr = x + (long long)blockIdx.x * d;
  float s = 0.0f;
  for (int j = threadIdx.x; j < d; j += 512) s += xr[j] * xr[j];
  acc[threadIdx.x] = s;
  __syncthreads();
  for (int k = 256; k > 0; k >>= 1) {
    if (threadIdx.x < k) acc[threadIdx.x] += acc[threadIdx.x + k];
    __syncthreads();
  }
  float inv = 1.0f / fmaxf(sqrtf(acc[0]), 1e-12f);
  for (int j = threadIdx.x; j < d; j += 512) out[(long long)blockIdx.x * d + j] = xr[j] * inv;
}
