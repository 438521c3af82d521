// Escape-time image of the Mandelbrot set in double precision: pixel (px, py) of a
// width x height image is the point c = (x0 + px * step, y0 + py * step) of a view 3.0 high
// centred on (-0.75, 0); counts[py][px] is the number of steps z <- z^2 + c, from z = 0,
// until |z| > 2, at most MAX_ITER (points of the set reach MAX_ITER). The view travels in
// a small struct passed by value to the per-pixel routine; one pixel per thread on a
// 16 x 16 block.
// Launch: grid = ((width + 15) / 16, (height + 15) / 16), block = (16, 16).
#define MAX_ITER 256
#define BLOCK_W 16
#define BLOCK_H 16

struct View {
  double x0, y0;  // the point of pixel (0, 0)
  double step;    // plane units per pixel
};

__device__ int escape_steps(View v, int px, int py) {
  const double cx = v.x0 + px * v.step;
  const double cy = v.y0 + py * v.step;
  double x = 0.0, y = 0.0;
  int n = 0;
  do {
    const double xn = x * x - y * y + cx;
    y = 2.0 * x * y + cy;
    x = xn;
    ++n;
  } while (n < MAX_ITER && x * x + y * y <= 4.0);
  return n;
}

extern "C" __global__ void mandel_f64(int* counts, int width, int height) {
  View v;
  v.step = 3.0 / height;
  v.x0 = -0.75 - 0.5 * width * v.step;
  v.y0 = -1.5;
  const int px = blockIdx.x * BLOCK_W + threadIdx.x;
  const int py = blockIdx.y * BLOCK_H + threadIdx.y;
  if (px < width && py < height) counts[py * width + px] = escape_steps(v, px, py);
}
