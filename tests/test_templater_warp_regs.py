"""The row kept in registers between the passes of a warp-per-row kernel (REG_ROW,
workbench/templater/warp_regs.py; issue 28).

Spellings, none the corpus's row_l2norm or warp_row: an RMSNorm with a weight vector in
(32, R) blocks whose row is ``threadIdx.y`` through a local and whose lane is ``threadIdx.x``
in place, with pointers that are not ``__restrict__`` (the last pass's store checked against
the row at run time); an in-place softmax in 1-D blocks whose row is ``threadIdx.x / 32``
in place, three passes (max, exp-sum, write) over one pointer that the last pass overwrites;
a centring kernel (mean pass, then a write pass) with a ``while``-free ``size_t`` row pointer.
Each lifted template runs on the host (g++, the cooperative block with warp shuffles) at
its last corner and a config that keeps the row in registers (CORNERS_EVERY_RUN at its
default too; with ``WORKBENCH_FULL_MATRIX=1`` every spelling at its default, its corners
and the row kept at several lanes and vector widths), and one whose cache is too small for
the row (the passes as written), and computes what the kernel as written computes. What
cannot be shown legal is refused with the line. nvcc's ptxas reports no spill at the
largest cache the space admits.
"""

from __future__ import annotations

import itertools
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_nvcc import NVCC, needs_nvcc
from helpers_templater import (
    COOPERATIVE_BLOCK,
    FULL_MATRIX,
    corner_configs,
    host_sample,
    lifted_template,
    run_on_host,
)
from test_corpus_unseen3 import HOST_PRELUDE, host_flags  # noqa: F401  (the fixture)
from test_templater_warp2 import COLS, ENV, ROWS, SHFL_SYNC, lift, params, refusals

from workbench.core.write_policy import write_file
from workbench.templater import semantic
from workbench.templater.vector import apply_vector
from workbench.templater.warp_regs import apply_block_row_cache

# RMSNorm with a weight per column: (32, 8) blocks, the row a local from threadIdx.y, the
# lane threadIdx.x written in place, shfl_down then a broadcast; y and x may alias
RMS_WEIGHTED = """
#define ROWS_PB 8
extern "C" __global__ void k(float* y, const float* x, const float* g, int rows, int cols) {
  const int wy = threadIdx.y;
  const int r = wy + ROWS_PB * blockIdx.x;
  if (r >= rows) return;
  const float* xin = x + (long long)r * cols;
  float* yout = y + (long long)r * cols;
  float sq = 0.0f;
  for (int j = threadIdx.x; j < cols; j += 32) {
    const float v = xin[j];
    sq += v * v;
  }
  for (int s = 16; s > 0; s >>= 1) sq += __shfl_down_sync(0xffffffffu, sq, s);
  sq = __shfl_sync(0xffffffffu, sq, 0);
  const float scale = 1.0f / sqrtf(sq / cols + 1e-6f);
  for (int j = threadIdx.x; j < cols; j += 32) yout[j] = xin[j] * scale * g[j];
}
"""

# in-place softmax, 1-D blocks of 128 (4 rows), the row `threadIdx.x / 32` in place, the
# lane a `% 32` local, doubling xor loops; the last pass overwrites the row it reads
SOFTMAX_INPLACE = """
extern "C" __global__ void k(float* data, int rows, int cols) {
  const int lane_id = threadIdx.x % 32;
  const int rr = blockIdx.x * 4 + threadIdx.x / 32;
  if (rr < rows) {
    float* row = data + (size_t)rr * cols;
    float hi = -3.0e38f;
    for (int c = lane_id; c < cols; c += 32) hi = fmaxf(hi, row[c]);
    for (int m = 1; m < 32; m <<= 1) hi = fmaxf(hi, __shfl_xor_sync(0xffffffffu, hi, m));
    float tot = 0.0f;
    for (int c = lane_id; c < cols; c += 32) tot += __expf(row[c] - hi);
    for (int m = 1; m < 32; m <<= 1) tot += __shfl_xor_sync(0xffffffffu, tot, m);
    const float inv = 1.0f / tot;
    for (int c = lane_id; c < cols; c += 32) row[c] = __expf(row[c] - hi) * inv;
  }
}
"""

