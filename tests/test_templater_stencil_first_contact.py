"""First contact: stencil and convolution kernels written for this test the way different
programmers would write them, none of them a corpus kernel's spelling (issue 28).

Each goes through :func:`lift_kernel` as a new user's kernel would; what lifts and what is
refused (with its reason and line) is asserted kernel by kernel (TABLE). The lifted ones
run on the host at the default, the all-ends and sampled configs and give the kernel's
outputs bit for bit (tests/test_templater_stencil_first_contact_host.py). The two respellings
before the analysis (a point declared with another variable split per index,
workbench/templater/point_split.py; a counted ``while`` read as its ``for``,
workbench/templater/loop_forms.py) are checked on their own: lines keep their numbers, and
what is not the same program is left as written.

Spellings: a Sobel magnitude over pitched rows with a clamping ``__device__`` helper; a
constexpr-sized box filter whose tile loads are ``while`` loops and the same filter with
``for`` loads; a constant-memory convolution whose zero padding is ``if (..) continue;``
and a 3x3 one with global weights, ``fmaf`` and split skips;
an NCHW 3x3 'valid' convolution with the filter in global memory and ``unsigned``
indices; a 7-point Jacobi step in ``double`` whose threads walk the interior planes
``1 .. nz - 1`` without reading their own plane, and a radius-2 z stencil walking ``R .. nz -
R`` with ``size_t`` indices, a z walk written as a ``while`` loop; a heat step with a source
term (a second input read at the point); a 27-point box over a 3-D block; a wave-equation time step
reading two arrays over a flat index; a 4-channel 3x3 convolution with its point declared
in one statement (``int x = .., y = ..;``) and ``continue`` padding in the nest; a
convolution whose radius is a kernel argument; a half-precision row pass with taps in
``__constant__``; a mirrored column pass with literal weights in a local array; a Gaussian
whose block holds the halo (18 x 18 threads for a 16 x 16 tile); an int8 Laplacian whose
tap loop counts down by two.
"""

from __future__ import annotations

import pytest

from workbench.templater import LiftedSource, lift_kernel
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.loop_forms import counted_whiles
from workbench.templater.point_split import split_points

SOBEL = """
__device__ __forceinline__ int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }
extern "C" __global__ void k(float* __restrict__ dst, const float* __restrict__ src,
                             int rows, int cols, int pitch) {
  const int c = blockIdx.x * 16 + threadIdx.x;
  const int r = blockIdx.y * 16 + threadIdx.y;
  if (r >= rows || c >= cols) return;
  const int rm = clampi(r - 1, 0, rows - 1), rp = clampi(r + 1, 0, rows - 1);
  const int cm = clampi(c - 1, 0, cols - 1), cp = clampi(c + 1, 0, cols - 1);
  float gx = (src[rm * pitch + cp] + 2.0f * src[r * pitch + cp] + src[rp * pitch + cp])
           - (src[rm * pitch + cm] + 2.0f * src[r * pitch + cm] + src[rp * pitch + cm]);
  float gy = (src[rp * pitch + cm] + 2.0f * src[rp * pitch + c] + src[rp * pitch + cp])
           - (src[rm * pitch + cm] + 2.0f * src[rm * pitch + c] + src[rm * pitch + cp]);
  dst[r * pitch + c] = sqrtf(gx * gx + gy * gy);
}
"""

