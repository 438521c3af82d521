// One 27-point box smoothing pass (centre 0.28, faces 0.06, edges 0.02, corners 0.015) on
// interior cells, the boundary layer copied. Expert parameterization (hand-written): a
// BLOCK_X x BLOCK_Y block marches up Z_ITEMS consecutive planes. The stencil splits by
// plane: from each plane a thread forms two weighted 3 x 3 sums of its column's
// neighbourhood, p (the pattern seen from the planes above and below: face, edge, corner
// weights) and q (the pattern of its own plane: centre, face, edge), and a cell is
// p(k - 1) + q(k) + p(k + 1), so every plane is read once per column and its sums kept in
// registers for the next two cells. USE_SMEM 1 stages each plane of the block with a
// one-cell apron in shared memory for the in-plane neighbours; 0 reads them from global
// memory through the read-only path.
// Launch: grid = (ceil(nx / BLOCK_X), ceil(ny / BLOCK_Y), ceil(nz / Z_ITEMS)),
// block = (BLOCK_X, BLOCK_Y). Defaults: the kernel as written (128 x 1, a cell a thread).
#ifndef BLOCK_X
#define BLOCK_X 128
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 1
#endif
#ifndef Z_ITEMS
#define Z_ITEMS 1
#endif
#ifndef USE_SMEM
#define USE_SMEM 0
#endif
#define W_CENTRE 0.28f
#define W_FACE 0.06f
#define W_EDGE 0.02f
#define W_CORNER 0.015f

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, 1)
box27_smooth(float* __restrict__ out, const float* __restrict__ in, int nx, int ny, int nz) {
  const int i = blockIdx.x * BLOCK_X + threadIdx.x;
  const int j = blockIdx.y * BLOCK_Y + threadIdx.y;
  const int k_begin = blockIdx.z * Z_ITEMS;
  const int k_end = min(k_begin + Z_ITEMS, nz);
  const bool inside = i < nx && j < ny;
  const bool interior_xy = inside && i > 0 && j > 0 && i < nx - 1 && j < ny - 1;
  const long plane = (long)nx * ny;
  const long column = (long)j * nx + i;
#if USE_SMEM
  __shared__ float tile[BLOCK_Y + 2][BLOCK_X + 2];
  const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
#endif
  // plane kk's centre value and its sums p and q at this column (every thread of the block
  // calls it with the same kk: the shared path has barriers)
  auto load_plane = [&](int kk, float& c, float& p, float& q) {
#if USE_SMEM
    __syncthreads();  // the previous plane's readers are done
    for (int e = tid; e < (BLOCK_Y + 2) * (BLOCK_X + 2); e += BLOCK_X * BLOCK_Y) {
      const int ty = e / (BLOCK_X + 2), tx = e % (BLOCK_X + 2);
      const int gi = blockIdx.x * BLOCK_X + tx - 1, gj = blockIdx.y * BLOCK_Y + ty - 1;
      tile[ty][tx] = (kk >= 0 && kk < nz && gi >= 0 && gi < nx && gj >= 0 && gj < ny)
                         ? __ldg(in + kk * plane + (long)gj * nx + gi) : 0.0f;
    }
    __syncthreads();
#endif
    c = 0.0f;
    p = 0.0f;
    q = 0.0f;
    if (!inside || kk < 0 || kk >= nz) return;
    float faces, diags;
#if USE_SMEM
    const int a = threadIdx.y + 1, b = threadIdx.x + 1;
    c = tile[a][b];
    if (!interior_xy) return;
    faces = (tile[a][b - 1] + tile[a][b + 1]) + (tile[a - 1][b] + tile[a + 1][b]);
    diags = (tile[a - 1][b - 1] + tile[a - 1][b + 1]) + (tile[a + 1][b - 1] + tile[a + 1][b + 1]);
#else
    const float* s = in + kk * plane + column;
    c = __ldg(s);
    if (!interior_xy) return;
    faces = (__ldg(s - 1) + __ldg(s + 1)) + (__ldg(s - nx) + __ldg(s + nx));
    diags = (__ldg(s - nx - 1) + __ldg(s - nx + 1)) + (__ldg(s + nx - 1) + __ldg(s + nx + 1));
#endif
    p = W_FACE * c + W_EDGE * faces + W_CORNER * diags;
    q = W_CENTRE * c + W_FACE * faces + W_EDGE * diags;
  };

  float unused, p_prev, c_cur, p_cur, q_cur;
  load_plane(k_begin - 1, unused, p_prev, unused);
  load_plane(k_begin, c_cur, p_cur, q_cur);
  for (int k = k_begin; k < k_end; ++k) {
    float c_next, p_next, q_next;
    load_plane(k + 1, c_next, p_next, q_next);
    if (inside) {
      const bool interior = interior_xy && k > 0 && k < nz - 1;
      out[k * plane + column] = interior ? (p_prev + q_cur) + p_next : c_cur;
    }
    p_prev = p_cur;
    p_cur = p_next;
    q_cur = q_next;
    c_cur = c_next;
  }
}
