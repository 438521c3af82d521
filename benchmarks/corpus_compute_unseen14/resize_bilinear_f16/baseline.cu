// Bilinear resize of half-precision image planes to float: out [p, ho, wo] samples in
// [p, h, w] at the half-pixel centres (source x = (ox + 0.5) * w / wo - 0.5, clamped to the
// image; the same in y), weights and sums in float. The plane is blockIdx.y; one output a
// thread over 256-thread blocks in row-major order.
// Launch: grid = ((ho * wo + 255) / 256, p), block = (256).

#include <cuda_fp16.h>

extern "C" __global__ void resize_bilinear_f16(float* out, const __half* in, int p, int h,
                                               int w, int ho, int wo) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= ho * wo || (int)blockIdx.y >= p) return;
  const int oy = idx / wo, ox = idx - oy * wo;
  const __half* src = in + (size_t)blockIdx.y * h * w;

  float sy = ((float)oy + 0.5f) * ((float)h / (float)ho) - 0.5f;
  float sx = ((float)ox + 0.5f) * ((float)w / (float)wo) - 0.5f;
  sy = fmaxf(sy, 0.0f);
  sx = fmaxf(sx, 0.0f);
  int y0 = (int)sy, x0 = (int)sx;
  if (y0 > h - 1) y0 = h - 1;
  if (x0 > w - 1) x0 = w - 1;
  const int y1 = y0 + 1 < h ? y0 + 1 : h - 1;
  const int x1 = x0 + 1 < w ? x0 + 1 : w - 1;
  const float fy = sy - (float)y0, fx = sx - (float)x0;

  const float v00 = __half2float(src[y0 * w + x0]), v01 = __half2float(src[y0 * w + x1]);
  const float v10 = __half2float(src[y1 * w + x0]), v11 = __half2float(src[y1 * w + x1]);
  const float top = v00 + fx * (v01 - v00);
  const float bottom = v10 + fx * (v11 - v10);
  out[(size_t)blockIdx.y * ho * wo + idx] = top + fy * (bottom - top);
}