BOX_WHILE = """
constexpr int RAD = 2;
constexpr int BW = 32;
constexpr int BH = 8;
extern "C" __global__ void k(float* out, const float* in, int height, int width) {
  __shared__ float patch[BH + 2 * RAD][BW + 2 * RAD];
  int ly = threadIdx.y;
  while (ly < BH + 2 * RAD) {
    int lx = threadIdx.x;
    while (lx < BW + 2 * RAD) {
      int gy = min(max((int)(blockIdx.y * BH) + ly - RAD, 0), height - 1);
      int gx = min(max((int)(blockIdx.x * BW) + lx - RAD, 0), width - 1);
      patch[ly][lx] = in[gy * width + gx];
      lx += BW;
    }
    ly += BH;
  }
  __syncthreads();
  int ox = blockIdx.x * BW + threadIdx.x;
  int oy = blockIdx.y * BH + threadIdx.y;
  if (ox < width && oy < height) {
    float s = 0.0f;
    for (int dy = 0; dy <= 2 * RAD; ++dy)
      for (int dx = 0; dx <= 2 * RAD; ++dx)
        s += patch[threadIdx.y + dy][threadIdx.x + dx];
    out[oy * width + ox] = s * (1.0f / ((2 * RAD + 1) * (2 * RAD + 1)));
  }
}
"""

BOX_FOR = BOX_WHILE.replace("""  int ly = threadIdx.y;
  while (ly < BH + 2 * RAD) {
    int lx = threadIdx.x;
    while (lx < BW + 2 * RAD) {""", """  for (int ly = threadIdx.y; ly < BH + 2 * RAD; ly += BH) {
    for (int lx = threadIdx.x; lx < BW + 2 * RAD; lx += BW) {""").replace(
    "      lx += BW;\n", "").replace("    ly += BH;\n", "")

CONV_CONTINUE = """
#ifndef KR
#define KR 2
#endif
#define KW (2 * KR + 1)
__constant__ float c_filter[KW * KW];
extern "C" __global__ void k(const float* image, float* result, int ny, int nx) {
  int col = threadIdx.x + blockIdx.x * blockDim.x;
  int row = threadIdx.y + blockIdx.y * blockDim.y;
  if (col < nx && row < ny) {
    float acc = 0.0f;
    for (int fy = -KR; fy <= KR; fy++) {
      int yy = row + fy;
      if (yy < 0 || yy >= ny) continue;
      for (int fx = -KR; fx <= KR; fx++) {
        int xx = col + fx;
        if (xx < 0 || xx >= nx) continue;
        acc += c_filter[(fy + KR) * KW + (fx + KR)] * image[yy * nx + xx];
      }
    }
    result[row * nx + col] = acc;
  }
}
"""

CONV3_SKIPS_FMAF = """
extern "C" __global__ void k(float* __restrict__ dst, const float* __restrict__ src,
                             const float* __restrict__ wt, int h, int w) {
  const int x = blockDim.x * blockIdx.x + threadIdx.x;
  const int y = blockDim.y * blockIdx.y + threadIdx.y;
  if (y >= h || x >= w) return;
  float sum = 0.0f;
  for (int dy = 0; dy < 3; ++dy) {
    const int r = y + dy - 1;
    if (r < 0) continue;
    if (r >= h) continue;
#pragma unroll
    for (int dx = 0; dx < 3; ++dx) {
      const int c = min(x + dx, w) - 1;
      if (c < 0 || c >= w - 1) { continue; }
      sum = fmaf(wt[dy * 3 + dx], src[r * w + c], sum);
    }
  }
  dst[y * w + x] = sum;
}
"""

CHANNELS_ONE_DECL_SKIPS = """
#define CIN 4
extern "C" __global__ void k(float* out, const float* in, const float* wts, int h, int w) {
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 8 + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.f;
  for (int c = 0; c < CIN; ++c)
    for (int i = 0; i < 3; ++i) {
      int yy = y + i - 1;
      if (yy < 0 || yy >= h) continue;
      for (int j = 0; j < 3; ++j) {
        int xx = x + j - 1;
        if (xx < 0 || xx >= w) continue;
        acc += wts[(c * 3 + i) * 3 + j] * in[(c * h + yy) * w + xx];
      }
    }
  out[y * w + x] = acc;
}
"""

