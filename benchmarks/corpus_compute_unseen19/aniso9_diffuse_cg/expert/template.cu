// One explicit anisotropic-diffusion step, 9-point stencil, per-cell coefficients, edges
// clamped.
// Expert parameterization (hand-written): a BX x (BY * RY) tile of cells a block with its
// one-cell halo of u staged in shared memory (rows padded by PAD floats), RY rows a thread
// strided by BY (more cells a halo load), block width and height free.
// Launch: grid = (ceil(nx / BX), ceil(ny / (BY * RY))), block = (BX, BY).
// Defaults: the kernel as written (a 32 x 8 tile, one cell a thread).

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef RY
#define RY 1
#endif
#ifndef PAD
#define PAD 0
#endif
#define HROWS (BY * RY + 2)
#define HCOLS (BX + 2)

extern "C" __global__ void __launch_bounds__(BX * BY) aniso9_diffuse_cg(
    float* __restrict__ out, const float* __restrict__ u, const float* __restrict__ kx,
    const float* __restrict__ ky, const float* __restrict__ kxy, int nx, int ny) {
  __shared__ float halo[HROWS][HCOLS + PAD];
  const int x0 = blockIdx.x * BX, y0 = blockIdx.y * (BY * RY);
  for (int e = threadIdx.y * BX + threadIdx.x; e < HROWS * HCOLS; e += BX * BY) {
    const int hy = e / HCOLS, hx = e % HCOLS;
    const int gy = min(max(y0 + hy - 1, 0), ny - 1);
    const int gx = min(max(x0 + hx - 1, 0), nx - 1);
    halo[hy][hx] = u[(size_t)gy * nx + gx];
  }
  __syncthreads();
  const int lx = threadIdx.x + 1, x = x0 + threadIdx.x;
  if (x >= nx) return;
#pragma unroll
  for (int q = 0; q < RY; ++q) {
    const int ly = threadIdx.y + q * BY + 1, y = y0 + ly - 1;
    if (y < ny) {
      const float c = halo[ly][lx];
      const float dxx = halo[ly][lx - 1] + halo[ly][lx + 1] - 2.0f * c;
      const float dyy = halo[ly - 1][lx] + halo[ly + 1][lx] - 2.0f * c;
      const float dxy = halo[ly + 1][lx + 1] - halo[ly + 1][lx - 1] - halo[ly - 1][lx + 1] +
                        halo[ly - 1][lx - 1];
      const size_t at = (size_t)y * nx + x;
      out[at] = c + 0.1f * (kx[at] * dxx + ky[at] * dyy + 0.25f * kxy[at] * dxy);
    }
  }
}
