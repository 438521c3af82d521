"""Cooperative groups read by the offline templater (issue 28): a kernel spelling its thread
indexing, barriers and shuffles through ``<cooperative_groups.h>`` lifts what the same kernel
spelled with the built-ins lifts (workbench/templater/coop_groups.py).

Pure: the rewrite of the ``workbench init`` kernel (a 1-D axpy with a block tree), the flat
rank of a 2-D block, a tile's reduce as the unrolled tree; the warp-per-row quantizer
(``using namespace``, ``auto``, ``tiled_partition<32>``, ``meta_group_rank``, ``shfl_xor``),
the 2-D box blur (an alias, ``const``, ``thread_index().x/.y``, ``cg::sync``) and a row sum
through ``cg::reduce`` lift exactly the params and constraints of their built-in spellings;
a grid group, a tile of a run-time size and a group passed to a function refuse with the line.
nvcc: the lifts compile at the default and a mix. Host (g++): each kernel as written (through
a host model of the header's classes) against its lift, which holds no cooperative group.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import (
    _assert_same,
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.coop_groups import coop_groups
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.semantic import lift_kernel

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

#: The kernel `workbench init` made the folder of (issue 28's first contact with cooperative
#: groups: nothing lifted).
AXPY = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// y[i] = a * x[i] + y[i]; partial sums of y per block
extern "C" __global__ void axpy_sum(float* partial, float* y, const float* x, float a, int n) {
  cg::thread_block block = cg::this_thread_block();
  __shared__ float s[256];
  int i = block.group_index().x * block.group_dim().x + block.thread_rank();
  float v = 0.0f;
  if (i < n) { v = a * x[i] + y[i]; y[i] = v; }
  s[block.thread_rank()] = v;
  block.sync();
  for (int st = 128; st > 0; st >>= 1) {
    if (block.thread_rank() < st) s[block.thread_rank()] += s[block.thread_rank() + st];
    block.sync();
  }
  if (block.thread_rank() == 0) partial[block.group_index().x] = s[0];
}
"""

AXPY_BUILTINS = """// y[i] = a * x[i] + y[i]; partial sums of y per block
extern "C" __global__ void axpy_sum(float* partial, float* y, const float* x, float a, int n) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = 0.0f;
  if (i < n) { v = a * x[i] + y[i]; y[i] = v; }
  s[threadIdx.x] = v;
  __syncthreads();
  for (int st = 128; st > 0; st >>= 1) {
    if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}
"""

AXPY_TOML = """name = "axpy_sum"
description = "y = a x + y and each block's partial sum of y"
dtypes = ["fp32"]
check_shape = "small"
[shapes]
small = { n = 1000 }
large = { n = 16777216 }
[tolerances]
fp32 = { rtol = 1e-05, atol = 1e-05 }
[[args]]
name = "partial"
dtype = "f32"
role = "out"
shape = ["ceil_div(n, 256)"]
[[args]]
name = "y"
dtype = "f32"
role = "inout"
shape = ["n"]
[[args]]
name = "x"
dtype = "f32"
role = "in"
shape = ["n"]
[[args]]
name = "a"
dtype = "f32"
role = "scalar"
value = "1.5"
[[args]]
name = "n"
dtype = "i32"
role = "scalar"
value = "n"
[baseline]
source = "baseline.cu"
entry = "axpy_sum"
grid = ["ceil_div(n, 256)"]
block = ["256"]
"""

#: benchmarks/corpus_compute/warp_row as another hand writes it with a warp's tile.
WARP_ROW = """// Row-wise symmetric int8 quantization, a warp's tile per row (cooperative groups).
#include <cstdint>
#include <cooperative_groups.h>

using namespace cooperative_groups;
#define WARPS_PER_BLOCK 4

extern "C" __global__ void warp_row(int8_t* q, float* scales, const float* x, int rows,
                                    int cols) {
  auto block = this_thread_block();
  auto warp = tiled_partition<32>(block);
  int row = block.group_index().x * WARPS_PER_BLOCK + warp.meta_group_rank();
  if (row >= rows) return;
  const float* xr = x + (long long)row * cols;
  float amax = 0.0f;
  for (int c = warp.thread_rank(); c < cols; c += 32) amax = fmaxf(amax, fabsf(xr[c]));
  for (int off = 16; off > 0; off >>= 1)
    amax = fmaxf(amax, warp.shfl_xor(amax, off));
  float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  int8_t* qr = q + (long long)row * cols;
  for (int c = warp.thread_rank(); c < cols; c += 32) qr[c] = (int8_t)__float2int_rn(xr[c] * inv);
  if (warp.thread_rank() == 0) scales[row] = amax / 127.0f;
}
"""

