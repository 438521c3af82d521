// The red half of a red-black Gauss-Seidel sweep for the 5-point Poisson stencil on an
// nx by ny grid: a red interior point ((x + y) even) becomes the mean of its four (black)
// neighbours plus f / 4; black and boundary points are copied. f is read only at red
// interior points. One point per thread, 32 x 8 threads a block; the row-major index is a
// lambda.
// Launch: grid = ((nx + 31) / 32, (ny + 7) / 8), block = (32, 8).

extern "C" __global__ void redblack_red_sweep(float* __restrict__ out, const float* __restrict__ u,
                                              const float* __restrict__ f, int nx, int ny) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  auto at = [nx](int col, int row) { return (size_t)row * nx + col; };
  const bool interior = x > 0 && y > 0 && x < nx - 1 && y < ny - 1;
  if (interior && ((x + y) & 1) == 0) {
    const float s = u[at(x - 1, y)] + u[at(x + 1, y)] + u[at(x, y - 1)] + u[at(x, y + 1)];
    out[at(x, y)] = 0.25f * (s + f[at(x, y)]);
  } else {
    out[at(x, y)] = u[at(x, y)];
  }
}
