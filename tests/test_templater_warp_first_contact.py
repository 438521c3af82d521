"""Warp-per-row kernels on first contact (issue 28, session 19): spellings written for this
test, none a copy of the corpus's, each the way another programmer would put it.

Lifted (LANES, the rows a block and, where legal, VEC / REG_ROW / ILP): threadIdx.x through a
local copy (``tid``), a ``WARP`` macro, lane loops written as ``while``, shuffles masked with
``__activemask()``, the lane and warp from ``lane_id()`` / ``warp_id()`` helpers, rows walked
by a grid-stride loop (``row += gridDim.x * wpb``, ``wpb = blockDim.x / 32``, or the global
warp index stepping by the grid's warps), reversed operands (``cols > c``, ``c = c + 32``, ``0 == lane``), a function-scope ``constexpr`` for the warps a block, unsigned indices,
``blockIdx.x * blockDim.y + threadIdx.y`` rows stepped by ``blockDim.x`` in a (32, R) block,
the global warp index over ``warpSize`` (value/index argmax pairs), a warp per quantisation
group of a macro's size, a segment from item-uniform offsets. Each compiles for the host and
computes at its default and far configs what the kernel as written computes
(tests/test_templater_warp_first_contact_host.py).

CSR rows whose gathers go through ``__ldg`` split their sums (ILP). Refused, with the reason
and the line: a shuffle inside a ``__device__`` helper (its 32-lane offsets would span
several items), a pointer walk from the lane, a row loop stepping by other than the grid's items and
a lane declared with other variables in one statement (see the report: a respelling the
shared analysis does not split yet).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import (
    corner_configs,
    host_sample,
    lifted_template,
)
from test_corpus_unseen3 import _SPILLS, _ptxas_log

from workbench.templater import LiftedSource, lift_kernel

ROWS, COLS = 37, 384  # rows no multiple of any block's rows; ROWS * COLS a multiple of 128
SIZES = {"R": ROWS, "C": COLS, "RC": ROWS * COLS, "G": ROWS * COLS // 128}
ENV: Mapping[str, Any] = {"rows": ROWS, "cols": COLS}

# name -> (source, grid, block, (role, size key) per pointer argument)
Case = tuple[str, list[str], list[str], list[tuple[str, str]]]
LIFTS: dict[str, Case] = {
    # a WARP macro, threadIdx.x through `tid`, a while lane loop, __activemask() masks
    "softmax_while_activemask": (r"""
#define WARP 32
#define ROWS_PER_BLOCK 4
extern "C" __global__ void k(float* y, const float* x, int rows, int cols) {
  const int tid = threadIdx.x;
  const int lane = tid % WARP;
  const int row = blockIdx.x * ROWS_PER_BLOCK + tid / WARP;
  if (row >= rows) return;
  const float* xr = x + (size_t)row * cols;
  float mx = -INFINITY;
  int c = lane;
  while (c < cols) { mx = fmaxf(mx, xr[c]); c += WARP; }
  for (int off = WARP / 2; off > 0; off >>= 1)
    mx = fmaxf(mx, __shfl_xor_sync(__activemask(), mx, off));
  float sum = 0.f;
  for (int j = lane; j < cols; j += WARP) sum += __expf(xr[j] - mx);
  for (int off = WARP / 2; off > 0; off >>= 1) sum += __shfl_xor_sync(__activemask(), sum, off);
  const float inv = 1.f / sum;
  for (int j = lane; j < cols; j += WARP) y[(size_t)row * cols + j] = __expf(xr[j] - mx) * inv;
}
""", ["ceil_div(rows, 4)"], ["128"], [("out", "RC"), ("in", "RC")]),
    # a constexpr of the body for the warps, unsigned lane and row, warpSize steps, shfl_down
    # then broadcasts from lane 0
    "layernorm_constexpr_unsigned": (r"""
