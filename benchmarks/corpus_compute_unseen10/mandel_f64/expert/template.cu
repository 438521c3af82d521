// Escape-time counts of the Mandelbrot set in double precision (a view 3.0 high centred
// on (-0.75, 0), at most MAX_ITER steps). Expert parameterization (hand-written): a
// BX x BY block, ITEMS pixels a thread along x, BX apart (a warp's stores stay coalesced),
// stepped in one loop until every one has escaped (independent orbits in flight hide the
// double pipeline's latency); SQUARES 1 keeps x*x and y*y from the escape test for the
// next step (the same products, one multiply fewer a step); INTERIOR 1 gives points well
// inside the main cardioid or the period-2 bulb MAX_ITER without stepping them (their
// orbits converge; reference.py skips the same points).
// Launch: grid = (ceil(width / (BX * ITEMS)), ceil(height / BY)), block = (BX, BY).
// Defaults: the kernel as written (16 x 16, one pixel a thread, every point stepped).
#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 16
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef SQUARES
#define SQUARES 0
#endif
#ifndef INTERIOR
#define INTERIOR 0
#endif
#define MAX_ITER 256

__device__ __forceinline__ bool deep_inside(double cx, double cy) {
  const double q = (cx - 0.25) * (cx - 0.25) + cy * cy;
  const bool cardioid = q * (q + (cx - 0.25)) < 0.25 * cy * cy - 1e-3;
  const bool bulb = (cx + 1.0) * (cx + 1.0) + cy * cy < 0.0625 - 1e-3;
  return cardioid || bulb;
}

extern "C" __global__ void __launch_bounds__(BX * BY)
mandel_f64(int* __restrict__ counts, int width, int height) {
  const double step = 3.0 / height;
  const double x0 = -0.75 - 0.5 * width * step;
  const int py = blockIdx.y * BY + threadIdx.y;
  const double cy = -1.5 + py * step;
  double cx[ITEMS], x[ITEMS], y[ITEMS];
#if SQUARES
  double x2[ITEMS], y2[ITEMS];
#endif
  int n[ITEMS];
  bool live[ITEMS];
  bool any = false;
#pragma unroll
  for (int u = 0; u < ITEMS; ++u) {
    const int px = blockIdx.x * (BX * ITEMS) + u * BX + threadIdx.x;
    cx[u] = x0 + px * step;
    x[u] = 0.0;
    y[u] = 0.0;
#if SQUARES
    x2[u] = 0.0;
    y2[u] = 0.0;
#endif
    n[u] = 0;
    live[u] = px < width && py < height;
#if INTERIOR
    if (live[u] && deep_inside(cx[u], cy)) {
      n[u] = MAX_ITER;
      live[u] = false;
    }
#endif
    any = any || live[u];
  }
  while (any) {
    any = false;
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) {
      if (!live[u]) continue;
#if SQUARES
      y[u] = 2.0 * x[u] * y[u] + cy;
      x[u] = x2[u] - y2[u] + cx[u];
      x2[u] = x[u] * x[u];
      y2[u] = y[u] * y[u];
      ++n[u];
      live[u] = n[u] < MAX_ITER && x2[u] + y2[u] <= 4.0;
#else
      const double xn = x[u] * x[u] - y[u] * y[u] + cx[u];
      y[u] = 2.0 * x[u] * y[u] + cy;
      x[u] = xn;
      ++n[u];
      live[u] = n[u] < MAX_ITER && x[u] * x[u] + y[u] * y[u] <= 4.0;
#endif
      any = any || live[u];
    }
  }
  if (py >= height) return;
#pragma unroll
  for (int u = 0; u < ITEMS; ++u) {
    const int px = blockIdx.x * (BX * ITEMS) + u * BX + threadIdx.x;
    if (px < width) counts[py * width + px] = n[u];
  }
}