# centring: the mean of the row, then the row minus it, into a __restrict__ output; 1-D
# blocks of 64, the warp through a local `>> 5`, flat indices
CENTER = """
extern "C" __global__ void k(float* __restrict__ o, const float* __restrict__ a, int rows,
                             int cols) {
  int wp = threadIdx.x >> 5;
  int row = blockIdx.x * 2 + wp;
  int l = threadIdx.x & 31;
  if (row >= rows) return;
  float s = 0.0f;
  for (int c = l; c < cols; c += 32) s += a[row * cols + c];
  for (int d = 16; d >= 1; d /= 2) s += __shfl_xor_sync(0xffffffff, s, d);
  const float mu = s / cols;
  for (int c = l; c < cols; c += 32) o[row * cols + c] = a[row * cols + c] - mu;
}
"""

#: source, grid, block, (role, elements) of each pointer argument in order
CASES: dict[str, tuple[str, list[str], list[str], list[tuple[str, int]]]] = {
    "rms_weighted": (RMS_WEIGHTED, ["ceil_div(rows, 8)"], ["32", "8"],
                     [("out", ROWS * COLS), ("in", ROWS * COLS), ("in", COLS)]),
    "softmax_inplace": (SOFTMAX_INPLACE, ["ceil_div(rows, 4)"], ["128"],
                        [("inout", ROWS * COLS)]),
    "center": (CENTER, ["ceil_div(rows, 2)"], ["64"], [("out", ROWS * COLS),
                                                        ("in", ROWS * COLS)]),
}


def _program(source: str, grid: Sequence[int], block: Sequence[int],
             args: Sequence[tuple[str, int]]) -> str:
    """C++ that fills the inputs (a pattern whose scale varies per row), launches ``source``
    on the host and prints every output element in hex (NaN where unwritten)."""
    body, call = [], []
    for index, (role, count) in enumerate(args):
        name = f"arg{index}"
        fill = (f"  for (int i = 0; i < {count}; ++i) {name}[i] = std::sin(0.37f * i + "
                f"{index}) * (1.0f + (i / {COLS}) % 5);" if role != "out"
                else f"  for (int i = 0; i < {count}; ++i) {name}[i] = NAN;")
        body += [f"  std::vector<float> {name}_v({count});",
                 f"  float* {name} = {name}_v.data();", fill]
        call.append(name)
    g = ", ".join(f"{int(n)}u" for n in (*grid, 1, 1)[:3])
    b = ", ".join(f"{int(n)}u" for n in (*block, 1, 1)[:3])
    body.append(f"  wb_launch({{{g}}}, {{{b}}}, [&] {{ k({', '.join(call)}, {ROWS}, {COLS}); }});")
    body += [f"  for (int i = 0; i < {count}; ++i) std::printf(\"%a\\n\", (double)arg{index}[i]);"
             for index, (role, count) in enumerate(args) if role != "in"]
    prelude = "#define __expf(v) std::exp(v)\n"
    return "\n".join([COOPERATIVE_BLOCK, HOST_PRELUDE, SHFL_SYNC, prelude, source,
                      "int main() {", *body, "  return 0;", "}"])


def host(work: Path, label: str, source: str, grid: Sequence[int], block: Sequence[int],
         args: Sequence[tuple[str, int]], flags: tuple[str, ...] = ()) -> np.ndarray:
    work.mkdir(parents=True, exist_ok=True)
    printed = run_on_host(work, label, _program(source, grid, block, args), flags=flags).split()
    return np.array([float.fromhex(v) if "nan" not in v else np.nan for v in printed])


#: The spelling whose default and corners the default run checks too (every one's with
#: WORKBENCH_FULL_MATRIX=1): the in-place softmax, three passes over one pointer.
CORNERS_EVERY_RUN = "softmax_inplace"