extern "C" __global__ void k(float* out, const float* in, int rows, int cols) {
  constexpr int kWarps = 2;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned wid = threadIdx.x >> 5;
  const unsigned row = blockIdx.x * kWarps + wid;
  if (row >= (unsigned)rows) return;
  const float* p = in + (size_t)row * cols;
  float s = 0.f, s2 = 0.f;
  for (unsigned c = lane; c < (unsigned)cols; c += warpSize) { float v = p[c]; s += v; s2 += v * v; }
  #pragma unroll
  for (int m = 16; m >= 1; m /= 2) {
    s += __shfl_down_sync(0xffffffff, s, m);
    s2 += __shfl_down_sync(0xffffffff, s2, m);
  }
  s = __shfl_sync(0xffffffff, s, 0);
  s2 = __shfl_sync(0xffffffff, s2, 0);
  const float mean = s / cols;
  const float rstd = rsqrtf(s2 / cols - mean * mean + 1e-5f);
  for (unsigned c = lane; c < (unsigned)cols; c += warpSize)
    out[(size_t)row * cols + c] = (p[c] - mean) * rstd;
}
""", ["ceil_div(rows, 2)"], ["64"], [("out", "RC"), ("in", "RC")]),
    # the global warp index over warpSize; value and index shuffled as a pair (first max)
    "argmax_global_warpsize": (r"""
extern "C" __global__ void k(float* best_idx, const float* __restrict__ a, int rows, int cols) {
  const int gw = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
  const int lane = threadIdx.x % warpSize;
  if (gw >= rows) return;
  float bv = -INFINITY; int bi = 0x7fffffff;
  for (int c = lane; c < cols; c += warpSize) {
    float v = a[(size_t)gw * cols + c];
    if (v > bv) { bv = v; bi = c; }
  }
  for (int o = warpSize / 2; o; o >>= 1) {
    float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (ov > bv || (ov == bv && oi < bi)) { bv = ov; bi = oi; }
  }
  if (lane == 0) best_idx[gw] = (float)bi;
}
""", ["ceil_div(rows, 8)"], ["256"], [("out", "R"), ("in", "RC")]),
    # (32, 4) block: the row `ty + 4 * blockIdx.x`, the lane threadIdx.x in place, a double
    # accumulator, 4-argument shuffles, an alpha epilogue
    "l2norm_2d_double_acc": (r"""
extern "C" __global__ void k(float* out, const float* in, int rows, int cols) {
  const int ty = threadIdx.y;
  const int row = ty + 4 * blockIdx.x;
  if (row >= rows) return;
  double acc = 0.0;
  for (int c = threadIdx.x; c < cols; c += 32) { double v = in[row * cols + c]; acc += v * v; }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o, 32);
  const float inv = (float)(1.0 / sqrt(acc + 1e-12));
  for (int c = threadIdx.x; c < cols; c += 32) out[row * cols + c] = 2.0f * in[row * cols + c] * inv;
}
""", ["ceil_div(rows, 4)"], ["32", "4"], [("out", "RC"), ("in", "RC")]),
    # file-scope constexprs for the warp size and the warps, an if-block guard, max then
    # a second pass subtracting it
    "rowmax_sub_file_constexpr": (r"""
constexpr int WARP_SIZE = 32;
constexpr int WARPS = 4;
extern "C" __global__ void k(float* out, const float* in, int rows, int cols) {
  const int warp = threadIdx.x / WARP_SIZE;
  const int lane = threadIdx.x % WARP_SIZE;
  const int row = blockIdx.x * WARPS + warp;
  if (row < rows) {
    float m = -INFINITY;
    for (int c = lane; c < cols; c += WARP_SIZE) m = fmaxf(m, in[row * cols + c]);
    for (int s = WARP_SIZE / 2; s > 0; s /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, s));
    for (int c = lane; c < cols; c += WARP_SIZE) out[row * cols + c] = in[row * cols + c] - m;
  }
}
""", ["ceil_div(rows, 4)"], ["128"], [("out", "RC"), ("in", "RC")]),
    # the reduction in a helper, called once: inlined, its shuffles follow LANES as the
    # kernel's own do
    "helper_warp_reduce": (r"""