#: benchmarks/corpus_compute_unseen/box_blur through an alias, a const block and cg::sync.
BOX_BLUR = """// dst = 5x5 box blur of src, edges clamped; a 16x16 block stages its patch.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#define RADIUS 2
#define BS 16

extern "C" __global__ void box_blur(float* dst, const float* src, int height, int width) {
  const cg::thread_block cta = cg::this_thread_block();
  __shared__ float patch[BS + 2 * RADIUS][BS + 2 * RADIUS];
  int gx = cta.group_index().x * BS + cta.thread_index().x;
  int gy = cta.group_index().y * BS + cta.thread_index().y;
  for (int py = cta.thread_index().y; py < BS + 2 * RADIUS; py += BS) {
    for (int px = cta.thread_index().x; px < BS + 2 * RADIUS; px += BS) {
      int sy = min(max((int)(cta.group_index().y * BS) + py - RADIUS, 0), height - 1);
      int sx = min(max((int)(cta.group_index().x * BS) + px - RADIUS, 0), width - 1);
      patch[py][px] = src[sy * width + sx];
    }
  }
  cg::sync(cta);
  if (gx >= width || gy >= height) return;
  float s = 0.0f;
  for (int dy = 0; dy <= 2 * RADIUS; ++dy)
    for (int dx = 0; dx <= 2 * RADIUS; ++dx)
      s += patch[cta.thread_index().y + dy][cta.thread_index().x + dx];
  dst[gy * width + gx] = s * (1.0f / ((2 * RADIUS + 1) * (2 * RADIUS + 1)));
}
"""

#: benchmarks/corpus_compute_unseen3/row_l2norm, a (32, 8) block, through a tile of 32.
ROW_L2NORM = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#define ROWS_PER_BLOCK 8
#define EPS 1e-12f

extern "C" __global__ void row_l2norm(float* y, float* norms, const float* x, int rows,
                                      int cols) {
  cg::thread_block cta = cg::this_thread_block();
  cg::thread_block_tile<32> lanes = cg::tiled_partition<32>(cta);
  int row = cta.group_index().x * ROWS_PER_BLOCK + lanes.meta_group_rank();
  if (row >= rows) return;
  const float* xr = x + (size_t)row * cols;
  float ss = 0.0f;
  for (int c = lanes.thread_rank(); c < cols; c += 32) ss += xr[c] * xr[c];
  for (int off = 16; off > 0; off >>= 1) ss += lanes.shfl_xor(ss, off);
  float norm = sqrtf(ss);
  float inv = 1.0f / fmaxf(norm, EPS);
  float* yr = y + (size_t)row * cols;
  for (int c = lanes.thread_rank(); c < cols; c += 32) yr[c] = xr[c] * inv;
  if (lanes.thread_rank() == 0) norms[row] = norm;
}
"""

#: A row sum through shfl_down, the total in the tile's first lane.
ROW_SUM_DOWN = """#include <cooperative_groups.h>
using namespace cooperative_groups;
#define WARPS 8
extern "C" __global__ void row_sums(float* out, const float* x, int rows, int cols) {
  thread_block_tile<32> warp = tiled_partition<32>(this_thread_block());
  int row = blockIdx.x * WARPS + warp.meta_group_rank();
  if (row >= rows) return;
  float s = 0.0f;
  for (int c = warp.thread_rank(); c < cols; c += 32) s += x[(long long)row * cols + c];
  for (int o = warp.size() / 2; o > 0; o /= 2) s += warp.shfl_down(s, o);
  if (warp.thread_rank() == 0) out[row] = s;
}
"""

ROW_SUM_DOWN_BUILTINS = """#define WARPS 8
extern "C" __global__ void row_sums(float* out, const float* x, int rows, int cols) {
  int row = blockIdx.x * WARPS + threadIdx.x / 32;
  if (row >= rows) return;
  float s = 0.0f;
  for (int c = threadIdx.x % 32; c < cols; c += 32) s += x[(long long)row * cols + c];
  for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffff, s, o);
  if (threadIdx.x % 32 == 0) out[row] = s;
}
"""

#: A tile passed to a __device__ function (the CUDA samples' warp reduction helper).
ROW_SUM_CALLEE = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#define WARPS 8
__device__ float warp_sum(const cg::thread_block_tile<32>& g, float v) {
  for (int o = g.size() / 2; o > 0; o /= 2) v += g.shfl_down(v, o);
  return v;
}
extern "C" __global__ void row_sums(float* out, const float* x, int rows, int cols) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  int row = blockIdx.x * WARPS + warp.meta_group_rank();
  if (row >= rows) return;
  float s = 0.0f;
  for (int c = warp.thread_rank(); c < cols; c += 32) s += x[(long long)row * cols + c];
  s = warp_sum(warp, s);
  if (warp.thread_rank() == 0) out[row] = s;
}
"""

