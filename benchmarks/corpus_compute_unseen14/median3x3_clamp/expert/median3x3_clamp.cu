// 3 x 3 median filter: out[y][x] = the median of the nine pixels of in [h, w] around (y, x),
// edges clamped (a pixel past the border repeats the border's). The nine values go through
// a fixed 19-exchange sorting network held in registers; a small helper class does the
// clamped indexing. One pixel per thread, 16 x 16 threads a block.
// Launch: grid = ((w + 15) / 16, (h + 15) / 16), block = (16, 16).

class ClampedImage {
 public:
  __device__ ClampedImage(const float* data, int h, int w) : data_(data), h_(h), w_(w) {}
  __device__ float at(int y, int x) const {
    y = y < 0 ? 0 : (y >= h_ ? h_ - 1 : y);
    x = x < 0 ? 0 : (x >= w_ ? w_ - 1 : x);
    return data_[(size_t)y * w_ + x];
  }

 private:
  const float* data_;
  int h_, w_;
};

#define SORT2(a, b) { const float lo_ = fminf(a, b); b = fmaxf(a, b); a = lo_; }

extern "C" __global__ void median3x3_clamp(float* out, const float* in, int h, int w) {
  const int x = blockIdx.x * 16 + threadIdx.x;
  const int y = blockIdx.y * 16 + threadIdx.y;
  if (x >= w || y >= h) return;
  const ClampedImage img(in, h, w);
  float p[9];
#pragma unroll
  for (int k = 0; k < 9; ++k) p[k] = img.at(y + k / 3 - 1, x + k % 3 - 1);
  SORT2(p[1], p[2]); SORT2(p[4], p[5]); SORT2(p[7], p[8]);
  SORT2(p[0], p[1]); SORT2(p[3], p[4]); SORT2(p[6], p[7]);
  SORT2(p[1], p[2]); SORT2(p[4], p[5]); SORT2(p[7], p[8]);
  SORT2(p[0], p[3]); SORT2(p[5], p[8]); SORT2(p[4], p[7]);
  SORT2(p[3], p[6]); SORT2(p[1], p[4]); SORT2(p[2], p[5]);
  SORT2(p[4], p[7]); SORT2(p[4], p[2]); SORT2(p[6], p[4]);
  SORT2(p[4], p[2]);
  out[(size_t)y * w + x] = p[4];
}