@pytest.fixture(scope="module")
def as_written(tmp_path_factory: pytest.TempPathFactory,
               host_flags: tuple[str, ...]) -> Any:  # noqa: F811
    """``as_written(name)``: what the kernel of CASES[name] as written prints on the host
    (one g++ build and run per spelling and module, however many tests compare with it)."""
    printed: dict[str, np.ndarray] = {}

    def outputs(name: str) -> np.ndarray:
        if name not in printed:
            source, grid, block, args = CASES[name]
            per_block = int(grid[0].split(", ")[1].rstrip(")"))
            printed[name] = host(tmp_path_factory.mktemp(f"written_{name}"), "as_written",
                                 source, [-(-ROWS // per_block)], [int(b) for b in block],
                                 args, host_flags)
        return printed[name]
    return outputs


def _warps(knobs: dict[str, Any]) -> str:
    return next(p for p in knobs if p not in ("LANES", "VEC", "ITEMS_PER_THREAD", "REG_ROW",
                                              "MIN_BLOCKS_PER_SM"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_row_read_twice_lifts_reg_row_with_register_constraints(name: str) -> None:
    source, grid, block, _args = CASES[name]
    lifted = lift(source, grid, block)
    knobs = params(lifted)
    assert knobs["REG_ROW"]["default"] == 0 and 0 in knobs["REG_ROW"]["values"], lifted.notes
    values = [v for v in knobs["REG_ROW"]["values"] if v]
    assert all(b <= 1.5 * a for a, b in itertools.pairwise(values))
    warps = _warps(knobs)
    per = "ceil_div(REG_ROW, LANES * VEC) * VEC"  # the derived steps' registers
    assert f"{per} + 32 <= 255" in lifted.constraints
    assert f"{per} + 32 <= 65536 // (32 * {warps})" in lifted.constraints
    assert (f"MIN_BLOCKS_PER_SM == 0 or {per} + 32 <= 65536 // (32 * {warps} * "
            "MIN_BLOCKS_PER_SM)") in lifted.constraints  # the row never spills
    assert "REG_ROW == 0 or REG_ROW >= cols" in lifted.constraints
    # as written: no cached pass is compiled
    template = lifted_template(lifted)
    default = template.render(template.default_config(), "fp32").source
    assert "#define REG_ROW 0" in default and "#if REG_ROW > 0" in default
    passes = 3 if name == "softmax_inplace" else 2
    assert default.count("#if REG_ROW > 0") == passes


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_first_pass_loads_every_kept_step_before_its_body(name: str) -> None:
    """The fill's loads stand alone in their own unrolled loop, each step past the row
    skipped by an if: no step's load waits for an earlier step's body (with a break after
    each step, sm_90 ptxas kept one load in flight a warp: row_l2norm 25 % slower than its
    expert at the same config on the H100)."""
    source, grid, block, _args = CASES[name]
    template = lifted_template(lift(source, grid, block))
    config = {**template.default_config(), "REG_ROW": 384, "LANES": 32, "VEC": 4}
    text = template.render(config, "fp32").source
    cached = text[text.index("wb_keep[WB_REG_STEPS]"):]
    fill = cached[:cached.index("}\n", cached.index("wb_keep[wb_s] ="))]
    loop = fill[fill.index("for (int wb_s"):]
    assert re.fullmatch(r"for \(int wb_s = 0; wb_s < WB_REG_STEPS; \+\+wb_s\) \{\s*"
                        r"const int wb_at = [^;]+;\s*if \(wb_at < cols\) "
                        r"wb_keep\[wb_s\] = [^;]+;\s*", loop), loop
    assert "break" not in text.split("#if REG_ROW > 0", 1)[1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_keeping_the_row_is_one_move_from_any_lanes_and_width(name: str) -> None:
    """At each shape one row size holds the row (the smallest that does): from every config
    that reads the row twice, setting REG_ROW to it is valid wherever the kept steps fit
    the registers (the search reaches the row in registers in one move)."""
    source, grid, block, _args = CASES[name]
    template = lifted_template(lift(source, grid, block))
    for cols, size in ((300, 384), (768, 768), (2560, 3072), (1000, 1024)):
        env = {"rows": ROWS, "cols": cols}
        space = template.space(env)
        kept = {c["REG_ROW"] for c in space if c["REG_ROW"]}
        assert kept == {size}, (cols, kept)
        moved = [{**c, "REG_ROW": size} for c in space
                 if c["REG_ROW"] == 0 and c.get("ITEMS_PER_THREAD", 1) == 1]
        fits = [c for c in moved if _kept_regs(c, size) + 32 <= _reg_cap(c)]
        assert fits and all(space.rejection(c) is None for c in fits), cols
        # the default (a warp a row, scalar loads) keeps the row in one move at each shape
        assert space.rejection({**template.default_config(), "REG_ROW": size}) is None


def _kept_regs(config: dict[str, Any], size: int) -> int:
    """Registers per lane the kept row takes: ceil(size / (LANES * VEC)) steps of VEC."""
    per_step = int(config["LANES"]) * int(config["VEC"])
    return -(-size // per_step) * int(config["VEC"])


def _reg_cap(config: dict[str, Any]) -> int:
    """A thread's register share: 255, and the register file over the resident threads."""
    threads = 32 * int(config[_warps(config)]) * max(1, int(config["MIN_BLOCKS_PER_SM"]))
    return min(255, 65536 // threads)


def _configs(template: Any) -> list[dict[str, Any]]:
    """The default, the corners, and the row (300 of REG_ROW 384) kept in registers at three
    shapes of the warp: 32 lanes x float4 (3 steps, the last partly), 8 lanes x float2 (24
    steps, 19 used, 4 rows a warp), 32 lanes x 1 (12 steps, 10 used)."""
    knobs = template.param_names
    warps = _warps(dict.fromkeys(knobs))
    base = template.default_config()
    kept = [{**base, "REG_ROW": 384, "LANES": 32, "VEC": 4, warps: 1},
            {**base, "REG_ROW": 384, "LANES": 8, "VEC": 2, warps: 4},
            {**base, "REG_ROW": 384, "LANES": 32, "VEC": 1, warps: 2}]
    return [*corner_configs(template, ENV), *kept]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_spelling_computes_as_written_with_the_row_in_registers(
        name: str, tmp_path: Path, host_flags: tuple[str, ...],  # noqa: F811
        as_written: Any) -> None:
    source, grid, block, args = CASES[name]
    template = lifted_template(lift(source, grid, block))
    want = as_written(name)
    assert not np.isnan(want).any()
    space = template.space(dict(ENV))
    configs = _configs(template)
    assert all(space.rejection(c) is None for c in configs), \
        [space.rejection(c) for c in configs]
    # every spelling at its last corner (every knob at an end) and at one row-in-registers
    # config (a different one each); CORNERS_EVERY_RUN at its default too; every config of
    # every spelling with WORKBENCH_FULL_MATRIX=1
    kept = configs[3:] if FULL_MATRIX else [configs[3 + sorted(CASES).index(name)]]
    corners = (host_sample(configs[:3]) if FULL_MATRIX or name == CORNERS_EVERY_RUN
               else configs[2:3])
    for i, config in enumerate([*corners, *kept]):
        launch = template.launch_for(config, ENV)
        got = host(tmp_path, f"config{i}", template.render(config, "fp32").source, launch.grid,
                   launch.block, args, host_flags)
        np.testing.assert_allclose(got, want, rtol=3e-5, atol=1e-6, err_msg=str(config))


def test_a_cache_too_small_for_the_row_runs_the_passes_as_written(
        tmp_path: Path, host_flags: tuple[str, ...], as_written: Any) -> None:  # noqa: F811
    """REG_ROW 64 (2 steps x 32 lanes) holds 64 of the 300 columns: the space leaves it out at this
    shape, but the kernel stays correct there (a shape with shorter rows would keep it)."""
    source, grid, block, args = CASES["softmax_inplace"]
    template = lifted_template(lift(source, grid, block))
    config = {**template.default_config(), "REG_ROW": 64, "VEC": 1}
    assert template.space(dict(ENV)).rejection(config) is not None
    assert template.space({"rows": ROWS, "cols": 64}).rejection(config) is None
    want = as_written("softmax_inplace")
    launch = template.launch_for(config, ENV)
    got = host(tmp_path, "small_cache", template.render(config, "fp32").source, launch.grid,
               launch.block, args, host_flags)
    np.testing.assert_allclose(got, want, rtol=3e-5, atol=1e-6)


# -- refused, with the line ------------------------------------------------------------------

@pytest.mark.parametrize(("name", "old", "new", "why"), [
    # the exp-sum pass writes the row back, which the write pass must read again
    ("softmax_inplace", "for (int c = lane_id; c < cols; c += 32) tot += __expf(row[c] - hi);",
     "for (int c = lane_id; c < cols; c += 32) { row[c] = __expf(row[c] - hi); tot += row[c]; }",
     "may change the row of row before its last pass reads it"),
    # the second pass walks a shorter row
    ("center", "for (int c = l; c < cols; c += 32) o[row * cols + c]",
     "for (int c = l; c < rows; c += 32) o[row * cols + c]", "have different bounds"),
    # the second pass reads the row's next element too
    ("rms_weighted", "yout[j] = xin[j] * scale * g[j];",
     "yout[j] = xin[j] * scale * g[j] + (j + 1 < cols ? xin[j + 1] : 0.0f) * 0.0f;",
     "is not a read of the row at the loop's own element"),
    # statistics stored between the passes by a loop, through a pointer that may alias the
    # row (a one-element store at the item's place is tested at run time instead:
    # tests/test_s34_warp_rowquant.py)
    ("rms_weighted", "const float scale = 1.0f / sqrtf(sq / cols + 1e-6f);",
     "const float scale = 1.0f / sqrtf(sq / cols + 1e-6f);\n  if (threadIdx.x == 0) "
     "for (int t = 0; t < 2; ++t) y[2 * r + t] = sq;",
     "may change the row of xin before its last pass reads it"),
    # the row's place moves between the passes: the write pass reads the next row
    ("center", "const float mu = s / cols;",
     "const float mu = s / cols;\n  a += cols;", "`a` is assigned while the row of a is kept"),
])
def test_what_cannot_be_shown_legal_is_refused_with_the_line(name: str, old: str, new: str,
                                                             why: str) -> None:
    source, grid, block, _args = CASES[name]
    assert old in source
    changed = source.replace(old, new)
    lifted = lift(changed, grid, block)
    assert "REG_ROW" not in params(lifted)
    reasons = refusals(lifted, "REG_ROW")
    last = new.splitlines()[-1].strip()
    at = next(i + 1 for i, t in enumerate(changed.splitlines()) if last in t)
    assert any(why in r and f"(line {at})" in r for r in reasons), (at, lifted.notes)


# a row at a local offset, in (32, 8) blocks: both passes read x[off + c]
OFFSET_ROW = """
extern "C" __global__ void k(float* y, const float* x, int rows, int cols) {
  const int r = blockIdx.x * 8 + threadIdx.y;
  if (r >= rows) return;
  int off = r * cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 32) { s += x[off + c]; }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  for (int c = threadIdx.x; c < cols; c += 32) y[r * cols + c] = x[off + c] / s;
}
"""
OFFSET_GRID = (["ceil_div(rows, 8)"], ["32", "8"])


@pytest.mark.parametrize(("old", "new", "at"), [
    # the offset moves between the passes: the write pass reads another row
    ("  for (int c = threadIdx.x; c < cols; c += 32) y[",
     "  off = (off + cols) % (rows * cols);\n  for (int c = threadIdx.x; c < cols; c += 32) y[", 9),
    # the offset moves inside the first pass (its loads run before its body)
    ("{ s += x[off + c]; }", "{ s += x[off + c]; off += c < 0 ? 1 : 0; }", 7),
])
def test_a_row_whose_offset_is_assigned_while_kept_is_refused(old: str, new: str,
                                                              at: int) -> None:
    assert "REG_ROW" in params(lift(OFFSET_ROW, *OFFSET_GRID))
    lifted = lift(OFFSET_ROW.replace(old, new), *OFFSET_GRID)
    assert "REG_ROW" not in params(lifted) and "LANES" in params(lifted)
    assert f"`off` is assigned while the row of x is kept (the kept elements would no longer " \
        f"be the ones the passes read) (line {at})" in " ".join(refusals(lifted, "REG_ROW"))


# a block per row (256 threads, a shared-memory tree), two passes: the centred row scaled by
# its largest magnitude; the thread index a local, flat indices
BLOCK_ROW = """
extern "C" __global__ void k(float* __restrict__ o, const float* __restrict__ a, int rows,
                             int cols) {
  __shared__ float big[256];
  const int t = threadIdx.x;
  const long long base = (long long)blockIdx.x * cols;
  float m = 0.0f;
  for (int c = t; c < cols; c += 256) m = fmaxf(m, fabsf(a[base + c]));
  big[t] = m;
  __syncthreads();
  for (int h = 128; h > 0; h /= 2) {
    if (t < h) big[t] = fmaxf(big[t], big[t + h]);
    __syncthreads();
  }
  const float s = big[0] > 0.0f ? 1.0f / big[0] : 0.0f;
  for (int c = t; c < cols; c += 256) o[base + c] = a[base + c] * s;
}
"""


@pytest.fixture
def block_rows_wired(monkeypatch: pytest.MonkeyPatch) -> None:
    """lift_kernel with the block-per-row cache run right after apply_vector (the wiring
    :func:`apply_block_row_cache` documents; not yet the templater's default)."""
    def vector_then_cache(plan: Any) -> bool:
        mark = len(plan.rw.edits)
        done = apply_vector(plan)
        apply_block_row_cache(plan, plan.rw.edits[mark:])
        return done
    monkeypatch.setattr(semantic, "apply_vector", vector_then_cache)


@pytest.mark.timeout(240)
def test_a_block_per_row_kernel_keeps_its_row_in_registers(
        block_rows_wired: None, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    lifted = lift(BLOCK_ROW, ["rows"], ["256"])
    knobs = params(lifted)
    assert {"BLOCK_THREADS", "VEC", "REG_ROW"} <= set(knobs), lifted.notes
    assert "ceil_div(REG_ROW, BLOCK_THREADS * VEC) * VEC + 32 <= 65536 // (BLOCK_THREADS)" \
        in lifted.constraints
    assert "REG_ROW == 0 or REG_ROW >= cols" in lifted.constraints
    template = lifted_template(lifted)
    args = [("out", ROWS * COLS), ("in", ROWS * COLS)]
    want = host(tmp_path, "as_written", BLOCK_ROW, [ROWS], [256], args, host_flags)
    base = template.default_config()
    configs = [{**base, "REG_ROW": 384, "BLOCK_THREADS": 64, "VEC": 4},
               {**base, "REG_ROW": 384, "BLOCK_THREADS": 32, "VEC": 1}]
    space = template.space(dict(ENV))
    assert all(space.rejection(c) is None for c in configs), \
        [space.rejection(c) for c in configs]
    # 2 float4 steps over 64 threads on every run; 12 scalar steps of one warp with
    # WORKBENCH_FULL_MATRIX=1
    for i, config in enumerate(configs if FULL_MATRIX else configs[:1]):
        launch = template.launch_for(config, ENV)
        got = host(tmp_path, f"config{i}", template.render(config, "fp32").source,
                   launch.grid, launch.block, args, host_flags)
        np.testing.assert_allclose(got, want, rtol=3e-5, atol=1e-6, err_msg=str(config))


def test_a_block_per_row_kernel_is_left_as_written_by_default() -> None:
    """Without the wiring (the templater as it stands) a block per row gets no REG_ROW."""
    source = """
extern "C" __global__ void k(float* o, const float* a, int rows, int cols) {
  __shared__ float part[32];
  const int row = blockIdx.x;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 256) s += a[row * cols + c];
  for (int d = 16; d > 0; d >>= 1) s += __shfl_xor_sync(0xffffffffu, s, d);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = s;
  __syncthreads();
  float t = 0.0f;
  for (int w = 0; w < 8; ++w) t += part[w];
  for (int c = threadIdx.x; c < cols; c += 256) o[row * cols + c] = a[row * cols + c] / t;
}
"""
    lifted = lift(source, ["rows"], ["256"])
    assert "REG_ROW" not in params(lifted), lifted.notes


def test_a_block_per_row_walk_dealt_over_blocks_is_refused(block_rows_wired: None) -> None:
    """A row split over several blocks (no shared memory: ROW_SPLIT applies) is not one
    block's row: refused with the line of the first pass."""
    source = """
extern "C" __global__ void k(float* __restrict__ o, const float* __restrict__ a, int rows,
                             int cols) {
  const long long base = (long long)blockIdx.x * cols;
  for (int c = threadIdx.x; c < cols; c += 128) o[base + c] = a[base + c] * 2.0f;
  for (int c = threadIdx.x; c < cols; c += 128) o[base + c] += a[base + c];
}
"""
    lifted = lift(source, ["rows"], ["128"])
    knobs = params(lifted)
    assert "REG_ROW" not in knobs and "ROW_SPLIT" in knobs, lifted.notes
    assert any("dealt over several blocks (ROW_SPLIT)" in r and "(line 5)" in r
               for r in refusals(lifted, "REG_ROW")), lifted.notes


# -- registers (ptxas) -------------------------------------------------------------------------

_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_REGS = re.compile(r"Used (\d+) registers")


@needs_nvcc
@pytest.mark.timeout(200)
def test_the_largest_cache_fits_the_registers_without_spilling(tmp_path: Path) -> None:
    """The most registers the space allows (REG_ROW 6144: 48 steps of float4, one warp a
    block) and a mid one: ptxas keeps the row in registers (no spill, no stack, under
    255)."""
    source, grid, block, _args = CASES["rms_weighted"]
    template = lifted_template(lift(source, grid, block))
    warps = _warps(dict.fromkeys(template.param_names))
    caches = ((6144, {"REG_ROW": 6144, "VEC": 4, "LANES": 32, warps: 1}),
              (1024, {"REG_ROW": 1024, "VEC": 4, "LANES": 32, warps: 8}))
    # the largest on every run, the mid one too with WORKBENCH_FULL_MATRIX=1
    for cols, change in caches if FULL_MATRIX else caches[:1]:
        config = {**template.default_config(), **change}
        assert template.space({"rows": 4096, "cols": cols}).rejection(config) is None, change
        assert NVCC is not None
        src = write_file(tmp_path, tmp_path / "k.cu", template.render(config, "fp32").source,
                         overwrite=True)
        done = subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-O3", "-Xptxas", "-v", "-o",
                               str(tmp_path / "k.cubin"), str(src)], capture_output=True,
                              text=True, timeout=150, check=False)
        log = done.stdout + done.stderr
        assert done.returncode == 0, log[-2000:]
        assert _SPILLS.findall(log) == [("0", "0")], log
        assert "0 bytes stack frame" in log, log
        regs = int(_REGS.findall(log)[0])
        assert REG_FLOOR[change["REG_ROW"]] <= regs <= 255, (change, regs)


#: the kept row alone needs REG_ROW / 32 registers per lane at 32 lanes
REG_FLOOR = {6144: 192, 1024: 32}