CONV_RADIUS_ARGUMENT = """
extern "C" __global__ void k(float* out, const float* in, const float* f, int h, int w, int r) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float s = 0.f;
  for (int i = -r; i <= r; ++i) for (int j = -r; j <= r; ++j) {
    int yy = min(max(y + i, 0), h - 1), xx = min(max(x + j, 0), w - 1);
    s += f[(i + r) * (2 * r + 1) + j + r] * in[yy * w + xx];
  }
  out[y * w + x] = s;
}
"""

NCHW_VALID = """
extern "C" __global__ void k(float* y, const float* x, const float* wts, int H, int W) {
  unsigned ch = blockIdx.z;
  unsigned ox = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned oy = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned OH = H - 2, OW = W - 2;
  if (ox >= OW || oy >= OH) return;
  const float* plane = x + (size_t)ch * H * W;
  const float* f = wts + ch * 9;
  float v = 0.f;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      v += f[i * 3 + j] * plane[(oy + i) * W + ox + j];
  y[(size_t)ch * OH * OW + oy * OW + ox] = v;
}
"""

JACOBI7_INTERIOR = """
extern "C" __global__ void k(double* unew, const double* u, int nx, int ny, int nz) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < 1 || j < 1 || i >= nx - 1 || j >= ny - 1) return;
  const int sy = nx, sz = nx * ny;
  for (int kk = 1; kk < nz - 1; ++kk) {
    int p = kk * sz + j * sy + i;
    unew[p] = (u[p - 1] + u[p + 1] + u[p - sy] + u[p + sy] + u[p - sz] + u[p + sz]) / 6.0;
  }
}
"""

ZR2_INTERIOR = """
#define R 2
extern "C" __global__ void k(float* __restrict__ o, const float* __restrict__ a, int nx,
                             int ny, int nz) {
  const size_t gx = threadIdx.x + (size_t)blockIdx.x * 64;
  const size_t gy = threadIdx.y + (size_t)blockIdx.y * 2;
  if (gx < nx && gy < ny) {
    const size_t slab = (size_t)nx * ny;
    for (int z = R; z < nz - R; z++) {
      const size_t at = z * slab + gy * nx + gx;
      float d2 = -2.5f * a[at] + 1.33f * (a[at + slab] + a[at - slab]);
      d2 -= 0.083f * (a[at + 2 * slab] + a[at - 2 * slab]);
      o[at] = d2 + 0.5f * a[gy * nx + gx];
    }
  }
}
"""

ZWALK_WHILE = """
extern "C" __global__ void k(float* o, const float* a, int nx, int ny, int nz) {
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 4 + threadIdx.y;
  if (x >= nx || y >= ny) return;
  int z = 1;
  while (z < nz - 1) {
    int c = (z * ny + y) * nx + x;
    o[c] = a[c - nx * ny] + 0.5f * a[c] + a[c + nx * ny];
    ++z;
  }
}
"""

BOX27 = """
#define NB 1
extern "C" __global__ void k(float* out, const float* in, int nx, int ny, int nz) {
  const int x = blockIdx.x * 8 + threadIdx.x;
  const int y = blockIdx.y * 8 + threadIdx.y;
  const int z = blockIdx.z * 4 + threadIdx.z;
  if (x >= NB && y >= NB && z >= NB && x < nx - NB && y < ny - NB && z < nz - NB) {
    float s = 0.0f;
    for (int c = -1; c <= 1; ++c)
      for (int b = -1; b <= 1; ++b)
        for (int a = -1; a <= 1; ++a)
          s += in[((long long)(z + c) * ny + (y + b)) * nx + (x + a)];
    out[((long long)z * ny + y) * nx + x] = s / 27.0f;
  }
}
"""