__device__ float warpReduceSum(float val) {
  for (int offset = 16; offset > 0; offset /= 2) val += __shfl_down_sync(0xffffffff, val, offset);
  return val;
}
extern "C" __global__ void k(float* out, const float* in, int rows, int cols) {
  int lane = threadIdx.x % 32;
  int row = blockIdx.x * 4 + threadIdx.x / 32;
  if (row >= rows) return;
  float s = 0.f;
  for (int c = lane; c < cols; c += 32) s += in[row * cols + c] * in[row * cols + c];
  s = warpReduceSum(s);
  if (lane == 0) out[row] = sqrtf(s);
}
""", ["ceil_div(rows, 4)"], ["128"], [("out", "R"), ("in", "RC")]),
    # (32, 8) block read through blockDim: rows `blockIdx.x * blockDim.y + threadIdx.y`,
    # lane loops stepped by blockDim.x, a gamma epilogue
    "rmsnorm_2d_blockdim": (r"""
extern "C" __global__ void k(float* __restrict__ out, const float* __restrict__ in,
                             const float* __restrict__ gamma, int rows, int cols) {
  int row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row < rows) {
    const float* r = in + (long)row * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) ss += r[c] * r[c];
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    float scale = rsqrtf(ss / (float)cols + 1e-6f);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
      out[(long)row * cols + c] = r[c] * scale * gamma[c];
  }
}
""", ["ceil_div(rows, 8)"], ["32", "8"], [("out", "RC"), ("in", "RC"), ("in", "C")]),
    # a warp per quantisation group of GROUP values (#ifndef sizes), amax then the codes
    "group_quant_ifndef": (r"""
#ifndef GROUP
#define GROUP 128
#endif
#ifndef WPB
#define WPB 4
#endif
extern "C" __global__ void k(float* q, float* scales, const float* x, int rows, int cols) {
  int lane = threadIdx.x % 32;
  int g = blockIdx.x * WPB + threadIdx.x / 32;
  int groups = rows * cols / GROUP;
  if (g >= groups) return;
  const float* src = x + (size_t)g * GROUP;
  float amax = 0.f;
  for (int i = lane; i < GROUP; i += 32) amax = fmaxf(amax, fabsf(src[i]));
  for (int o = 16; o > 0; o /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffff, amax, o));
  float s = amax > 0.f ? amax / 127.f : 1.f;
  for (int i = lane; i < GROUP; i += 32) q[(size_t)g * GROUP + i] = rintf(src[i] / s);
  if (!lane) scales[g] = s;
}
""", ["ceil_div(rows * cols / 128, 4)"], ["128"], [("out", "RC"), ("out", "G"), ("in", "RC")]),
    # a segment per row from its begin and end locals, `tid & 0x1f`, shfl_down masked with
    # __activemask()
    "segsum_offsets": (r"""
extern "C" __global__ void k(float* sums, const float* v, int rows, int cols) {
  const int tid = threadIdx.x;
  const int lane = tid & 0x1f;
  const int seg = blockIdx.x * 4 + (tid >> 5);
  if (seg >= rows) return;
  const int begin = seg * cols;
  const int end = begin + cols;
  float acc = 0.0f;
  for (int j = begin + lane; j < end; j += 32) acc += v[j];
  for (int d = 16; d > 0; d >>= 1) acc += __shfl_down_sync(__activemask(), acc, d);
  if (lane == 0) sums[seg] = acc;
}
""", ["ceil_div(rows, 4)"], ["128"], [("out", "R"), ("in", "RC")]),
    # operands reversed: `rows <= row`, `cols > c`, `c = c + 32`, `0 == lane`; size_t index
    "rowsum_reversed_operands": (r"""