ROW_SUM_CALLEE_BUILTINS = """#define WARPS 8
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
  return v;
}
extern "C" __global__ void row_sums(float* out, const float* x, int rows, int cols) {
  int row = blockIdx.x * WARPS + threadIdx.x / 32;
  if (row >= rows) return;
  float s = 0.0f;
  for (int c = threadIdx.x % 32; c < cols; c += 32) s += x[(long long)row * cols + c];
  s = warp_sum(s);
  if (threadIdx.x % 32 == 0) out[row] = s;
}
"""

ROW_SUM = """#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
#define WARPS 8
extern "C" __global__ void row_sums(float* out, const float* x, int rows, int cols) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  int row = blockIdx.x * WARPS + warp.meta_group_rank();
  if (row >= rows) return;
  float s = 0.0f;
  for (int c = warp.thread_rank(); c < cols; c += 32) s += x[(long long)row * cols + c];
  float total = cg::reduce(warp, s, cg::plus<float>());
  if (warp.thread_rank() == 0) out[row] = total;
}
"""

ROW_SUM_BUILTINS = """#define WARPS 8
extern "C" __global__ void row_sums(float* out, const float* x, int rows, int cols) {
  int row = blockIdx.x * WARPS + threadIdx.x / 32;
  if (row >= rows) return;
  float s = 0.0f;
  for (int c = threadIdx.x % 32; c < cols; c += 32) s += x[(long long)row * cols + c];
  float total = s;
  for (int o = 16; o > 0; o >>= 1) total += __shfl_xor_sync(0xffffffff, total, o);
  if (threadIdx.x % 32 == 0) out[row] = total;
}
"""

_ROWS = {"rows": "rows", "cols": "cols"}
#: (source, its built-in spelling, entry, grid, block, scalars)
_PAIRS = {
    "warp_row": (WARP_ROW, (BENCHMARKS / "corpus_compute/warp_row/baseline.cu").read_text(),
                 "warp_row", ["ceil_div(rows, 4)"], ["128"], _ROWS),
    "box_blur": (BOX_BLUR, (BENCHMARKS / "corpus_compute_unseen/box_blur/baseline.cu")
                 .read_text(), "box_blur", ["ceil_div(width, 16)", "ceil_div(height, 16)"],
                 ["16", "16"], {"height": "height", "width": "width"}),
    "row_sum": (ROW_SUM, ROW_SUM_BUILTINS, "row_sums", ["ceil_div(rows, 8)"], ["256"], _ROWS),
    "row_sum_down": (ROW_SUM_DOWN, ROW_SUM_DOWN_BUILTINS, "row_sums", ["ceil_div(rows, 8)"],
                     ["256"], _ROWS),
    "row_sum_callee": (ROW_SUM_CALLEE, ROW_SUM_CALLEE_BUILTINS, "row_sums",
                       ["ceil_div(rows, 8)"], ["256"], _ROWS),
    "row_l2norm": (ROW_L2NORM, (BENCHMARKS / "corpus_compute_unseen3/row_l2norm/baseline.cu")
                   .read_text(), "row_l2norm", ["ceil_div(rows, 8)"], ["32", "8"], _ROWS),
    "axpy": (AXPY, AXPY_BUILTINS, "axpy_sum", ["ceil_div(n, 256)"], ["256"], {"n": "n"}),
}