WAVE = """
extern "C" __global__ void k(float* next, const float* cur, const float* prev, float c2, int n,
                             int m) {
  const int id = blockIdx.x * blockDim.x + threadIdx.x;
  if (id >= n * m) return;
  const int yy = id / m, xx = id - yy * m;
  if (yy == 0 || xx == 0 || yy == n - 1 || xx == m - 1) { next[id] = 0.0f; return; }
  float lap = cur[id - 1] + cur[id + 1] + cur[id - m] + cur[id + m] - 4.0f * cur[id];
  next[id] = 2.0f * cur[id] - prev[id] + c2 * lap;
}
"""

HEAT_SOURCE_TERM = """
extern "C" __global__ void k(float* un, const float* u, const float* src, float dt, int h,
                             int w) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1) return;
  int i = y * w + x;
  un[i] = u[i] + dt * (u[i - 1] + u[i + 1] + u[i - w] + u[i + w] - 4.f * u[i]) + dt * src[i];
}
"""

ROW_HALF = """
#include <cuda_fp16.h>
#define RR 4
__constant__ float taps[2 * RR + 1];
extern "C" __global__ void k(__half* dst, const __half* src, int h, int w) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float s = 0.0f;
#pragma unroll
  for (int t = -RR; t <= RR; ++t) {
    int xs = min(max(x + t, 0), w - 1);
    s += taps[t + RR] * __half2float(src[y * w + xs]);
  }
  dst[y * w + x] = __float2half(s);
}
"""

COL_MIRROR = """
extern "C" __global__ void k(float* o, const float* a, int H, int W) {
  const float g[5] = {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f};
  int px = blockIdx.x * 128 + threadIdx.x;
  int py = blockIdx.y;
  if (px < W) {
    float acc = 0.f;
    for (int d = 0; d < 5; d++) {
      int q = py + d - 2;
      q = q < 0 ? -q : (q >= H ? 2 * H - 2 - q : q);
      acc += g[d] * a[q * W + px];
    }
    o[py * W + px] = acc;
  }
}
"""

GAUSS_HALO_BLOCK = """
#define TW 16
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float s[TW + 2][TW + 2];
  int tx = threadIdx.x, ty = threadIdx.y;
  int gx = blockIdx.x * TW + tx - 1;
  int gy = blockIdx.y * TW + ty - 1;
  int cx = min(max(gx, 0), w - 1), cy = min(max(gy, 0), h - 1);
  s[ty][tx] = in[cy * w + cx];
  __syncthreads();
  if (tx >= 1 && tx <= TW && ty >= 1 && ty <= TW && gx < w && gy < h) {
    float v = 4.0f * s[ty][tx]
      + 2.0f * (s[ty - 1][tx] + s[ty + 1][tx] + s[ty][tx - 1] + s[ty][tx + 1])
      + s[ty - 1][tx - 1] + s[ty - 1][tx + 1] + s[ty + 1][tx - 1] + s[ty + 1][tx + 1];
    out[gy * w + gx] = v * 0.0625f;
  }
}
"""

LAPLACE_INT8 = """
extern "C" __global__ void k(int* out, const signed char* in, int h, int w) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x > 0 && y > 0 && x < w - 1 && y < h - 1) {
    int acc = -4 * in[y * w + x];
    for (int d = 1; d >= -1; d -= 2) {
      acc += in[(y + d) * w + x];
      acc += in[y * w + x + d];
    }
    out[y * w + x] = acc;
  }
}
"""