extern "C" __global__ void k(float* out, const float* in, int rows, int cols) {
  const int lane = threadIdx.x & 31;
  const int row = (threadIdx.x >> 5) + blockIdx.x * 4;
  if (rows <= row) return;
  float s = 0.f;
  for (size_t c = lane; cols > c; c = c + 32) s += in[(size_t)row * cols + c];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (0 == lane) out[row] = s;
}
""", ["ceil_div(rows, 4)"], ["128"], [("out", "R"), ("in", "RC")]),
    # the lane and the warp from helpers returning them, a mean epilogue
    "rowmean_lane_helpers": (r"""
__device__ __forceinline__ int lane_id() { return threadIdx.x & 31; }
__device__ __forceinline__ int warp_id() { return threadIdx.x >> 5; }
extern "C" __global__ void k(float* out, const float* in, int rows, int cols) {
  const int lane = lane_id();
  const int row = blockIdx.x * 4 + warp_id();
  if (row >= rows) return;
  float s = 0.f;
  for (int c = lane; c < cols; c += 32) s += in[row * cols + c];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) out[row] = s / cols;
}
""", ["ceil_div(rows, 4)"], ["128"], [("out", "R"), ("in", "RC")]),
    # rows walked by a grid-stride loop over the block's warps
    "rowdot_row_gridstride": (r"""
extern "C" __global__ void k(float* out, const float* a, const float* b, int rows, int cols) {
  const int lane = threadIdx.x % 32;
  const int wpb = blockDim.x / 32;
  for (int row = blockIdx.x * wpb + threadIdx.x / 32; row < rows; row += gridDim.x * wpb) {
    float s = 0.f;
    for (int c = lane; c < cols; c += 32) s += a[row * cols + c] * b[row * cols + c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0) out[row] = s;
  }
}
""", ["ceil_div(rows, 4)"], ["128"], [("out", "R"), ("in", "RC"), ("in", "RC")]),
    # a (32, RPB) block whose rows walk the grid: `r += RPB * gridDim.x`, unsigned
    "absmax_scale_row_gridstride_2d": (r"""
#define RPB 2
extern "C" __global__ void k(float* out, const float* in, int rows, int cols) {
  for (unsigned r = blockIdx.x * RPB + threadIdx.y; r < (unsigned)rows; r += RPB * gridDim.x) {
    float m = 0.f;
    for (int c = threadIdx.x; c < cols; c += 32) m = fmaxf(m, fabsf(in[(size_t)r * cols + c]));
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    for (int c = threadIdx.x; c < cols; c += 32)
      out[(size_t)r * cols + c] = in[(size_t)r * cols + c] / (m + 1e-6f);
  }
}
""", ["ceil_div(rows, 2)"], ["32", "2"], [("out", "RC"), ("in", "RC")]),
    # the global warp index walking the grid's warps, `nwarps` a local, `>> 5` and `& 31`
    "rowsum_global_row_gridstride": (r"""
extern "C" __global__ void k(float* out, const float* in, int rows, int cols) {
  const int lane = threadIdx.x & 31;
  const int nwarps = (gridDim.x * blockDim.x) >> 5;
  for (int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; row < rows; row += nwarps) {
    float s = 0.f;
    for (int c = lane; c < cols; c += 32) s += in[row * cols + c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) out[row] = s;
  }
}
""", ["ceil_div(rows, 4)"], ["128"], [("out", "R"), ("in", "RC")]),
    # the lane declared with the warp in one statement (point_split: one declaration each)
    "quant_two_declarators": (r"""
