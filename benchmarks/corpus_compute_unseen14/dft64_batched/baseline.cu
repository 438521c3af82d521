// A batch of short complex DFTs: X[b][k] = sum_j x[b][j] * exp(-2 pi i j k / 64) for
// 64-point signals x [batch, 64] of (re, im) pairs, summed directly (no FFT). Each block
// builds the 64 twiddles in shared memory, then each thread sums one bin of one signal
// through a templated helper; threadIdx.y picks one of the block's 4 signals.
// Launch: grid = ((batch + 3) / 4), block = (64, 4).

template <int N>
__device__ float2 dft_bin(const float2* __restrict__ xb, const float2* tw, int k) {
  float re = 0.0f, im = 0.0f;
  for (int j = 0; j < N; ++j) {
    const float2 v = xb[j];
    const float2 w = tw[(j * k) & (N - 1)];
    re += v.x * w.x - v.y * w.y;
    im += v.x * w.y + v.y * w.x;
  }
  return make_float2(re, im);
}

extern "C" __global__ void dft64_batched(float* __restrict__ out, const float* __restrict__ in,
                                         int batch) {
  __shared__ float2 tw[64];
  const int tid = threadIdx.y * 64 + threadIdx.x;
  if (tid < 64) {
    const float angle = -6.28318530717958647f * (float)tid / 64.0f;
    tw[tid] = make_float2(cosf(angle), sinf(angle));
  }
  __syncthreads();
  const int b = blockIdx.x * 4 + threadIdx.y;
  if (b >= batch) return;
  const float2* xb = reinterpret_cast<const float2*>(in) + (size_t)b * 64;
  float2* yb = reinterpret_cast<float2*>(out) + (size_t)b * 64;
  yb[threadIdx.x] = dft_bin<64>(xb, tw, threadIdx.x);
}
