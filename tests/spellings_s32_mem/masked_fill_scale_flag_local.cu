// out[i] = mask[i] ? value : in[i] * scale, respelled: the mask byte read into a local
// first, an unsigned stride local, a size_t index, the comparison spelled out.
// Launch: grid = ((n + 1023) / 1024), block = (256).

extern "C" __global__ void masked_fill_scale(float* __restrict__ out,
                                             const float* __restrict__ in,
                                             const unsigned char* __restrict__ mask,
                                             float value, float scale, size_t n) {
  const unsigned int threads = gridDim.x * blockDim.x;
  for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n; e += threads) {
    const bool filled = mask[e] != 0;
    out[e] = filled ? value : scale * in[e];
  }
}
