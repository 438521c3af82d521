"""Shared slots a lifted block size governs (workbench/templater/block_slots.py; issue 28, 0
wrong configs): a row sum whose block of 256 leaves one partial per warp in
``__shared__ float slot[8]`` and sums ``for (w = 0; w < 8; ++w)``. Before session 26 the block
lift moved BLOCK_THREADS over 32..1024 and left both 8s as written: at 512 threads warps 8..15
wrote past the array, at 128 slots 4..7 were read unwritten. The slot count now follows the
block (``slot[(BLOCK_THREADS / 32)]``, ``w < (BLOCK_THREADS / 32)``) where the reading is
certain, through a local ``constexpr``, a ``#define`` or a file-scope constant too (their
definition follows), and the block size stays as written, with the line, where it is not.
Host checks (g++, the cooperative block as on the GPU): each lifted spelling against the
kernel as written, bit for bit at the default, within the folder's tolerance elsewhere (a
block of another size sums in another order); by default the default and one or two mixes,
every all-ends config under ``WORKBENCH_FULL_MATRIX=1``. On the lift before session 26 five
of the six host cases fail (the repro at 512, the first-warp spelling at 512, the
``#define``/``while`` spelling at 1024, the wider array at 512, an entry per thread at 480)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import _assert_same, _inputs, folder_runs

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

TOML = """name = "rowsum"
description = "out[r] = the sum of row r of x"
dtypes = ["fp32"]
check_shape = "small"
[shapes]
small = { cols = 1000, rows = 7 }
large = { cols = 8192, rows = 4096 }
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
name = "cols"
dtype = "i32"
role = "scalar"
value = "cols"
[baseline]
source = "baseline.cu"
entry = "rowsum"
grid = ["rows"]
block = ["256"]
"""

# the repro: one partial per warp, thread 0 sums the 8 slots by a literal loop
REPRO = """// out[r] = sum of row r of x (rows x cols): one block of 256 a row
extern "C" __global__ void rowsum(float* out, const float* x, int cols) {
  __shared__ float slot[8];
  const float* p = x + (size_t)blockIdx.x * cols;
  float v = 0.0f;
  for (int j = threadIdx.x; j < cols; j += 256) v += p[j];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) slot[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int w = 0; w < 8; ++w) s += slot[w];
    out[blockIdx.x] = s;
  }
}
"""

# another author: a local constexpr count, lane and warp by mask and shift, the first warp
# sums the partials with a butterfly over part[lane] for lane < WARPS
FIRST_WARP = """extern "C" __global__ void rowsum(float* out, const float* x, int cols) {
  constexpr int WARPS = 256 / 32;
  __shared__ float part[WARPS];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const float* row = x + (size_t)blockIdx.x * cols;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 256) acc += row[c];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) part[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    float t = lane < WARPS ? part[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
    if (lane == 0) out[blockIdx.x] = t;
  }
}
"""

# a third: the count a #define, the slots summed by a while loop
WHILE_DEFINE = """#define NWARPS 8
extern "C" __global__ void rowsum(float* out, const float* x, int cols) {
  __shared__ float sums[NWARPS];
  int tid = threadIdx.x;
  float v = 0.0f;
  for (int j = tid; j < cols; j += 256) v += x[(size_t)blockIdx.x * cols + j];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  if (tid % 32 == 0) sums[tid / 32] = v;
  __syncthreads();
  if (tid == 0) {
    float s = 0.0f;
    int w = 0;
    while (w < NWARPS) { s += sums[w]; ++w; }
    out[blockIdx.x] = s;
  }
}
"""

# a slot array wider than the block needs: it stays, and bounds the block
WIDE = REPRO.replace("slot[8];", "slot[16];")

# one entry per thread in an array of 512 under a block of 256, thread 0 summing the first 256
PER_THREAD = """extern "C" __global__ void rowsum(float* out, const float* x, int cols) {
  __shared__ float part[512];
  float v = 0.0f;
  for (int j = threadIdx.x; j < cols; j += 256) v += x[(size_t)blockIdx.x * cols + j];
  part[threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int i = 0; i < 256; ++i) s += part[i];
    out[blockIdx.x] = s;
  }
}
"""

# one slot per two warps, zeroed by the threads below the count, each pair's warps adding
# their partials in turn (a count a block of 32 or 96 would not divide)
PAIRS = REPRO.replace("__shared__ float slot[8];",
                      "__shared__ float slot[4];\n  if (threadIdx.x < 4) slot[threadIdx.x] = 0.0f;"
                      "\n  __syncthreads();").replace(
    "if (threadIdx.x % 32 == 0) slot[threadIdx.x / 32] = v;",
    "if (threadIdx.x % 64 == 0) slot[threadIdx.x / 64] += v;\n  __syncthreads();\n"
    "  if (threadIdx.x % 64 == 32) slot[threadIdx.x / 64] += v;").replace("w < 8", "w < 4")


def _lift(source: str, block: tuple[str, ...] = ("256",)) -> Any:
    return lift_kernel(source, entry="rowsum", grid=["rows"], block=list(block),
                       scalars={"cols": "cols"})


def _block_notes(lifted: Any) -> str:
    return "\n".join(n for n in lifted.notes if n.startswith("BLOCK"))


@pytest.mark.parametrize(("source", "lines"), [
    (REPRO, ["__shared__ float slot[(BLOCK_THREADS / 32)];",
             "for (int w = 0; w < (BLOCK_THREADS / 32); ++w) s += slot[w];"]),
    (FIRST_WARP, ["constexpr int WARPS = (BLOCK_THREADS / 32);", "__shared__ float part[WARPS];",
                  "float t = lane < WARPS ? part[lane] : 0.0f;"]),
    (WHILE_DEFINE, ["#define NWARPS (BLOCK_THREADS / 32)", "__shared__ float sums[NWARPS];"]),
    ("constexpr int kWarps = 8;\n" + REPRO.replace("slot[8]", "slot[kWarps]").replace(
        "w < 8", "w < kWarps"), ["constexpr int kWarps = (BLOCK_THREADS / 32);",
                                 "for (int w = 0; w < kWarps; ++w) s += slot[w];"]),
], ids=["repro", "first_warp", "while_define", "file_constexpr"])
def test_the_slot_count_follows_the_block(source: str, lines: list[str]) -> None:
    lifted = _lift(source)
    assert "BLOCK_THREADS" in [p.name for p in lifted.params], _block_notes(lifted)
    for want in lines:
        assert want in lifted.source, (want, lifted.source)
    assert "shared slot count(s)" in _block_notes(lifted)
    assert not any(c.startswith("BLOCK_THREADS <=") for c in lifted.constraints)


def test_a_wider_array_bounds_the_block_and_its_loop_follows() -> None:
    lifted = _lift(WIDE)
    assert "__shared__ float slot[16];" in lifted.source
    assert "w < (BLOCK_THREADS / 32)" in lifted.source
    assert "BLOCK_THREADS <= 512" in lifted.constraints


def test_an_entry_per_thread_bounds_the_block_by_the_array() -> None:
    lifted = _lift(PER_THREAD)
    assert "__shared__ float part[512];" in lifted.source
    assert "for (int i = 0; i < BLOCK_THREADS; ++i) s += part[i];" in lifted.source
    assert "BLOCK_THREADS <= 512" in lifted.constraints


def test_an_entry_offset_by_the_block_keeps_it_with_its_line() -> None:
    source = PER_THREAD.replace("part[threadIdx.x] = v;", "part[threadIdx.x] = v;\n"
                                "  part[threadIdx.x + 256] = 2.0f * v;").replace("i < 256", "i < 512")
    lifted = _lift(source)
    assert "BLOCK_THREADS" not in [p.name for p in lifted.params]
    assert "BLOCK_THREADS: not applied: `part[threadIdx.x + 256]` offsets an index of `part` by " \
        "`256`, the block's count of its entries as written" in _block_notes(lifted)
    assert "(line 6)" in _block_notes(lifted)


def test_a_count_of_two_warps_keeps_the_block_a_multiple_of_64() -> None:
    lifted = _lift(PAIRS)
    assert "slot[(BLOCK_THREADS / 64)]" in lifted.source
    assert "BLOCK_THREADS % 64 == 0" in lifted.constraints


@pytest.mark.parametrize(("change", "line", "reason"), [
    (("for (int w = 0; w < 8; ++w) s += slot[w];",
      "s = slot[0] + slot[1] + slot[2] + slot[3] + slot[4] + slot[5] + slot[6] + slot[7];"),
     12, "`slot[1]` reads entry 1 of `slot` (one per 32 threads) at a fixed index"),
    (("w < 8", "w <= 7"), 12, "`w <= 7` bounds an index of `slot` by 7, one short of the 8"),
    (("int w = 0; w < 8; ++w", "int w = 7; w >= 0; --w"), 12,
     "`w = 7` starts an index of `slot` at 7"),
    (("float s = 0.0f;\n    for (int w = 0; w < 8; ++w) s += slot[w];",
      "float s = 0.0f;\n    const float* q = slot;\n"
      "    for (int w = 0; w < 8 && q != nullptr; ++w) s += q[w];"),
     12, "`* q = slot` reads `slot` (one entry per 32 threads) other than by a subscript"),
    (("float s = 0.0f;", "float s = 0.0f;\n    float acc[8];\n"
      "    for (int w = 0; w < 8; ++w) acc[w] = 1.0f;"), 13,
     "`w < 8` compares an index of `slot` with 8, the block's count of its entries, away from "
     "its accesses"),
], ids=["unrolled", "inclusive_bound", "downward", "through_a_pointer", "another_loops_w"])
def test_a_reading_that_is_not_certain_keeps_the_block_with_its_line(
        change: tuple[str, str], line: int, reason: str) -> None:
    source = REPRO.replace(*change)
    assert source != REPRO
    lifted = _lift(source)
    assert "BLOCK_THREADS" not in [p.name for p in lifted.params]
    notes = _block_notes(lifted)
    assert f"BLOCK_THREADS: not applied: {reason}" in notes and f"(line {line})" in notes, notes


def test_a_pointer_to_the_slots_only_indexed_reads_as_the_array() -> None:
    """``const float* q = slot; .. q[w]`` is ``slot[w]`` (workbench.templater.pointer_locals):
    the reading is certain, and the count follows the block as in the repro (a pointer
    compared, above, escapes and stays)."""
    lifted = _lift(REPRO.replace("    for (int w = 0; w < 8; ++w) s += slot[w];",
                                 "    const float* q = slot;\n"
                                 "    for (int w = 0; w < 8; ++w) s += q[w];"))
    assert "BLOCK_THREADS" in [p.name for p in lifted.params], lifted.notes
    assert "slot[(BLOCK_THREADS / 32)]" in lifted.source
    assert "s += slot[w]" in lifted.source


def test_a_block_of_one_row_ties_its_x_size_to_whole_warps() -> None:
    lifted = _lift(REPRO, ("256", "1"))
    assert "__shared__ float slot[(BLOCK_X / 32)];" in lifted.source
    assert "BLOCK_X % 32 == 0" in lifted.constraints  # a 2-D block's x size starts at 4


def test_rows_of_warp_slots_keep_the_block_with_its_line() -> None:
    source = REPRO.replace("slot[8]", "slot[2][8]").replace(
        "slot[threadIdx.x / 32] = v", "slot[blockIdx.x & 1][threadIdx.x / 32] = v").replace(
        "s += slot[w]", "s += slot[blockIdx.x & 1][w]")
    lifted = _lift(source)
    assert "BLOCK_THREADS" not in [p.name for p in lifted.params]
    notes = _block_notes(lifted)
    assert "BLOCK_THREADS: not applied: `slot[blockIdx.x & 1][threadIdx.x / 32]` indexes the " \
        "many-dimensional shared array `slot` by the warp" in notes and "(line 8)" in notes, notes


def test_a_2d_warp_id_over_a_constant_count_keeps_both_dimensions() -> None:
    # before session 26: BLOCK_X, BLOCK_Y lifted "with 0 use(s)" over slot[8] and w < 8
    source = REPRO.replace("__shared__ float slot[8];", "__shared__ float slot[8];\n"
                           "  const int t = threadIdx.y * blockDim.x + threadIdx.x;").replace(
        "j = threadIdx.x; j < cols; j += 256", "j = t; j < cols; j += blockDim.x * blockDim.y"
    ).replace("slot[threadIdx.x / 32]", "slot[t / 32]").replace("if (threadIdx.x == 0)",
                                                                "if (t == 0)")
    lifted = _lift(source, ("64", "4"))
    assert not {"BLOCK_X", "BLOCK_Y"} & {p.name for p in lifted.params}
    notes = _block_notes(lifted)
    for dim in "XY":
        assert f"BLOCK_{dim}: not applied: `slot[t / 32]` indexes `slot` by a warp id over a " \
               "2-D block" in notes and "(line 9)" in notes, notes
    # a count read from the block's own sizes, over slots for any block, still lifts
    free = _lift(source.replace("slot[8]", "slot[32]").replace(
        "w < 8", "w < blockDim.x * blockDim.y / 32"), ("64", "4"))
    assert {"BLOCK_X", "BLOCK_Y"} <= {p.name for p in free.params}, _block_notes(free)


def _folder(root: Path, source: str, block: str = '["256"]') -> KernelFolder:
    root.mkdir(parents=True)
    (root / "kernel.toml").write_text(TOML.replace('block = ["256"]', f"block = {block}"))
    (root / "baseline.cu").write_text(source)
    return load_kernel_folder(root)


_BLOCKS = {"block_256x1": '["256", "1"]'}  # a y size of 1: BLOCK_X is a 2-D block's x size

_MIXES: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "block_256x1": (REPRO, [{"BLOCK_X": 32}, {"BLOCK_X": 1024}]),
    "repro": (REPRO, [{"BLOCK_THREADS": 128}, {"BLOCK_THREADS": 512, "ITEMS_PER_THREAD": 2}]),
    "first_warp": (FIRST_WARP, [{"BLOCK_THREADS": 96, "VEC": 2}, {"BLOCK_THREADS": 512}]),
    "while_define": (WHILE_DEFINE, [{"BLOCK_THREADS": 1024}]),
    "wide": (WIDE, [{"BLOCK_THREADS": 512}]),
    "per_thread": (PER_THREAD, [{"BLOCK_THREADS": 480, "ITEMS_PER_THREAD": 2}]),
    "pairs": (PAIRS, [{"BLOCK_THREADS": 192, "ITEMS_PER_THREAD": 4}]),
}


@needs_gxx
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", sorted(_MIXES))
def test_every_block_size_sums_what_the_kernel_as_written_sums(name: str,
                                                               tmp_path: Path) -> None:
    source, mixes = _MIXES[name]
    kf = _folder(tmp_path / name, source, _BLOCKS.get(name, '["256"]'))
    env = kf.env(kf.check_shape, "fp32")
    template = offline_template(kf).template
    configs = host_configs(template, env, mixes)
    configs = configs if FULL_MATRIX else configs[:1 + len(mixes)]
    runs = [(kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env)),
            *((template.render(c, "fp32").source, template.launch_for(c, env))
              for c in configs)]
    want, *got = folder_runs(kf, runs, _inputs(kf), tmp_path / "runs")
    assert not np.isnan(want["out"]).any()
    assert np.array_equal(got[0]["out"], want["out"]), f"{name}: the default differs"
    for config, outputs in zip(configs, got, strict=True):
        _assert_same(kf, outputs, want, f"{name} at {config}")