def _rewritten(source: str, entry: str, block: list[str]) -> InlinedSource:
    return coop_groups(InlinedSource(source, "k.cu"), entry, block)


def test_the_init_kernel_is_written_with_built_ins() -> None:
    out = _rewritten(AXPY, "axpy_sum", ["256"])
    assert "cg" not in out.text.replace("cg_", "") and "cooperative" not in out.text
    assert len(out.text.splitlines()) == len(AXPY.splitlines())  # every line keeps its place
    body = [line.strip() for line in out.text.splitlines() if line.strip()]
    assert body[1:] == [line.strip() for line in AXPY_BUILTINS.splitlines()][1:]
    assert out.findings[0].applied and out.findings[0].line == 4


def test_a_2d_block_ranks_its_threads_flat() -> None:
    source = AXPY.replace("cg::thread_block block", "auto block")
    out = _rewritten(source, "axpy_sum", ["16", "16"])
    flat = "(threadIdx.x + blockDim.x * threadIdx.y)"  # no z extent: no z term to model
    assert f"s[{flat}] = v;" in out.text and "threadIdx.z" not in out.text
    assert f"blockIdx.x * blockDim.x + {flat};" in out.text
    for block in (["16", "16", "1"], ["16", "16"]):
        assert _rewritten(source, "axpy_sum", block).text == out.text
    three_d = _rewritten(source, "axpy_sum", ["8", "8", "4"]).text
    assert "s[(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))] = v;" \
        in three_d
    sizes = _rewritten(MEMBERS, "members", ["32", "4"]).text
    assert "blockIdx.x * (blockDim.x * blockDim.y) + (threadIdx.x + blockDim.x * " \
        "threadIdx.y);" in sizes
    one_d = _rewritten(source, "axpy_sum", ["256", "1", "1"])  # trailing 1s: still 1-D
    assert "s[threadIdx.x] = v;" in one_d.text


def test_a_tile_below_a_warp_names_its_own_lanes() -> None:
    source = ROW_SUM.replace("<32>", "<16>").replace("c += 32", "c += 16")
    out = _rewritten(source, "row_sums", ["256"])
    assert "(threadIdx.x % 16)" in out.text and "(threadIdx.x / 16)" in out.text
    mask = "(0xffffu << (threadIdx.x & 16u))"
    assert f"total += __shfl_xor_sync({mask}, total, 8, 16);" in out.text
    assert "total, 16" not in out.text  # a tile of 16 combines over 8 .. 1


