// out = the red half of a red-black Gauss-Seidel sweep of the 5-point Poisson stencil.
// Expert parameterization (hand-written): a BX x BY block, each thread marching down RY
// consecutive rows of one column, keeping the column's values above, at and below in
// registers (one new u load a row, plus the two side neighbours at red points); f is read
// only at red interior points.
// Launch: grid = (ceil(nx / BX), ceil(ny / (BY * RY))), block = (BX, BY).
// Defaults: the kernel as written (32 x 8, one row a thread).

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef RY
#define RY 1
#endif

extern "C" __global__ void __launch_bounds__(BX * BY) redblack_red_sweep(
    float* __restrict__ out, const float* __restrict__ u, const float* __restrict__ f, int nx,
    int ny) {
  const int x = blockIdx.x * BX + threadIdx.x;
  const int y0 = (blockIdx.y * BY + threadIdx.y) * RY;
  if (x >= nx || y0 >= ny) return;
  float above = y0 > 0 ? u[(size_t)(y0 - 1) * nx + x] : 0.0f;
  float mid = u[(size_t)y0 * nx + x];
#pragma unroll
  for (int r = 0; r < RY; ++r) {
    const int y = y0 + r;
    if (y < ny) {
      const size_t i = (size_t)y * nx + x;
      const float below = y + 1 < ny ? u[i + nx] : 0.0f;
      const bool interior = x > 0 && y > 0 && x < nx - 1 && y < ny - 1;
      if (interior && ((x + y) & 1) == 0) {
        out[i] = 0.25f * (u[i - 1] + u[i + 1] + above + below + f[i]);
      } else {
        out[i] = mid;
      }
      above = mid;
      mid = below;
    }
  }
}
