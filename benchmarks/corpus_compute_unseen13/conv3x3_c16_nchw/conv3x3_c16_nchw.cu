// out[b, co] = bias[co] + sum over ci, ky, kx of wt[co, ci, ky, kx] in[b, ci, y + ky - 1,
// x + kx - 1]: a 3 x 3 convolution of 16 channels into 16, NCHW floats, zero padding of one
// pixel. The sizes are read from a struct; blockIdx.z is (image, output channel). One
// output pixel per thread on a 16 x 16 block.
// Launch: grid = ((w + 15) / 16, (h + 15) / 16, nb * 16), block = (16, 16).

#define CH 16

struct ImageDims {
  int nb, h, w;
};

__device__ float tap_sum(const float* img, const float* wk, ImageDims d, int y, int x) {
  float s = 0.0f;
#pragma unroll
  for (int ky = 0; ky < 3; ++ky) {
    const int yy = y + ky - 1;
    if (yy < 0 || yy >= d.h) continue;
#pragma unroll
    for (int kx = 0; kx < 3; ++kx) {
      const int xx = x + kx - 1;
      if (xx >= 0 && xx < d.w) s += wk[ky * 3 + kx] * img[yy * d.w + xx];
    }
  }
  return s;
}

extern "C" __global__ void conv3x3_c16_nchw(float* out, const float* in, const float* wt,
                                            const float* bias, int nb, int h, int w) {
  const ImageDims d = {nb, h, w};
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int b = blockIdx.z / CH, co = blockIdx.z % CH;
  if (x >= d.w || y >= d.h) return;
  const size_t plane = (size_t)d.h * d.w;
  float acc = bias[co];
  int ci = 0;
  do {
    acc += tap_sum(in + ((size_t)b * CH + ci) * plane, wt + (co * CH + ci) * 9, d, y, x);
    ++ci;
  } while (ci < CH);
  out[((size_t)b * CH + co) * plane + (size_t)y * d.w + x] = acc;
}
