// One partial sum a block of 256: a shared tree, no bounds test on the load (n a multiple
// of 256), so each block's element range is [256 b, 256 b + 256).
#define TPB 256
extern "C" __global__ void k(float* partial, const float* x, int n) {
  __shared__ float s[TPB];
  const int t = threadIdx.x;
  s[t] = x[blockIdx.x * TPB + t];
  __syncthreads();
  for (int stride = TPB / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = s[0];
}
