// One explicit step of anisotropic diffusion with per-cell coefficients on an ny x nx grid,
// the 9-point stencil (the cross term from the four diagonal neighbours), edges clamped:
//   out = u + 0.1 * (kx (uW + uE - 2u) + ky (uS + uN - 2u) + 0.25 kxy (uNE - uNW - uSE + uSW))
// (N is row y + 1, E column x + 1). Each block stages its 32 x 8 cells and a one-cell halo
// of u in shared memory; cooperative groups name the block and its barrier.
// Launch: grid = ((nx + 31) / 32, (ny + 7) / 8), block = (32, 8).

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#define TILE_X 32
#define TILE_Y 8
#define STEP 0.1f

extern "C" __global__ void aniso9_diffuse_cg(float* out, const float* u, const float* kx,
                                             const float* ky, const float* kxy, int nx,
                                             int ny) {
  cg::thread_block block = cg::this_thread_block();
  __shared__ float halo[TILE_Y + 2][TILE_X + 2];
  const int x0 = block.group_index().x * TILE_X, y0 = block.group_index().y * TILE_Y;
  for (unsigned e = block.thread_rank(); e < (TILE_Y + 2) * (TILE_X + 2);
       e += block.num_threads()) {
    const int hy = e / (TILE_X + 2), hx = e % (TILE_X + 2);
    const int gy = min(max(y0 + hy - 1, 0), ny - 1);
    const int gx = min(max(x0 + hx - 1, 0), nx - 1);
    halo[hy][hx] = u[gy * nx + gx];
  }
  block.sync();
  const int lx = block.thread_index().x + 1, ly = block.thread_index().y + 1;
  const int x = x0 + lx - 1, y = y0 + ly - 1;
  if (x >= nx || y >= ny) return;
  const float c = halo[ly][lx];
  const float dxx = halo[ly][lx - 1] + halo[ly][lx + 1] - 2.0f * c;
  const float dyy = halo[ly - 1][lx] + halo[ly + 1][lx] - 2.0f * c;
  const float dxy = halo[ly + 1][lx + 1] - halo[ly + 1][lx - 1] - halo[ly - 1][lx + 1] +
                    halo[ly - 1][lx - 1];
  const int at = y * nx + x;
  out[at] = c + STEP * (kx[at] * dxx + ky[at] * dyy + 0.25f * kxy[at] * dxy);
}
