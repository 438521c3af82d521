"""Warp-per-row kernels as different people write them (issue 28): lanes per row, rows per
block, vector width per lane and the shuffles' width following LANES.

Spellings, none a copy of the corpus's row_l2norm or warp_row: a 2-D block (32, R) whose
``threadIdx.y`` is the row (through a local or not, ``blockIdx.x * R + y`` in either order),
a 1-D block whose warp is ``threadIdx.x >> 5`` through a local or in place, the lane as a local
(``& 31``) or written in place (``threadIdx.x``, ``threadIdx.x % 32``); shuffles xor or down
(then a broadcast from lane 0), halving or doubling offset loops, 3- or 4-argument; rows walked
once, twice or three times. Each lifted template runs on the host (g++, the cooperative block
of helpers_templater with warp shuffles) at its default and its corner configs and computes
what the kernel as written computes on the same inputs. Spellings the analysis cannot prove
legal are refused with the line, and nothing is lifted for them that would be wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_templater import (
    COOPERATIVE_BLOCK,
    assert_rotation_covers,
    corner_configs,
    lifted_template,
    rotating_sample,
    run_on_host,
)
from test_corpus_unseen3 import HOST_PRELUDE

from workbench.core.identifiers import identifier_problem
from workbench.core.kernel_folder import load_kernel_folder
from workbench.engine.compiler import Compiler
from workbench.templater import LiftedSource, lift_kernel
from workbench.templater.offline import offline_template

ROWS, COLS = 37, 300  # rows no multiple of any block's rows; cols a multiple of 4, not of 32
SHAPE = {"rows": "rows", "cols": "cols"}

#: __shfl_sync with a source lane, relative to the group of ``width`` lanes (CUDA's rule);
#: the shuffles of HOST_PRELUDE (tests/test_corpus_unseen3.py) are xor and down.
SHFL_SYNC = r"""
template <class T> static T __shfl_sync(unsigned, T v, int src, int width = 32) {
  const unsigned lane = wb_lane();
  const unsigned from = lane - lane % unsigned(width) + unsigned(src) % unsigned(width);
  return wb_exchange(v, from, from == lane);
}
"""

# RMS scaling, 2-D block (32, 4) with a guarded macro, the lane an `& 31` local, flat
# indices, shfl_down to lane 0 then a broadcast, braces and #pragma unroll
RMS_2D = """
#ifndef RPB
#define RPB 4
#endif
extern "C" __global__ void k(float* out, const float* in, int rows, int cols) {
  const int t = threadIdx.x & 31;
  const int r = blockIdx.x * RPB + threadIdx.y;
  if (r >= rows) { return; }
  float acc = 0.f;
  for (int j = t; j < cols; j += 32) {
    float v = in[(long long)r * cols + j];
    acc += v * v;
  }
#pragma unroll
  for (int d = 16; d > 0; d /= 2) {
    acc += __shfl_down_sync(0xffffffffu, acc, d);
  }
  acc = __shfl_sync(0xffffffffu, acc, 0);
  const float s = rsqrtf(acc / cols + 1e-5f);
  for (int j = t; j < cols; j += 32) {
    out[(long long)r * cols + j] = in[(long long)r * cols + j] * s;
  }
}
"""

# softmax, 1-D block of two warps, the warp `>> 5` through a local, a doubling xor loop,
# three passes over the row through row pointers, __restrict__ pointers
SOFTMAX_1D = """
extern "C" __global__ void k(float* __restrict__ p, const float* __restrict__ logits,
                             int rows, int cols) {
  int w = threadIdx.x >> 5;
  int ln = threadIdx.x % 32;
  int row = blockIdx.x * 2 + w;
  if (row >= rows) return;
  const float* src = logits + (size_t)row * cols;
  float* dst = p + (size_t)row * cols;
  float m = -1e30f;
  for (int i = ln; i < cols; i += 32) m = fmaxf(m, src[i]);
  for (int o = 1; o < 32; o *= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
  float z = 0.0f;
  for (int i = ln; i < cols; i += 32) z += expf(src[i] - m);
  for (int o = 1; o < 32; o *= 2) z += __shfl_xor_sync(0xffffffff, z, o);
  for (int i = ln; i < cols; i += 32) dst[i] = expf(src[i] - m) / z;
}
"""

# row mean, one pass: 2-D block (32, 16), the row `y + blockIdx.x * 16` through a local,
# the lane written in place, a 4-argument shuffle of width 32, a mask macro, `!lane`
ROW_MEAN = """
#define FULL 0xffffffffu
#define WARP 32
extern "C" __global__ void k(float* mean, const float* a, int rows, int cols) {
  int y = threadIdx.y;
  int row = y + blockIdx.x * 16;
  if (row < rows) {
    float s = 0.0f;
    for (int c = threadIdx.x % 32; c < cols; c += WARP)
      s += a[row * cols + c];
    for (int o = WARP / 2; o > 0; o >>= 1)
      s += __shfl_xor_sync(FULL, s, o, 32);
    if (!(threadIdx.x % 32)) mean[row] = s / cols;
  }
}
"""

# max-abs scaling, 1-D block of four warps, nothing named: the row
# `(threadIdx.x >> 5) + blockIdx.x * 4` and the lane `threadIdx.x & 31` written in place,
# `s >= 1` from `32 / 2`, shfl_down then a 4-argument broadcast, int flat indices
ABSMAX_INLINE = """
extern "C" __global__ void k(float* o, const float* a, int rows, int cols) {
  const int r = (threadIdx.x >> 5) + blockIdx.x * 4;
  if (r < rows) {
    float mx = 0.0f;
    for (int c = threadIdx.x & 31; c < cols; c += 32) mx = fmaxf(mx, fabsf(a[r * cols + c]));
    for (int s = 32 / 2; s >= 1; s >>= 1) mx = fmaxf(mx, __shfl_down_sync(0xffffffff, mx, s));
    mx = __shfl_sync(0xffffffff, mx, 0, 32);
    const float sc = mx > 0.0f ? 1.0f / mx : 0.0f;
    for (int c = threadIdx.x & 31; c < cols; c += 32) o[r * cols + c] = a[r * cols + c] * sc;
  }
}
"""

CASES: dict[str, tuple[str, list[str], list[str], list[tuple[str, int]]]] = {
    # source, grid, block, (argument, elements) in order: "out", "in", then rows and cols
    "rms_2d": (RMS_2D, ["ceil_div(rows, 4)"], ["32", "4"], [("out", ROWS * COLS),
                                                            ("in", ROWS * COLS)]),
    "softmax_1d": (SOFTMAX_1D, ["ceil_div(rows, 2)"], ["64"], [("out", ROWS * COLS),
                                                               ("in", ROWS * COLS)]),
    "absmax_inline": (ABSMAX_INLINE, ["ceil_div(rows, 4)"], ["128"],
                      [("out", ROWS * COLS), ("in", ROWS * COLS)]),
    "row_mean": (ROW_MEAN, ["ceil_div(rows, 16)"], ["32", "16"], [("out", ROWS),
                                                                  ("in", ROWS * COLS)]),
}


def lift(source: str, grid: list[str], block: list[str]) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=grid, block=block, scalars=SHAPE)


def _program(source: str, grid: Sequence[int], block: Sequence[int],
             args: Sequence[tuple[str, int]], entry: str = "k") -> str:
    """C++ that fills the input (a fixed pattern with a scale varying per row), launches
    ``source`` once on the host and prints every output element in hex (NaN if unwritten)."""
    body, call = [], []
    for index, (role, count) in enumerate(args):
        name = f"arg{index}"
        fill = (f"  for (int i = 0; i < {count}; ++i) {name}[i] = "
                f"std::sin(0.37f * i) * (1.0f + (i / {COLS}) % 5);" if role == "in"
                else f"  for (int i = 0; i < {count}; ++i) {name}[i] = NAN;")
        body += [f"  std::vector<float> {name}_v({count});",
                 f"  float* {name} = {name}_v.data();", fill]
        call.append(name)
    g = ", ".join(f"{int(n)}u" for n in (*grid, 1, 1)[:3])
    b = ", ".join(f"{int(n)}u" for n in (*block, 1, 1)[:3])
    body.append(f"  wb_launch({{{g}}}, {{{b}}}, [&] {{ {entry}({', '.join(call)}, {ROWS}, {COLS}); }});")
    for index, (role, count) in enumerate(args):
        if role == "out":
            body.append(f"  for (int i = 0; i < {count}; ++i) std::printf(\"%a\\n\", "
                        f"(double)arg{index}[i]);")
    return "\n".join([COOPERATIVE_BLOCK, HOST_PRELUDE, SHFL_SYNC, source, "int main() {",
                      *body, "  return 0;", "}"])


def host_outputs(work: Path, label: str, source: str, grid: Sequence[int],
                 block: Sequence[int], args: Sequence[tuple[str, int]],
                 entry: str = "k") -> np.ndarray:
    assert identifier_problem(entry) is None
    work.mkdir(parents=True, exist_ok=True)
    printed = run_on_host(work, label, _program(source, grid, block, args, entry)).split()
    return np.array([float.fromhex(v) if "nan" not in v else np.nan for v in printed])


def params(lifted: LiftedSource) -> dict[str, dict[str, Any]]:
    return {p.name: dict(p.spec) for p in lifted.params}


def refusals(lifted: LiftedSource, transform: str) -> list[str]:
    return [str(f) for f in lifted.findings if f.transform == transform and not f.applied]


ENV: Mapping[str, Any] = {"rows": ROWS, "cols": COLS}


@pytest.mark.parametrize("name", sorted(CASES))
def test_warp_rows_lift_lanes_rows_per_block_and_vectors(name: str) -> None:
    source, grid, block, _args = CASES[name]
    lifted = lift(source, grid, block)
    knobs = params(lifted)
    assert {"LANES", "VEC"} <= set(knobs), lifted.notes
    warps = {"rms_2d": "RPB"}.get(name, "WARPS_PER_BLOCK")
    assert knobs[warps]["default"] == {"rms_2d": 4, "softmax_1d": 2, "row_mean": 16,
                                       "absmax_inline": 4}[name]
    assert knobs["LANES"]["default"] == 32 and knobs["VEC"]["default"] == 1
    assert lifted.grid == (f"ceil_div(rows, {warps} * (32 // LANES))",)
    if len(block) == 2:  # the block stays (32, rows per block): threadIdx.x is the lane
        assert lifted.block == ("32", warps)
    else:
        assert lifted.block == (f"32 * {warps}",)
    assert "BLOCK_X" not in knobs and "BLOCK_THREADS" not in knobs
    # every shuffle names its group and the width LANES; no literal 32-lane reduction is left
    shuffles = lifted.source.count("__shfl")
    assert shuffles and lifted.source.count("wb_group_mask(), ") == shuffles, lifted.source
    assert lifted.source.count(", LANES)") >= shuffles  # the width of each
    assert "cols % VEC == 0" in lifted.constraints


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_spelling_computes_as_written_at_default_and_corners(name: str,
                                                                   tmp_path: Path) -> None:
    """Each spelling as written, then its lift at the default and, by default, one of the
    two all-ends corners and two float4 ends in turn (the spellings cover all four between
    them each run); every one with ``WORKBENCH_FULL_MATRIX=1``."""
    source, grid, block, args = CASES[name]
    lifted = lift(source, grid, block)
    template = lifted_template(lifted)
    blocks = -(-ROWS // int(grid[0].split(", ")[1].rstrip(")")))
    want = host_outputs(tmp_path, "as_written", source, [blocks], [int(b) for b in block], args)
    assert not np.isnan(want).any()
    warps = next(p for p in template.param_names if p not in ("LANES", "VEC", "ITEMS_PER_THREAD",
                                                              "MIN_BLOCKS_PER_SM"))
    # the corners (all-ends: VEC 8 is out at 4-byte floats, so they keep VEC 1) and the ends
    # with float4: 4 lanes a row, 32 warps, 4 vectors a step; a warp a row, 1 warp a block
    configs = [*corner_configs(template, ENV),
               {**template.default_config(), "LANES": 4, "VEC": 4, "ITEMS_PER_THREAD": 4,
                warps: 32},
               {**template.default_config(), "LANES": 32, "VEC": 4, warps: 1}]
    space = template.space(dict(ENV))
    assert all(space.rejection(c) is None for c in configs)
    assert_rotation_covers(len(CASES), configs)
    for i, config in enumerate(rotating_sample(configs, sorted(CASES).index(name))):
        launch = template.launch_for(config, ENV)
        got = host_outputs(tmp_path, f"config{i}", template.render(config, "fp32").source,
                           launch.grid, launch.block, args)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=str(config))


def test_a_mid_config_with_several_rows_a_warp_and_float2(tmp_path: Path) -> None:
    """8 lanes a row (four rows a warp, some of them past the last row), float2, two vectors
    a step: the 2-D spelling with shfl_down and the broadcast."""
    source, grid, block, args = CASES["rms_2d"]
    template = lifted_template(lift(source, grid, block))
    config = {**template.default_config(), "LANES": 8, "VEC": 2, "ITEMS_PER_THREAD": 2,
              "RPB": 2}
    assert template.space(dict(ENV)).rejection(config) is None
    launch = template.launch_for(config, ENV)
    assert tuple(launch.block[:2]) == (32, 2) and launch.grid[0] == -(-ROWS // 8)
    want = host_outputs(tmp_path, "as_written", source, [-(-ROWS // 4)], [32, 4], args)
    got = host_outputs(tmp_path, "mid", template.render(config, "fp32").source, launch.grid,
                       launch.block, args)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_row_l2norm_folder_lifts_the_warp_knobs_and_computes_as_written(
        tmp_path: Path) -> None:
    """The unseen3 kernel that got 0.59 of its expert with BLOCK_X alone (then repaired to
    32 by the gate): it now lifts its rows per block, lanes per row and vector width, and
    computes what it computes as written at the default, the corners and float4 / 4 lanes."""
    folder = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute_unseen3" / \
        "row_l2norm"
    kf = load_kernel_folder(folder)
    assert kf.check_shape == "small" and kf.shape_values("small") == ENV
    result = offline_template(kf)
    knobs = params(result.lifted)
    assert set(knobs) == {"ROWS_PER_BLOCK", "LANES", "VEC", "ITEMS_PER_THREAD", "REG_ROW",
                          "MIN_BLOCKS_PER_SM"}, result.lifted.notes
    assert result.lifted.block == ("32", "ROWS_PER_BLOCK")
    template = result.template
    args = [("out", ROWS * COLS), ("out", ROWS), ("in", ROWS * COLS)]
    want = host_outputs(tmp_path, "as_written", kf.baseline.render({}, "fp32").source,
                        [-(-ROWS // 8)], [32, 8], args, entry="row_l2norm")
    # and the row kept in registers (warp_regs): REG_ROW 384, 12 float2 steps of 16 lanes
    # (2 rows a warp)
    configs = [*corner_configs(template, ENV),
               {**template.default_config(), "LANES": 4, "VEC": 4, "ROWS_PER_BLOCK": 2},
               {**template.default_config(), "LANES": 16, "VEC": 2, "REG_ROW": 384}]
    assert all(template.space(dict(ENV)).rejection(c) is None for c in configs)
    for i, config in enumerate(configs):
        launch = template.launch_for(config, ENV)
        got = host_outputs(tmp_path, f"config{i}", template.render(config, "fp32").source,
                           launch.grid, launch.block, args, entry="row_l2norm")
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=str(config))


# -- refused: what the analysis cannot show legal, with the line --------------------------

@pytest.mark.parametrize(("old", "new", "why"), [
    # the lane scaled: a lane's elements are not a lane loop's
    ("out[(long long)r * cols + j] = in[(long long)r * cols + j] * s;",
     "out[(long long)r * cols + j] = in[(long long)r * cols + j] * s + t * 0.0f;",
     "the lane is used in `t * 0.0f`"),
    # the lane loop strides by two warps
    ("for (int j = t; j < cols; j += 32) {\n    float v", "for (int j = t; j < cols; j += 64) {\n"
     "    float v", "does not step by 32"),
    # a shuffle from another lane than the item's first, outside an offset loop
    ("acc = __shfl_sync(0xffffffffu, acc, 0);", "acc = __shfl_sync(0xffffffffu, acc, 5);",
     "is not a broadcast from lane 0"),
    # the row read a second time through threadIdx.y
    ("if (r >= rows) { return; }", "if (r >= rows || threadIdx.y > 100) { return; }",
     "`threadIdx.y` is read"),
    # the block's width read
    ("const float s = rsqrtf(acc / cols + 1e-5f);",
     "const float s = rsqrtf(acc / cols + 1e-5f) * (blockDim.x / 32);", "`blockDim.x` is read"),
])
def test_spellings_it_cannot_model_are_refused_with_the_line(old: str, new: str,
                                                             why: str) -> None:
    assert old in RMS_2D
    changed = RMS_2D.replace(old, new)
    lifted = lift(changed, ["ceil_div(rows, 4)"], ["32", "4"])
    assert "LANES" not in params(lifted)
    reasons = refusals(lifted, "LANES")
    assert any(why in r for r in reasons), lifted.notes
    at = next(i + 1 for i, text in enumerate(changed.splitlines()) if new.splitlines()[0] in text)
    assert any(why in r and f"(line {at})" in r for r in reasons), (at, reasons)
    # and the block's x size (the warp) is never lifted on its own
    assert "BLOCK_X" not in params(lifted), lifted.notes


def test_a_warp_index_used_beyond_the_row_is_refused() -> None:
    changed = ROW_MEAN.replace("if (!(threadIdx.x % 32)) mean[row] = s / cols;",
                               "if (!(threadIdx.x % 32)) mean[row] = s / cols + y * 0.0f;")
    lifted = lift(changed, ["ceil_div(rows, 16)"], ["32", "16"])
    assert "LANES" not in params(lifted)
    assert any("the warp index `y` is used beyond the item index" in r
               for r in refusals(lifted, "LANES")), lifted.notes


def test_a_block_whose_x_is_the_warp_is_not_resized_by_the_block_lift() -> None:
    """The lift that was wrong on row_l2norm: a refused warp kernel in (32, R) blocks kept
    BLOCK_X free on its lane-loop steps of 32, and at 64 or 128 the shuffles summed part of
    a row. Now the x size is left as written: the lane read beyond a lane loop keeps each
    row a warp's (its shuffles combine the warp's lanes), only the warps a block (RPB, the
    block's y) are lifted."""
    changed = RMS_2D.replace("out[(long long)r * cols + j] = in[(long long)r * cols + j] * s;",
                             "out[(long long)r * cols + j] = in[(long long)r * cols + j] * s "
                             "+ t * 0.0f;")
    lifted = lift(changed, ["ceil_div(rows, 4)"], ["32", "4"])
    knobs = params(lifted)
    assert "BLOCK_X" not in knobs and lifted.block == ("32", "RPB") and "RPB" in knobs
    at = next(i + 1 for i, t in enumerate(changed.splitlines()) if "t * 0.0f" in t)
    assert f"LANES: not applied: the lane is used in `t * 0.0f` (only lane loops and lane == 0 " \
        f"are modelled) (line {at})" in lifted.notes, lifted.notes


@pytest.mark.parametrize("name", ["rms_2d", "absmax_inline"])
def test_lifted_spellings_compile_for_sm90_at_their_ends(name: str, compiler: Compiler) -> None:
    """nvcc (skipped without it) at the default, 4 lanes x float4 x 4 vectors x 32 warps and
    16 lanes x float2 x 1 warp: the group mask, the widths and the vector types compile."""
    source, grid, block, _args = CASES[name]
    template = lifted_template(lift(source, grid, block))
    warps = "RPB" if name == "rms_2d" else "WARPS_PER_BLOCK"
    for change in ({}, {"LANES": 4, "VEC": 4, "ITEMS_PER_THREAD": 4, warps: 32},
                   {"LANES": 16, "VEC": 2, warps: 1}):
        config = {**template.default_config(), **change}
        result = compiler.compile(template.render(config, "fp32"))
        assert result.ok, f"{change}: {result.error_summary}\n{result.log[-2000:]}"
