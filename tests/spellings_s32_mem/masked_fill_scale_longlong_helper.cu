// out[i] = mask[i] ? value : in[i] * scale, respelled: a long long index with the grid's
// stride written in the loop's step (block-size factor first), the choice in a helper.
// Launch: grid = ((n + 1023) / 1024), block = (256).

__device__ __forceinline__ float fill_or_scale(unsigned char keep_fill, float x, float fill,
                                               float factor) {
  return keep_fill ? fill : x * factor;
}

extern "C" __global__ void masked_fill_scale(float* out, const float* in,
                                             const unsigned char* mask, float value,
                                             float scale, long long n) {
  for (long long idx = threadIdx.x + (long long)blockIdx.x * blockDim.x; idx < n;
       idx += (long long)blockDim.x * gridDim.x)
    out[idx] = fill_or_scale(mask[idx], in[idx], value, scale);
}
