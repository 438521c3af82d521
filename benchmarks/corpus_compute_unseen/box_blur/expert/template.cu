// dst = 5x5 box blur of src, edges clamped. Expert parameterization (hand-written): a
// (BLOCK_X, BLOCK_Y) block covers BLOCK_X x (BLOCK_Y * ITEMS_Y) pixels, each thread
// ITEMS_Y consecutive rows, from one shared patch with a RADIUS apron (fewer apron loads
// per pixel as the patch grows); SEPARABLE 1 sums each patch row's 5-wide windows once
// into a second shared array, then 5 of them per pixel (10 adds instead of 25).
// Launch: grid = (ceil(width / BLOCK_X), ceil(height / (BLOCK_Y * ITEMS_Y))),
//         block = (BLOCK_X, BLOCK_Y). Defaults: the kernel as written.
#ifndef BLOCK_X
#define BLOCK_X 16
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 16
#endif
#ifndef ITEMS_Y
#define ITEMS_Y 1
#endif
#ifndef SEPARABLE
#define SEPARABLE 0
#endif
#define RADIUS 2
#define PW (BLOCK_X + 2 * RADIUS)            // patch width
#define PH (BLOCK_Y * ITEMS_Y + 2 * RADIUS)  // patch height

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
box_blur(float* __restrict__ dst, const float* __restrict__ src, int height, int width) {
  __shared__ float patch[PH][PW];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x0 = blockIdx.x * BLOCK_X, y0 = blockIdx.y * (BLOCK_Y * ITEMS_Y);
  for (int e = ty * BLOCK_X + tx; e < PH * PW; e += BLOCK_X * BLOCK_Y) {
    const int py = e / PW, px = e % PW;
    const int sy = min(max(y0 + py - RADIUS, 0), height - 1);
    const int sx = min(max(x0 + px - RADIUS, 0), width - 1);
    patch[py][px] = __ldg(src + sy * width + sx);
  }
  __syncthreads();
#if SEPARABLE
  __shared__ float rowsum[PH][BLOCK_X];
  for (int e = ty * BLOCK_X + tx; e < PH * BLOCK_X; e += BLOCK_X * BLOCK_Y) {
    const int py = e / BLOCK_X, px = e % BLOCK_X;
    float h = 0.0f;
#pragma unroll
    for (int dx = 0; dx <= 2 * RADIUS; ++dx) h += patch[py][px + dx];
    rowsum[py][px] = h;
  }
  __syncthreads();
#endif
  const int gx = x0 + tx;
#pragma unroll
  for (int iy = 0; iy < ITEMS_Y; ++iy) {
    const int ly = ty * ITEMS_Y + iy, gy = y0 + ly;
    float s = 0.0f;
#pragma unroll
    for (int dy = 0; dy <= 2 * RADIUS; ++dy) {
#if SEPARABLE
      s += rowsum[ly + dy][tx];
#else
#pragma unroll
      for (int dx = 0; dx <= 2 * RADIUS; ++dx) s += patch[ly + dy][tx + dx];
#endif
    }
    if (gx < width && gy < height)
      dst[gy * width + gx] = s * (1.0f / ((2 * RADIUS + 1) * (2 * RADIUS + 1)));
  }
}