#: The other members, the block named in place (``cg::this_thread_block().sync()``) and a
#: tile of 8 by the run-time-size spelling with a literal size.
MEMBERS = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void members(float* out, const float* x, int n) {
  auto tile = cg::tiled_partition(cg::this_thread_block(), 8);
  unsigned i = blockIdx.x * cg::this_thread_block().size() + cg::this_thread_block().thread_rank();
  float v = i < n ? x[i] : 0.0f;
  tile.sync();
  float first = tile.shfl(v, 0);
  float up = tile.shfl_up(v, 1);
  unsigned tiles = tile.meta_group_size() + cg::this_thread_block().num_threads();
  cg::this_thread_block().sync();
  if (i < n) out[i] = first + up + tiles + tile.num_threads();
}
"""


def test_each_member_is_its_built_in() -> None:
    out = _rewritten(MEMBERS, "members", ["128"]).text
    lanes = "(0xffu << (threadIdx.x & 24u))"  # the header's build_mask() for a tile of 8
    for spelled in ("unsigned i = blockIdx.x * blockDim.x + threadIdx.x;",
                    f"__syncwarp({lanes});", f"float first = __shfl_sync({lanes}, v, 0, 8);",
                    f"float up = __shfl_up_sync({lanes}, v, 1, 8);",
                    "unsigned tiles = ((blockDim.x + 7) / 8) + blockDim.x;",
                    "  __syncthreads();", "out[i] = first + up + tiles + 8u;"):
        assert spelled in out, spelled
    assert "cg" not in out and "cooperative" not in out


@pytest.mark.parametrize("name", sorted(_PAIRS))
def test_the_cooperative_spelling_lifts_what_the_built_ins_lift(name: str) -> None:
    source, builtins, entry, grid, block, scalars = _PAIRS[name]
    cg = lift_kernel(source, entry=entry, grid=grid, block=block, scalars=scalars)
    plain = lift_kernel(builtins, entry=entry, grid=grid, block=block, scalars=scalars)
    assert [(p.name, dict(p.spec)) for p in cg.params] == \
        [(p.name, dict(p.spec)) for p in plain.params]
    assert cg.constraints == plain.constraints
    assert (cg.grid, cg.block) == (plain.grid, plain.block)
    assert "cooperative_groups" not in cg.source and "cg::" not in cg.source
    assert any(n.startswith("COOP_GROUPS: applied") for n in cg.notes)
    if name != "axpy":  # the axpy's per-block partials pin its block (its built-ins too)
        assert cg.params


def test_a_tile_passed_to_a_function_is_followed_into_it() -> None:
    out = _rewritten(ROW_SUM_CALLEE, "row_sums", ["256"])
    assert "__device__ float warp_sum(float v) {" in out.text
    assert "v += __shfl_down_sync(0xffffffff, v, o);" in out.text
    assert "s = warp_sum(s);" in out.text
    lifted = lift_kernel(ROW_SUM_CALLEE, entry="row_sums", grid=["ceil_div(rows, 8)"],
                         block=["256"], scalars=_ROWS)
    assert any(n.startswith("INLINE: applied: warp_sum inlined") for n in lifted.notes)


def test_the_reduce_is_the_unrolled_tree_the_warp_family_reads() -> None:
    cg = lift_kernel(ROW_SUM, entry="row_sums", grid=["ceil_div(rows, 8)"], block=["256"],
                     scalars=_ROWS)
    assert "LANES" in [p.name for p in cg.params]
    assert "if (16 < LANES) total += __shfl_xor_sync(" in cg.source


@pytest.mark.parametrize(("change", "line", "reason"), [
    (("cg::thread_block block = cg::this_thread_block();",
      "cg::grid_group block = cg::this_grid();"), 5, "`cg::grid_group"),
    (("  block.sync();\n  for", "  cg::this_grid().sync();\n  for"), 11, "this_grid"),
    (("  float v = 0.0f;", "  auto t = cg::tiled_partition(block, n % 32 + 1);"), 8,
     "a tile of 'n % 32 + 1' threads"),
    (("  block.sync();\n  for", "  settle(block);\n  for"), 11,
     "the group `block` is used as `settle(block)`"),
])
def test_what_is_not_modelled_is_refused_with_its_line(change: tuple[str, str], line: int,
                                                      reason: str) -> None:
    source = AXPY.replace(*change)
    assert source != AXPY
    # a template's parameter is no group type the pass can follow
    source = "template <class G> __device__ void settle(G g) { g.sync(); }\n" + \
        source if "settle" in source else source
    line += "settle" in source
    out = _rewritten(source, "axpy_sum", ["256"])
    assert out.text == source  # the kernel stays as written
    (finding,) = out.findings
    assert not finding.applied and finding.line == line and reason in finding.reason, finding


# -- nvcc -----------------------------------------------------------------------------------

_MIXES = {"warp_row": {"WARPS_PER_BLOCK": 2, "LANES": 8, "VEC": 4},
          "box_blur": {"SEPARABLE": 1, "BLOCK_X": 32, "BLOCK_Y": 4, "OUT_X": 2, "OUT_Y": 2,
                       "PAD": 1},
          "row_sum": {"WARPS": 4, "LANES": 16, "VEC": 2},
          "row_sum_down": {"WARPS": 2, "LANES": 8, "VEC": 4, "ITEMS_PER_THREAD": 2},
          "row_sum_callee": {"WARPS": 1, "LANES": 4, "VEC": 1, "ITEMS_PER_THREAD": 4},
          "row_l2norm": {"ROWS_PER_BLOCK": 4, "LANES": 8, "VEC": 4},
          "cg_reduce": {"BLOCK_THREADS": 1024, "GRID_BLOCKS": 128, "VEC": 2,
                        "ITEMS_PER_THREAD": 2, "FINAL": 1}}


@needs_nvcc
def test_the_members_compile(tmp_path: Path) -> None:
    cu = tmp_path / "members.cu"
    cu.write_text(_rewritten(MEMBERS, "members", ["128"]).text)
    done = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(tmp_path / "m.cubin"),
                           str(cu)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@needs_nvcc
@pytest.mark.parametrize("name", sorted(_PAIRS))
def test_the_lift_compiles(name: str, tmp_path: Path) -> None:
    source, _builtins, entry, grid, block, scalars = _PAIRS[name]
    lifted = lift_kernel(source, entry=entry, grid=grid, block=block, scalars=scalars)
    for label, config in (("default", {}), ("mix", _MIXES.get(name, {}))):
        defines = [f"-D{k}={v}" for k, v in config.items()]
        cu = tmp_path / f"{label}.cu"
        cu.write_text(lifted.source)
        done = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", *defines, "-o",
                               str(tmp_path / f"{label}.cubin"), str(cu)],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, (label, done.stderr)


# -- host -----------------------------------------------------------------------------------

#: The header's classes as the host runs them (the kernels as written compile against it);
#: a lift must run without it.
_HOST_CG = r"""
namespace cooperative_groups {
static unsigned wb_flat() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
struct thread_block {
  static void sync() { __syncthreads(); }
  static unsigned thread_rank() { return wb_flat(); }
  static unsigned size() { return blockDim.x * blockDim.y * blockDim.z; }
  static wb_dim3 group_index() { return blockIdx; }
  static wb_dim3 thread_index() { return threadIdx; }
  static wb_dim3 group_dim() { return blockDim; }
};
static thread_block this_thread_block() { return {}; }
static void sync(const thread_block&) { __syncthreads(); }
template <unsigned S> struct thread_block_tile {
  static unsigned thread_rank() { return wb_flat() & (S - 1); }
  static unsigned meta_group_rank() { return wb_flat() / S; }
  static constexpr unsigned size() { return S; }
  template <class T> T shfl_xor(T v, unsigned m) const { return __shfl_xor_sync(0u, v, m, S); }
  template <class T> T shfl_down(T v, unsigned d) const {
    return __shfl_down_sync(0u, v, d, S);
  }
};
template <unsigned S> thread_block_tile<S> tiled_partition(const thread_block&) { return {}; }
template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class G, class V, class Op> auto reduce(const G& g, V v, Op op) -> decltype(op(v, v)) {
  auto out = v;
  for (int m = G::size() >> 1; m > 0; m >>= 1) out = op(out, g.shfl_xor(out, m));
  return out;
}
}  // namespace cooperative_groups
"""

_HOST_BUILTINS = r"""
#include <cstdint>
typedef signed char int8_t;
static int __float2int_rn(float v) { return (int)std::nearbyint(v); }
"""


def _as_written(source: str) -> str:
    for header in ("#include <cooperative_groups.h>\n", "#include <cooperative_groups/reduce.h>\n",
                   "#include <cstdint>\n"):
        source = source.replace(header, "")
    return _HOST_BUILTINS + _HOST_CG + source


def _lift_on_host(source: str) -> str:
    assert "cooperative_groups" not in source and "cg::" not in source, source
    return _HOST_BUILTINS + source.replace("#include <cstdint>\n", "")


#: Kernel folders the host runs: (their kernel.toml's folder or text, the entry's source).
_ROW_SUM_TOML = """name = "row_sums"
description = "each row's sum, a warp's tile a row"
dtypes = ["fp32"]
check_shape = "small"
[shapes]
small = { rows = 37, cols = 300 }
large = { rows = 4096, cols = 4096 }
[tolerances]
fp32 = { rtol = 1e-05, atol = 1e-05 }
[[args]]
name = "out"
dtype = "f32"
role = "out"
shape = ["rows"]
[[args]]
name = "x"
dtype = "f32"
role = "in"
shape = ["rows", "cols"]
[[args]]
name = "rows"
dtype = "i32"
role = "scalar"
value = "rows"
[[args]]
name = "cols"
dtype = "i32"
role = "scalar"
value = "cols"
[baseline]
source = "baseline.cu"
entry = "row_sums"
grid = ["ceil_div(rows, 8)"]
block = ["256"]
"""

#: tests/spellings_r/cg_reduce_refused.cu's folder (refused before this pass; partials
#: compared by their sum, as the reduction family needs).
_CG_REDUCE_TOML = """name = "k"
description = "each block's partial sum of x, its warps by cooperative groups' reduce"
dtypes = ["fp32"]
check_shape = "small"
[shapes]
small = { n = 5003 }
large = { n = 16777216 }
[tolerances]
fp32 = { rtol = 1e-05, atol = 1e-04 }
[[args]]
name = "partials"
dtype = "f32"
role = "out"
shape = ["512"]
compare = "sum"
[[args]]
name = "x"
dtype = "f32"
role = "in"
shape = ["n"]
[[args]]
name = "n"
dtype = "i32"
role = "scalar"
value = "n"
[baseline]
source = "baseline.cu"
entry = "k"
grid = ["512"]
block = ["256"]
"""

_FOLDERS: dict[str, tuple[str | Path, str]] = {  # warp_row's int8 output: no host type
    "axpy": (AXPY_TOML, AXPY),
    "box_blur": (BENCHMARKS / "corpus_compute_unseen/box_blur", BOX_BLUR),
    "row_sum": (_ROW_SUM_TOML, ROW_SUM),
    "row_sum_down": (_ROW_SUM_TOML, ROW_SUM_DOWN),
    "row_sum_callee": (_ROW_SUM_TOML, ROW_SUM_CALLEE),
    "row_l2norm": (BENCHMARKS / "corpus_compute_unseen3/row_l2norm", ROW_L2NORM),
    "cg_reduce": (_CG_REDUCE_TOML, (Path(__file__).parent / "spellings_r/cg_reduce_refused.cu")
                  .read_text()),
}


def _folder(root: Path, name: str) -> KernelFolder:
    spec, source = _FOLDERS[name]
    folder = root / name
    folder.mkdir(parents=True)
    if isinstance(spec, Path):
        for file in ("kernel.toml", "reference.py"):
            if (spec / file).exists():
                shutil.copy(spec / file, folder / file)
    else:
        (folder / "kernel.toml").write_text(spec)
    (folder / "baseline.cu").write_text(source)
    return load_kernel_folder(folder)


@needs_gxx
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", sorted(_FOLDERS))
def test_the_lift_computes_what_the_kernel_as_written_computes(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _folder(tmp_path / "folders", name)
    env = kf.env(kf.check_shape, "fp32")
    inputs = _inputs(kf)
    want = _run(kf, _as_written(kf.baseline.render({}, "fp32").source),
                kf.baseline.launch_for({}, env), inputs, tmp_path / "plain", host_flags)
    if name in _MIXES:
        template = offline_template(kf).template
        # the default and the mix; every all-ends config too under WORKBENCH_FULL_MATRIX=1
        configs: list[dict[str, Any]] = host_configs(template, env, [_MIXES[name]])
        configs = configs if FULL_MATRIX else configs[:2]
        runs = [(_lift_on_host(template.render(c, "fp32").source), template.launch_for(c, env))
                for c in configs]
    else:  # nothing lifted (as its built-ins): the rewritten kernel at the folder's launch
        base = kf.baseline
        rules = base.launch.to_dict()
        lifted = lift_kernel(base.source, entry=base.entry, grid=rules["grid"],
                             block=rules["block"], scalars={"n": "n"})
        configs, runs = [{}], [(_lift_on_host(lifted.source), base.launch_for({}, env))]
    got = folder_runs(kf, runs, inputs, tmp_path / "lift")
    for values in want.values():
        assert not np.isnan(values).any()
    # the default is the kernel as written, bit for bit, where no output is compared by its
    # sum (the reduction family writes a block's stage anew, in another order: its gate's
    # tolerance, as for the built-in spelling)
    exact = all(arg.compare != "sum" for arg in kf.args)
    for name_out, values in want.items():
        assert not exact or (got[0][name_out] == values).all(), \
            f"{name}: {name_out} differs at the default"
    for config, outputs in zip(configs, got, strict=True):
        _assert_same(kf, outputs, want, f"{name} at {config}")