extern "C" __global__ void k(float* q, const float* x, int rows, int cols) {
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int g = blockIdx.x * 4 + warp;
  if (g >= rows) return;
  float amax = 0.f;
  for (int i = lane; i < cols; i += 32) amax = fmaxf(amax, fabsf(x[g * cols + i]));
  for (int o = 16; o > 0; o /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffff, amax, o));
  if (lane == 0) q[g] = amax;
}
""", ["ceil_div(rows, 4)"], ["128"], [("out", "R"), ("in", "RC")]),
}

LIFTS["rmsnorm_2d_helper"] = (
    "__device__ __forceinline__ float warp_sum(float v) {\n"
    "  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
    "  return v;\n}\n" + LIFTS["rmsnorm_2d_blockdim"][0].replace(
        "for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);",
        "ss = warp_sum(ss);"), *LIFTS["rmsnorm_2d_blockdim"][1:])


#: name -> (source, grid, block, the LANES refusal's text, its line)
REFUSALS: dict[str, tuple[str, list[str], list[str], str, int]] = {
    # pointers started at the lane and advanced by 32 a step
    "gemv_pointer_walk": (r"""
extern "C" __global__ void k(float* y, const float* A, const float* x, int rows, int cols) {
  int warp_id = threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  int r = warp_id + blockIdx.x * 8;
  if (r >= rows) return;
  const float* a = A + (size_t)r * cols + lane;
  const float* xv = x + lane;
  float acc = 0.f;
  for (int c = lane; c < cols; c += 32) { acc += *a * *xv; a += 32; xv += 32; }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) y[r] = acc;
}
""", ["ceil_div(rows, 8)"], ["256"], "the lane is used in `A + (size_t)r * cols + lane`", 7),
    # a row loop whose stride is not the grid's items (a fixed 64 rows)
    "row_loop_fixed_stride": (r"""
extern "C" __global__ void k(float* out, const float* in, int rows, int cols) {
  const int lane = threadIdx.x % 32;
  for (int row = blockIdx.x * 4 + threadIdx.x / 32; row < rows; row += 64) {
    float s = 0.f;
    for (int c = lane; c < cols; c += 32) s += in[row * cols + c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) out[row] = s;
  }
}
""", ["16"], ["128"], "the row loop steps by `64`, not gridDim.x * `4`", 4),
    # the global warp index stepping by the grid's threads, not its warps
    "global_row_loop_thread_stride": (r"""