# name -> (source, block, grid, scalars)
KERNELS: dict[str, tuple[str, list[str], list[str], dict[str, str]]] = {
    "sobel_pitch_clamp_helper": (SOBEL, ["16", "16"], ["ceil_div(cols, 16)", "ceil_div(rows, 16)"],
                                 {"rows": "rows", "cols": "cols", "pitch": "pitch"}),
    "box_constexpr_while_tile": (BOX_WHILE, ["32", "8"],
                                 ["ceil_div(width, 32)", "ceil_div(height, 8)"],
                                 {"height": "height", "width": "width"}),
    "box_constexpr_for_tile": (BOX_FOR, ["32", "8"],
                               ["ceil_div(width, 32)", "ceil_div(height, 8)"],
                               {"height": "height", "width": "width"}),
    "conv_const_ifndef_continue": (CONV_CONTINUE, ["32", "8"],
                                   ["ceil_div(nx, 32)", "ceil_div(ny, 8)"],
                                   {"ny": "ny", "nx": "nx"}),
    "conv3_skips_fmaf_global_weights": (CONV3_SKIPS_FMAF, ["16", "16"],
                                        ["ceil_div(w, 16)", "ceil_div(h, 16)"],
                                        {"h": "h", "w": "w"}),
    "channels_one_declaration_skips": (CHANNELS_ONE_DECL_SKIPS, ["32", "8"],
                                       ["ceil_div(w, 32)", "ceil_div(h, 8)"],
                                       {"h": "h", "w": "w"}),
    "conv_radius_argument": (CONV_RADIUS_ARGUMENT, ["16", "16"],
                             ["ceil_div(w, 16)", "ceil_div(h, 16)"],
                             {"h": "h", "w": "w", "r": "r"}),
    "nchw_valid_global_filter": (NCHW_VALID, ["16", "16"],
                                 ["ceil_div(W - 2, 16)", "ceil_div(H - 2, 16)", "C"],
                                 {"H": "H", "W": "W"}),
    "jacobi7_interior_walk_double": (JACOBI7_INTERIOR, ["32", "4"],
                                     ["ceil_div(nx, 32)", "ceil_div(ny, 4)"],
                                     {"nx": "nx", "ny": "ny", "nz": "nz"}),
    "z_radius2_interior_walk_size_t": (ZR2_INTERIOR, ["64", "2"],
                                       ["ceil_div(nx, 64)", "ceil_div(ny, 2)"],
                                       {"nx": "nx", "ny": "ny", "nz": "nz"}),
    "z_walk_while_one_declaration": (ZWALK_WHILE, ["32", "4"],
                                     ["ceil_div(nx, 32)", "ceil_div(ny, 4)"],
                                     {"nx": "nx", "ny": "ny", "nz": "nz"}),
    "box27_3d_block_loops": (BOX27, ["8", "8", "4"],
                             ["ceil_div(nx, 8)", "ceil_div(ny, 8)", "ceil_div(nz, 4)"],
                             {"nx": "nx", "ny": "ny", "nz": "nz"}),
    "wave_two_arrays_flat": (WAVE, ["256"], ["ceil_div(n * m, 256)"],
                             {"n": "n", "m": "m", "c2": "c2"}),
    "heat_source_term_one_declaration": (HEAT_SOURCE_TERM, ["32", "8"],
                                         ["ceil_div(w, 32)", "ceil_div(h, 8)"],
                                         {"h": "h", "w": "w", "dt": "dt"}),
    "row_pass_half_const": (ROW_HALF, ["64", "4"], ["ceil_div(w, 64)", "ceil_div(h, 4)"],
                            {"h": "h", "w": "w"}),
    "col_pass_mirror_literals": (COL_MIRROR, ["128"], ["ceil_div(W, 128)", "H"],
                                 {"H": "H", "W": "W"}),
    "gauss3_block_holds_halo": (GAUSS_HALO_BLOCK, ["18", "18"],
                                ["ceil_div(w, 16)", "ceil_div(h, 16)"], {"h": "h", "w": "w"}),
    "laplace_int8_countdown": (LAPLACE_INT8, ["32", "8"], ["ceil_div(w, 32)", "ceil_div(h, 8)"],
                               {"h": "h", "w": "w"}),
}

