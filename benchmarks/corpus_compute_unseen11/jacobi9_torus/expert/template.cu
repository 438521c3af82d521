// One weighted-Jacobi sweep of the 9-point Mehrstellen Poisson stencil on periodic fields:
//   u_new = (1 - OMEGA) u + OMEGA (4 (N + S + W + E) + (NW + NE + SW + SE) + 6 h2 f) / 20
// u, f, u_new [B, H, W], the field from blockIdx.z.
// Expert parameterization (hand-written): a block of BX x BY threads; each thread takes
// ITEMS_Y consecutive rows of one column and walks down them with its three columns of the
// rows above, at and below in registers (three new loads a point instead of nine). WRAP 0
// wraps the neighbours by modulo, as written; WRAP 1 by a compare (a neighbour is at most
// one step outside), with the two side columns wrapped once a thread. The sums are the
// kernel's, in its order.
// Launch: grid = (ceil(W / BX), ceil(H / (BY * ITEMS_Y)), B), block = (BX, BY).
// Defaults: the kernel as written (32 x 8 threads, one point each, modulo wrap).

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef ITEMS_Y
#define ITEMS_Y 1
#endif
#ifndef WRAP
#define WRAP 0
#endif
#define OMEGA 0.8f

// i one step outside [0, n) at most, wrapped into it
__device__ __forceinline__ int wrap_into(int i, int n) {
#if WRAP
  return i < 0 ? i + n : (i >= n ? i - n : i);
#else
  return (i + n) % n;
#endif
}

extern "C" __global__ void __launch_bounds__(BX * BY)
jacobi9_torus(float* __restrict__ u_new, const float* __restrict__ u,
              const float* __restrict__ f, int H, int W, float h2) {
  const int c = blockIdx.x * BX + threadIdx.x;
  const int r0 = (blockIdx.y * BY + threadIdx.y) * ITEMS_Y;
  if (c >= W || r0 >= H) return;
  const size_t plane = (size_t)blockIdx.z * H * W;
  const float* U = u + plane;
  const int cw = wrap_into(c - 1, W), ce = wrap_into(c + 1, W);
  const float* row = U + (size_t)wrap_into(r0 - 1, H) * W;
  float nw = row[cw], n = row[c], ne = row[ce];
  row = U + (size_t)r0 * W;
  float w = row[cw], mid = row[c], e = row[ce];
#pragma unroll
  for (int i = 0; i < ITEMS_Y; ++i) {
    const int r = r0 + i;
    if (r >= H) break;
    row = U + (size_t)wrap_into(r + 1, H) * W;
    const float sw = row[cw], s = row[c], se = row[ce];
    const float edges = n + s + w + e;
    const float corners = nw + ne + sw + se;
    const size_t here = plane + (size_t)r * W + c;
    u_new[here] = (1.0f - OMEGA) * mid + OMEGA * (4.0f * edges + corners + 6.0f * h2 * f[here]) / 20.0f;
    nw = w; n = mid; ne = e;
    w = sw; mid = s; e = se;
  }
}
