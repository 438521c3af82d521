// out [p, ho, wo] = half-pixel-centre bilinear samples of half planes in [p, h, w], float math.
// Expert parameterization (hand-written): a block of THREADS threads owns THREADS * ITEMS
// outputs of a plane, ITEMS a thread strided by THREADS (coalesced stores), and PLANES
// planes on blockIdx.y: a thread works out each output's taps and weights once and applies
// them to every one of its planes.
// Launch: grid = (ceil(ho * wo / (THREADS * ITEMS)), ceil(p / PLANES)), block = THREADS.
// Defaults: the kernel as written (256 threads, one output of one plane each).

#include <cuda_fp16.h>

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef PLANES
#define PLANES 1
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
resize_bilinear_f16(float* out, const __half* in, int p, int h, int w, int ho, int wo) {
  const float scale_y = (float)h / (float)ho, scale_x = (float)w / (float)wo;
  const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int idx = base + it * THREADS;
    if (idx < ho * wo) {
      const int oy = idx / wo, ox = idx - oy * wo;
      float sy = ((float)oy + 0.5f) * scale_y - 0.5f;
      float sx = ((float)ox + 0.5f) * scale_x - 0.5f;
      sy = fmaxf(sy, 0.0f);
      sx = fmaxf(sx, 0.0f);
      int y0 = (int)sy, x0 = (int)sx;
      if (y0 > h - 1) y0 = h - 1;
      if (x0 > w - 1) x0 = w - 1;
      const int y1 = y0 + 1 < h ? y0 + 1 : h - 1;
      const int x1 = x0 + 1 < w ? x0 + 1 : w - 1;
      const float fy = sy - (float)y0, fx = sx - (float)x0;
#pragma unroll
      for (int q = 0; q < PLANES; ++q) {
        const int plane = blockIdx.y * PLANES + q;
        if (plane < p) {
          const __half* src = in + (size_t)plane * h * w;
          const float v00 = __half2float(src[y0 * w + x0]), v01 = __half2float(src[y0 * w + x1]);
          const float v10 = __half2float(src[y1 * w + x0]), v11 = __half2float(src[y1 * w + x1]);
          const float top = v00 + fx * (v01 - v00);
          const float bottom = v10 + fx * (v11 - v10);
          out[(size_t)plane * ho * wo + idx] = top + fy * (bottom - top);
        }
      }
    }
  }
}
