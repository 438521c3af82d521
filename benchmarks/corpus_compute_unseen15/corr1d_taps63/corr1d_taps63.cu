// Batched 1-D correlation with a 63-tap filter and zero padding:
// y[b][i] = sum_{k<63} taps[k] * x[b][i + k - 31], for rows x [rows, len]. The filter sits in
// constant memory; a block stages its 256 outputs' window (256 + 62 inputs) of one row in
// shared memory, the row being blockIdx.y. One output per thread.
// Launch: grid = ((len + 255) / 256, rows), block = (256).

#define TAPS 63
#define HALO 31
#define BLOCK 256

__constant__ float taps[TAPS];

extern "C" __global__ void corr1d_taps63(float* __restrict__ y, const float* __restrict__ x,
                                         int len) {
  __shared__ float window[BLOCK + TAPS - 1];
  const float* src = x + (size_t)blockIdx.y * len;
  float* dst = y + (size_t)blockIdx.y * len;
  const int first = blockIdx.x * BLOCK;
  for (int s = threadIdx.x; s < BLOCK + TAPS - 1; s += BLOCK) {
    const int g = first + s - HALO;
    window[s] = (g >= 0 && g < len) ? src[g] : 0.0f;
  }
  __syncthreads();
  const int i = first + threadIdx.x;
  if (i < len) {
    float acc = 0.0f;
    const float* w = window + threadIdx.x;
#pragma unroll 9
    for (int k = 0; k < TAPS; ++k) acc += taps[k] * w[k];
    dst[i] = acc;
  }
}
