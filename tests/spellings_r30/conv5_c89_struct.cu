/* conv5_channels, another hand: C89 declarations, #ifndef sizes, an image struct passed by
   value to a read helper, a while over the channels. */
#ifndef CH
#define CH 4
#endif
#ifndef KSIZE
#define KSIZE 5
#endif

__constant__ float weights[CH * KSIZE * KSIZE];

struct Image {
  int h, w;
};

__device__ inline float tap(const float* plane, Image im, int y, int x) {
  return (y >= 0 && y < im.h && x >= 0 && x < im.w) ? plane[y * im.w + x] : 0.0f;
}

extern "C" __global__ void conv5_channels(float* out, const float* in, int h, int w) {
  int x, y, ch, i, j;
  float acc;
  const Image im = {h, w};
  x = blockIdx.x * blockDim.x + threadIdx.x;
  y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  acc = 0.0f;
  ch = 0;
  while (ch < CH) {
    for (i = 0; i < KSIZE; ++i)
      for (j = 0; j < KSIZE; ++j)
        acc += weights[ch * KSIZE * KSIZE + i * KSIZE + j] *
               tap(in + (size_t)ch * h * w, im, y + i - KSIZE / 2, x + j - KSIZE / 2);
    ++ch;
  }
  out[y * w + x] = acc;
}
