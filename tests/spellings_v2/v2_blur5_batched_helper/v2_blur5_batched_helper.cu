// out = one 5-point smoothing step of each image of a batch (the boundary copied); the
// image is blockIdx.z, the point's offset comes from a helper.
// Launch: grid = ((w + 31) / 32, (h + 7) / 8, batch), block = (32, 8).
__device__ __forceinline__ int at(int x, int y, int w) { return y * w + x; }

extern "C" __global__ void v2_blur5_batched_helper(float* out, const float* img, int w, int h,
                                                   int batch) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const float* src = img + (size_t)blockIdx.z * w * h;
  float* dst = out + (size_t)blockIdx.z * w * h;
  if (x < w && y < h) {
    float c = src[at(x, y, w)];
    if (x > 0 && y > 0 && x < w - 1 && y < h - 1) {
      c = 0.5f * c + 0.125f * (src[at(x - 1, y, w)] + src[at(x + 1, y, w)] +
                               src[at(x, y - 1, w)] + src[at(x, y + 1, w)]);
    }
    dst[at(x, y, w)] = c;
  }
}