# name -> (knobs the lift must hold, refusals as (transform, part of the reason, line))
TABLE: dict[str, tuple[set[str], list[tuple[str, str, int]]]] = {
    "sobel_pitch_clamp_helper": ({"BLOCK_X", "BLOCK_Y", "ITEMS_X", "ITEMS_Y"}, []),
    "box_constexpr_while_tile": ({"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "PAD", "LOAD_FLAT"},
                                 []),
    # a while walk fills no shared tile: read as written, as other families' whiles are
    "z_walk_while_one_declaration": ({"BLOCK_X", "BLOCK_Y"}, []),
    "box_constexpr_for_tile": ({"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "PAD", "LOAD_FLAT"},
                               []),
    "conv_const_ifndef_continue": ({"BLOCK_X", "BLOCK_Y", "OUT_Y", "OUT_X", "USE_SMEM"}, []),
    "conv3_skips_fmaf_global_weights": ({"BLOCK_X", "BLOCK_Y", "OUT_Y", "OUT_X", "USE_SMEM"},
                                        []),
    "channels_one_declaration_skips": ({"BLOCK_X", "BLOCK_Y", "OUT_Y", "OUT_X", "USE_SMEM"},
                                       []),
    # the window's extent is known only at run time: no register window to unroll
    "conv_radius_argument": ({"BLOCK_X", "BLOCK_Y"}, [
        ("OUT_Y", "the window over i is not a compile-time size", 6)]),
    # the tile fill would go before the bounds check, above `plane`'s declaration
    # `plane` (set after the bounds check) read as x[(size_t)ch * H * W + ..]
    # (pointer_locals): nothing the stage reads is declared after the check
    "nchw_valid_global_filter": ({"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "USE_SMEM"}, []),
    "jacobi7_interior_walk_double": ({"BLOCK_X", "BLOCK_Y", "Z_SPLIT"}, []),
    "z_radius2_interior_walk_size_t": ({"BLOCK_X", "BLOCK_Y", "Z_SPLIT"}, []),
    "box27_3d_block_loops": ({"BLOCK_X", "BLOCK_Y", "BLOCK_Z", "ITEMS_X", "ITEMS_Y", "ITEMS_Z"},
                             [("Z_ITEMS", "reads the plane moving with the loop counter `c`",
                               12),
                              ("Z_ITEMS", "counts blocks of 4 threads along z, not planes", 6)]),
    "wave_two_arrays_flat": ({"BLOCK_THREADS", "OUT_Y"}, []),
    "heat_source_term_one_declaration": ({"BLOCK_X", "BLOCK_Y", "OUT_Y", "OUT_X"}, []),
    "row_pass_half_const": ({"BLOCK_X", "BLOCK_Y"}, []),
    "col_pass_mirror_literals": ({"BLOCK_THREADS", "ITEMS_PER_THREAD"}, []),
    "gauss3_block_holds_halo": (set(), [
        ("OUT_XY", "depends on the thread or the block other than through the global position",
         8),
        ("BLOCK_X", "the block size 18 appears nowhere in the kernel", 0)]),
    "laplace_int8_countdown": ({"BLOCK_X", "BLOCK_Y"}, [
        ("OUT_Y", "the window loop over d is not `for (int d = lo; d < hi; ++d)`", 7)]),
}


def lift(name: str) -> LiftedSource:
    source, block, grid, scalars = KERNELS[name]
    return lift_kernel(source, entry="k", grid=grid, block=block, scalars=scalars)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_each_kernel_lifts_or_is_refused_as_the_table_says(name: str) -> None:
    knobs, refused = TABLE[name]
    lifted = lift(name)
    names = {p.name for p in lifted.params}
    assert knobs <= names, (knobs - names, lifted.notes)
    if not knobs:
        assert not names, lifted.notes  # nothing lifted: the kernel is kept as written
    for transform, why, row in refused:
        found = [f for f in lifted.findings if f.transform == transform and not f.applied]
        assert any(why in f.reason and f.line == row for f in found), \
            (transform, [(f.reason, f.line) for f in found])


def test_an_interior_walk_reads_no_plane_the_kernel_as_written_does_not() -> None:
    """The walk 1 .. nz - 1 marches without testing planes (the kernel reads z - 1 and z + 1
    at every plane it visits); the unread own plane is rendered from the nearest read."""
    lifted = lift("jacobi7_interior_walk_double")
    assert lifted.grid[2] == "Z_SPLIT"
    assert "const int wb_z0 = (1) + (int)blockIdx.z * wb_zchunk;" in lifted.source
    assert "wb_q[1] = __ldg(&u[p - sz + (1) * ((long long)nx * ny)]);" in lifted.source
    assert "? __ldg" not in lifted.source  # no plane test
    assert "Z_SPLIT == 1 or ((nz) - 1 - 1) // Z_SPLIT >= 3" in lifted.constraints


@pytest.mark.parametrize(("old", "new", "why"), [
    # the plane above read only under a branch: which planes exist is not known
    ("unew[p] = (u[p - 1] + u[p + 1] + u[p - sy] + u[p + sy] + u[p - sz] + u[p + sz]) / 6.0;",
     "unew[p] = (u[p - 1] + u[p + 1] + u[p - sy] + u[p + sy] + u[p - sz] +\n"
     "               (kk < nz - 2 ? u[p + sz] : 0.0)) / 6.0;",
     "is under `kk < nz - 2 ? u[p + sz] : 0.0`"),
    # a continue before a plane read: some planes skip it
    ("+ u[p + sz]) / 6.0;\n", ") / 6.0;\n    if (unew[p] > 1e300) continue;\n"
     "    unew[p] += 0.5 * u[p + sz];\n", "comes after a `continue`"),
    # the bound reads memory
    ("kk < nz - 1;", "kk < nz - (int)u[0];", "reads `u[0]`"),
])
def test_an_interior_walk_that_may_skip_a_plane_read_is_refused(old: str, new: str,
                                                                 why: str) -> None:
    source, block, grid, scalars = KERNELS["jacobi7_interior_walk_double"]
    assert old in source
    lifted = lift_kernel(source.replace(old, new), entry="k", grid=grid, block=block,
                         scalars=scalars)
    assert "Z_SPLIT" not in {p.name for p in lifted.params}
    found = [f for f in lifted.findings if f.transform == "Z_SPLIT" and not f.applied]
    assert any(why in f.reason and f.line > 0 for f in found), lifted.notes


@pytest.mark.parametrize(("old", "new", "why", "row"), [
    # the skip reads memory: it is not a condition on the tap alone
    ("if (r < 0) continue;", "if (r < 0 || wt[dy] > 100.0f) continue;",
     "the skip `if (r < 0 || wt[dy] > 100.0f) continue;` reads `wt[dy]`", 10),
    # a read after a skip would run for the skipped taps
    ("      const int c = min(x + dx, w) - 1;\n",
     "      const int c = min(x + dx, w) - 1 + (int)src[r * w] * 0;\n",
     "after a `continue` reads `src[r * w]`", 14),
    # a skip that leaves the loop of the store's rows: not a tap condition
    ("    if (r >= h) continue;\n", "    if (r >= h) break;\n",
     "`if (r >= h) break;` in the loop over dy is neither a declaration", 11),
])
def test_a_skip_the_analysis_cannot_read_as_a_tap_condition_is_refused(
        old: str, new: str, why: str, row: int) -> None:
    source, block, grid, scalars = KERNELS["conv3_skips_fmaf_global_weights"]
    assert old in source
    lifted = lift_kernel(source.replace(old, new), entry="k", grid=grid, block=block,
                         scalars=scalars)
    assert "OUT_Y" not in {p.name for p in lifted.params}
    found = [f for f in lifted.findings if f.transform == "OUT_Y" and not f.applied]
    assert any(why in f.reason and f.line == row for f in found), \
        [(f.reason, f.line) for f in found]


def test_a_time_step_with_two_inputs_read_at_neighbour_rows_is_refused() -> None:
    source, block, grid, scalars = KERNELS["heat_source_term_one_declaration"]
    changed = source.replace("dt * src[i];", "dt * src[i + w];")
    lifted = lift_kernel(changed, entry="k", grid=grid, block=block, scalars=scalars)
    assert "OUT_Y" not in {p.name for p in lifted.params}
    found = [f for f in lifted.findings if f.transform == "OUT_Y" and not f.applied]
    assert any("several inputs (src, u) are read at neighbour rows" in f.reason and
               f.line == 7 for f in found), [(f.reason, f.line) for f in found]


def test_a_point_declared_with_another_variable_is_split_with_its_line_kept() -> None:
    """``int x = .., y = ..;`` becomes one declaration per variable, each on a line of its
    own that maps to the declaration's line; so does any other declaration of several
    variables (a pointer declarator keeps its ``*``)."""
    source = ("__global__ void k(float* o, const float* a, int w) {\n"
              "  const int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 8 + threadIdx.y;\n"
              "  int tx = threadIdx.x, ty = threadIdx.y;\n"
              "  int i = blockIdx.x * 32 + threadIdx.x, *p = 0;\n"
              "  o[y * w + x] = a[y * w + x] + tx + ty + i;\n}\n")
    split = split_points(InlinedSource(source, "k.cu"), "k")
    lines = split.text.splitlines()
    assert lines[1:3] == ["  const int x = blockIdx.x * 32 + threadIdx.x;",
                          "  const int y = blockIdx.y * 8 + threadIdx.y;"]
    assert lines[3:7] == ["  int tx = threadIdx.x;", "  int ty = threadIdx.y;",
                          "  int i = blockIdx.x * 32 + threadIdx.x;", "  int *p = 0;"]
    assert lines[7:] == source.splitlines()[4:]
    assert [split.baseline_line(n) for n in range(1, 10)] == [1, 2, 2, 3, 3, 4, 4, 5, 6]
    unparsed = InlinedSource("not a kernel", "k.cu")
    assert split_points(unparsed, None) is unparsed


_WHILE = """__global__ void k(float* o, const float* a, int n) {
  __shared__ float t[64];
  int v = threadIdx.x;
  while (v < n) {
    t[v] = a[v];
    v += 32;
  }
  __syncthreads();
  o[threadIdx.x] = t[threadIdx.x];
}
"""


@pytest.mark.parametrize(("old", "new", "rewritten"), [
    ("", "", True),
    # a continue of this loop would run the step in a for loop
    ("    t[v] = a[v];\n", "    if (a[v] < 0.0f) continue;\n    t[v] = a[v];\n", False),
    # a bound the body changes: not a counted loop
    ("    t[v] = a[v];\n", "    t[v] = a[v];\n    n -= 1;\n", False),
    # the variable read after the loop (a for would scope it)
    ("    v += 32;\n  }\n", "    v += 32;\n  }\n  o[1] = v;\n", False),
    # the step is not the body's last statement
    ("    t[v] = a[v];\n    v += 32;\n", "    v += 32;\n    t[v] = a[v];\n", False),
    # a loop that fills no shared tile is counted alike (a grid-stride walk, a tap loop)
    ("    t[v] = a[v];\n", "    o[v] = a[v];\n", True),
    # a continue of an inner loop is that loop's
    ("    t[v] = a[v];\n",
     "    for (int q = 0; q < 2; ++q) { if (q) continue; t[v] = a[v]; }\n", True),
])
def test_a_counted_while_is_read_as_its_for_loop_where_they_are_the_same_program(
        old: str, new: str, rewritten: bool) -> None:
    source = _WHILE.replace(old, new) if old else _WHILE
    done = counted_whiles(InlinedSource(source, "k.cu"), "k").text
    assert done.count("\n") == source.count("\n")  # every line keeps its number
    assert ("for (int v = threadIdx.x; v < n; v += 32) {" in done) == rewritten, done
    assert ("while" in done) != rewritten
