// out[p, oy, ox] = the maximum of in[p] over the 3 x 3 window at (2 oy, 2 ox): max pooling,
// window 3, stride 2, no padding (ho = (h - 3) / 2 + 1, wo = (w - 3) / 2 + 1), over the
// planes p of an NCHW float tensor. blockIdx.y is the plane; 128 threads a block walk the
// plane's outputs in row-major order, one each.
// Launch: grid = ((ho * wo + 127) / 128, planes), block = (128).

#define POOL_THREADS 128

template <typename T>
__device__ __forceinline__ T max3(T a, T b, T c) {
  return fmaxf(a, fmaxf(b, c));
}

extern "C" __global__ void maxpool3s2_nchw(float* out, const float* in, int h, int w, int ho,
                                           int wo) {
  const int idx = blockIdx.x * POOL_THREADS + threadIdx.x;
  if (idx >= ho * wo) return;
  const int oy = idx / wo, ox = idx - oy * wo;
  const float* row = in + (size_t)blockIdx.y * h * w + (size_t)(2 * oy) * w + 2 * ox;
  float best = max3(row[0], row[1], row[2]);
  row += w;
  best = fmaxf(best, max3(row[0], row[1], row[2]));
  row += w;
  best = fmaxf(best, max3(row[0], row[1], row[2]));
  out[(size_t)blockIdx.y * ho * wo + idx] = best;
}
