// 3 x 3 max pooling at stride 2, no padding, over the planes of an NCHW float tensor:
// unsigned indices, constexpr block size, a helper folding one window row into the running
// maximum by reference, an early return.
// Launch: grid = ((ho * wo + 127) / 128, planes), block = (128).

static constexpr unsigned kThreads = 128;

__device__ __forceinline__ void fold_row(float& best, const float* r) {
  best = fmaxf(best, fmaxf(r[0], fmaxf(r[1], r[2])));
}

extern "C" __global__ void maxpool3s2_nchw(float* out, const float* in, int h, int w, int ho,
                                           int wo) {
  const unsigned t = blockIdx.x * kThreads + threadIdx.x;
  const unsigned count = (unsigned)(ho * wo);
  if (t >= count) return;
  const unsigned p = blockIdx.y;
  const unsigned oy = t / wo;
  const unsigned ox = t - oy * wo;
  const float* top = in + ((size_t)p * h + 2 * oy) * w + 2 * ox;
  float best = -INFINITY;
  fold_row(best, top);
  fold_row(best, top + w);
  fold_row(best, top + 2 * w);
  out[(size_t)p * count + t] = best;
}