extern "C" __global__ void k(float* out, const float* in, int rows, int cols) {
  const int lane = threadIdx.x & 31;
  for (int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; row < rows;
       row += gridDim.x * blockDim.x) {
    float s = 0.f;
    for (int c = lane; c < cols; c += 32) s += in[row * cols + c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) out[row] = s;
  }
}
""", ["ceil_div(rows, 4)"], ["128"], "not the grid's warps", 4),
}

#: CSR rows with __ldg gathers: the segment loop's sums split (ILP), int index arrays
CSR_LDG = r"""
extern "C" __global__ void k(float* y, const int* __restrict__ rowptr,
                             const int* __restrict__ colidx, const float* __restrict__ vals,
                             const float* __restrict__ x, int rows, int cols) {
  const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row < rows) {
    const int start = rowptr[row];
    const int stop = rowptr[row + 1];
    float dot = 0.f;
    for (int jj = start + lane; jj < stop; jj += 32) dot += vals[jj] * __ldg(&x[colidx[jj]]);
    for (int off = 16; off; off >>= 1) dot += __shfl_down_sync(0xffffffffu, dot, off);
    if (!lane) y[row] = dot;
  }
}
"""


def lift(source: str, grid: list[str], block: list[str]) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=grid, block=block, scalars=dict(ENV))


@pytest.mark.parametrize("name", sorted(LIFTS))
def test_first_contact_spellings_lift_lanes_and_rows(name: str) -> None:
    source, grid, block, _args = LIFTS[name]
    lifted = lift(source, grid, block)
    knobs = {p.name: dict(p.spec) for p in lifted.params}
    assert "LANES" in knobs, lifted.notes
    assert knobs["LANES"]["default"] == 32 and knobs["LANES"]["min"] <= 4
    assert lifted.grid[0].endswith("* (32 // LANES))"), lifted.grid
    body = lifted.source.split("extern")[-1]
    assert "% LANES)" in body and "wb_group_mask()" in body
    assert "__activemask" not in body.split("wb_group_mask")[-1]


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_spellings_not_modelled_are_refused_with_the_line(name: str) -> None:
    source, grid, block, why, at = REFUSALS[name]
    lifted = lift(source, grid, block)
    assert "LANES" not in {p.name for p in lifted.params}
    found = [n for n in lifted.notes if n.startswith("LANES: not applied")]
    assert found and why in found[0] and f"(line {at})" in found[0], lifted.notes


def test_a_helper_reduce_in_a_2d_block_lifts_as_written_in_the_kernel() -> None:
    """The (32, R) block's helper, called once, is inlined: the lift holds the knobs of the
    same kernel with the shuffles written in it (the host checks its configs:
    rmsnorm_2d_helper)."""
    helper = lift(*LIFTS["rmsnorm_2d_helper"][:3])
    inline = lift(*LIFTS["rmsnorm_2d_blockdim"][:3])
    assert [p.name for p in helper.params] == [p.name for p in inline.params], helper.notes
    assert any(n.startswith("INLINE: applied: warp_sum inlined into k") for n in helper.notes)


def test_a_lane_helper_read_anywhere_else_is_refused() -> None:
    """``lane_id()`` called in place of the modelled lane would keep 32 lanes a row. The
    one-line helper is expanded at its call (d1958a4), so the refusal names what it reads,
    the thread's place, at the call's line."""
    source = LIFTS["rowmean_lane_helpers"][0].replace("if (lane == 0)", "if (lane_id() == 0)")
    lifted = lift(source, ["ceil_div(rows, 4)"], ["128"])
    assert "LANES" not in {p.name for p in lifted.params}
    found = [n for n in lifted.notes if n.startswith("LANES: not applied")]
    assert found and "the lane is used in `(int)(threadIdx.x & 31)`" in found[0], found
    assert "(line 11)" in found[0], found


def test_csr_rows_with_ldg_gathers_split_their_sums() -> None:
    """``__ldg(&x[col[j]])`` is a load like ``x[col[j]]``: the segment sum takes ILP; a term
    that calls what is not pure is still refused."""
    lifted = lift(CSR_LDG, ["ceil_div(rows, 4)"], ["128"])
    assert {"LANES", "ILP", "LDG"} <= {p.name for p in lifted.params}, lifted.notes
    impure = lift(CSR_LDG.replace("__ldg(&x[colidx[jj]])", "atomicAdd(&y[0], x[colidx[jj]])"),
                   ["ceil_div(rows, 4)"], ["128"])
    assert "ILP" not in {p.name for p in impure.params}
    assert any(n.startswith("ILP: not applied") and "not pure" in n for n in impure.notes)


def test_activemask_used_beyond_a_shuffle_mask_is_refused() -> None:
    source = LIFTS["segsum_offsets"][0].replace(
        "if (lane == 0) sums[seg] = acc;",
        "if (lane == 0) sums[seg] = acc + (float)__popc(__activemask());")
    lifted = lift(source, ["ceil_div(rows, 4)"], ["128"])
    found = [n for n in lifted.notes if n.startswith("LANES: not applied")]
    assert found and "__activemask" in found[0], lifted.notes


@needs_nvcc
@pytest.mark.timeout(300)
def test_first_contact_corners_build_without_spills(tmp_path: Path) -> None:
    """The (32, R) block read through blockDim builds for sm_90 at its corners, no spill."""
    name = "rmsnorm_2d_blockdim"
    source, grid, block, _args = LIFTS[name]
    template = lifted_template(lift(source, grid, block))
    for i, config in enumerate(host_sample(corner_configs(template, ENV))):
        log = _ptxas_log(template.render(config, "fp32").source, tmp_path, f"{name}_{i}")
        spills = _SPILLS.findall(log)
        assert spills and all(s == ("0", "0") for s in spills), f"{config} spills:\n{log}"
