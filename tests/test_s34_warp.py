"""Session 34: two memory-bound kernels whose templater pick lagged the expert on the H200,
rowquant_h16_s8 (held-back set 26) and pixel_shuffle_r2 (set 22), with two respellings of
each family (tests/spellings_s34_warp/).

- rowquant_h16_s8 reads each half row twice (its largest magnitude, then the codes); the
  expert's pick keeps the row in registers (REGS 16 at VEC 8: 4096 halves, 101 % of a copy
  against the templater's 78 %). REG_ROW (warp_regs) was refused: the row's statistic
  ``scale[row]``, stored between the passes through a pointer that is not ``__restrict__``,
  might change the row. Such a one-element store at the item's own place (every name of its
  place a parameter or a local the row's place is written with, none assigned, so the same
  place for every lane) is now tested at run time before each later cached pass: the kept
  row is used only where the stored element lies outside the row, the pass runs as written
  otherwise. A store whose place is a lane's own, or one in a loop, is still refused.
- pixel_shuffle_r2 gathers each output element from one of four channel planes; its lift
  vectorized the stores (VEC) and dealt ITEMS_PER_THREAD vectors a thread, but each item's
  gathered loads ran after the previous item's store (``out`` may alias ``in``: the compiler
  cannot hoist a load above a store), one item's loads in flight a thread. A one-element
  region whose lanes read memory besides its streams (a gather) now stores after every
  item's lanes (vector.py, the row-group reads' order): the items are threads of the kernel
  as written, which run in no order, so all their loads go first. The same order reaches
  one other corpus gather (corpus_compute_unseen13/maxpool3s2_nchw's window), host-checked
  here too; where every written pointer is ``__restrict__`` (corpus_holdout/dequant_int8)
  the compiler may hoist the loads itself and the order stays.

Host (g++): each bit for bit against the kernel as written at the default, mixes and the
ends of the space, at the check shape and at other extents.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import held_back_unseen13
import held_back_unseen22
import held_back_unseen26
import numpy as np
import pytest
from held_back_harness import BENCHMARKS, same_as_written
from helpers_templater import host_configs, lifted_template, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)
from test_templater_warp2 import COLS, ROWS, SHFL_SYNC, lift
from test_templater_warp_regs import host

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

SPELLINGS = Path(__file__).resolve().parent / "spellings_s34_warp"
ROWQUANT_KNOBS = frozenset({"LANES", "VEC", "ITEMS_PER_THREAD", "REG_ROW", "MIN_BLOCKS_PER_SM"})
SHUFFLE_KNOBS = frozenset({"BLOCK_THREADS", "VEC", "ITEMS_PER_THREAD", "MIN_BLOCKS_PER_SM"})

#: folder -> (path, the name of its warps-a-block knob, the mixes checked bit for bit)
ROWQUANT: dict[str, tuple[Path, str, list[dict[str, int]]]] = {
    "rowquant_h16_s8": (held_back_unseen26.SET.root / "rowquant_h16_s8", "WARPS_PER_BLOCK", [
        {"LANES": 32, "VEC": 8, "REG_ROW": 384, "WARPS_PER_BLOCK": 1},  # the expert's pick
        {"LANES": 8, "VEC": 4, "REG_ROW": 384, "WARPS_PER_BLOCK": 2},
        {"LANES": 16, "VEC": 2, "ITEMS_PER_THREAD": 4, "WARPS_PER_BLOCK": 8}]),
    "int8_rowquant_macro": (SPELLINGS / "int8_rowquant_macro", "ROWS_PB", [
        {"LANES": 32, "VEC": 8, "REG_ROW": 384, "ROWS_PB": 1},
        {"LANES": 4, "VEC": 8, "REG_ROW": 384, "ROWS_PB": 4}]),
    "quant_rows_sizet": (SPELLINGS / "quant_rows_sizet", "WARPS_PER_BLOCK", [
        {"LANES": 32, "VEC": 8, "REG_ROW": 384, "WARPS_PER_BLOCK": 1},
        {"LANES": 16, "VEC": 4, "REG_ROW": 384, "WARPS_PER_BLOCK": 4}]),
}
#: folder -> (path, the mixes checked bit for bit)
SHUFFLE: dict[str, tuple[Path, list[dict[str, int]]]] = {
    "pixel_shuffle_r2": (held_back_unseen22.SET.root / "pixel_shuffle_r2", [
        {"BLOCK_THREADS": 128, "VEC": 4, "ITEMS_PER_THREAD": 2},  # the earlier tuned pick
        {"BLOCK_THREADS": 96, "VEC": 2, "ITEMS_PER_THREAD": 8}]),
    "depth_to_space2": (SPELLINGS / "depth_to_space2", [
        {"BLOCK_THREADS": 128, "VEC": 4, "ITEMS_PER_THREAD": 4},
        {"BLOCK_THREADS": 64, "VEC": 2, "ITEMS_PER_THREAD": 2}]),
    "shuffle_up2_bits": (SPELLINGS / "shuffle_up2_bits", [
        {"BLOCK_THREADS": 128, "VEC": 4, "ITEMS_PER_THREAD": 8},
        {"BLOCK_THREADS": 224, "VEC": 2, "ITEMS_PER_THREAD": 2}]),
}


def _with_extent(path: Path, root: Path, key: str, extent: int | None) -> KernelFolder:
    """The folder, its check shape's ``key`` set to ``extent`` (a copy) where given."""
    if extent is None:
        return load_kernel_folder(path)
    copy = root / path.name
    shutil.copytree(path, copy, ignore=shutil.ignore_patterns("expert"))
    toml = copy / "kernel.toml"
    small = re.compile(r"^(small = \{.*\b" + key + r" = )\d+", re.M)
    text, hits = small.subn(lambda m: f"{m.group(1)}{extent}", toml.read_text())
    assert hits == 1
    toml.write_text(text)
    return load_kernel_folder(copy)


def _host_check(kf: KernelFolder, mixes: list[dict[str, int]], host: Callable[[str], str],
                work: Path, flags: tuple[str, ...]) -> None:
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    space, default = template.space(env), template.default_config()
    # a mix the extent rules out (VEC past a row's multiple, a cache the row does not fit)
    # is outside the space there
    kept = [m for m in mixes if space.rejection({**default, **m}) is None]
    configs = host_configs(template, env, kept)
    assert len(configs) >= 3
    assert same_as_written(kf, template, configs, host, work, flags) == len(configs)


# -- rowquant: the row kept in registers past its statistic's store ---------------------------

@pytest.mark.parametrize("name", sorted(ROWQUANT))
def test_the_row_quantiser_keeps_its_row_past_the_scale_store(name: str) -> None:
    path, warps, _mixes = ROWQUANT[name]
    lifted = offline_template(load_kernel_folder(path)).lifted
    assert {p.name for p in lifted.params} == ROWQUANT_KNOBS | {warps}, lifted.notes
    note = next(n for n in lifted.notes if n.startswith("REG_ROW: applied"))
    assert "1 one-element store(s) between the passes outside the row" in note
    # the scale's element compared with the row before the cached write pass
    assert re.search(r"&(scale|scales|row_scale)\[(row|r)\] \+ sizeof", lifted.source)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("cols", [None, 100, 1500])
@pytest.mark.parametrize("name", sorted(ROWQUANT))
def test_the_row_quantiser_computes_as_written(name: str, cols: int | None, tmp_path: Path,
                                               host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """At the check shape (328 halves: the cache of 384 holds it), at 100 (a cache of 128,
    lanes past the row's end) and at 1500 (a multiple of four halves, not of eight)."""
    path, _warps, mixes = ROWQUANT[name]
    kf = _with_extent(path, tmp_path / "folder", "cols", cols)
    if cols is not None:  # the cache that holds the row at this extent
        size = 128 if cols == 100 else 1536
        mixes = [{**m, "REG_ROW": size} if m.get("REG_ROW") else m for m in mixes]
    _host_check(kf, mixes, _rowquant_host, tmp_path / "run", host_flags)


def _rowquant_host(source: str) -> str:
    """Set 26's host built-ins and the broadcast shuffle (int8_rowquant_macro's)."""
    return held_back_unseen26.SET.host_source(SHFL_SYNC + source)


ROW_STAT = """
#include <cuda_fp16.h>
extern "C" __global__ void k(signed char* q, float* scale, const __half* x, int rows,
                             int cols) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * 4 + threadIdx.x / 32;
  if (row >= rows) return;
  const __half* src = x + (size_t)row * cols;
  float amax = 0.0f;
  for (int c = lane; c < cols; c += 32) amax = fmaxf(amax, fabsf(__half2float(src[c])));
  for (int m = 16; m > 0; m >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, m));
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  if (lane == 0) scale[row] = amax;
  for (int c = lane; c < cols; c += 32)
    q[(size_t)row * cols + c] = (signed char)__float2int_rn(__half2float(src[c]) * inv);
}
"""


def _row_lift(source: str) -> tuple[set[str], tuple[str, ...]]:
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(rows, 4)"], block=["128"],
                         scalars={"rows": "rows", "cols": "cols"})
    return {p.name for p in lifted.params}, lifted.notes


@pytest.mark.parametrize(("old", "new", "why"), [
    # the statistic stored by a loop: many places
    ("if (lane == 0) scale[row] = amax;",
     "if (lane == 0) for (int t = 0; t < 2; ++t) scale[2 * row + t] = amax;",
     "`scale[2 * row + t]` may change the row of src before its last pass reads it"),
    # through a pointer, by a loop
    ("if (lane == 0) scale[row] = amax;",
     "if (lane == 0) for (int t = 0; t < 2; ++t) *(scale + 2 * row + t) = amax;",
     "`*(scale + 2 * row + t)` may change the row of src before its last pass reads it (a "
     "store through a pointer, not at the item's one place)"),
    # the place named through a local the row's place is not written with
    ("if (lane == 0) scale[row] = amax;",
     "const int slot = rows - 1 - row;\n  if (lane == 0) scale[slot] = amax;",
     "`scale[slot]` may change the row of src before its last pass reads it"),
])
def test_a_store_between_the_passes_not_at_the_items_place_is_refused(old: str, new: str,
                                                                      why: str) -> None:
    knobs, _notes = _row_lift(ROW_STAT)
    assert "REG_ROW" in knobs
    changed = ROW_STAT.replace(old, new)
    knobs, notes = _row_lift(changed)
    assert "REG_ROW" not in knobs and "LANES" in knobs
    last = new.splitlines()[-1].strip()
    at = next(i + 1 for i, t in enumerate(changed.splitlines()) if last in t)
    if "(a store through a pointer" not in why:
        why += " (not __restrict__, not the last pass's own element)"
    assert f"REG_ROW: not applied: {why} (line {at})" in notes, notes


# -- pixel shuffle: every item's gathered loads before any store -------------------------------

@pytest.mark.parametrize("name", sorted(SHUFFLE))
def test_the_shuffle_stores_after_every_items_gathers(name: str) -> None:
    lifted = offline_template(load_kernel_folder(SHUFFLE[name][0])).lifted
    # ITEM_ROWS: session 35 (tests/test_s35_shuffle.py)
    assert {p.name for p in lifted.params} == SHUFFLE_KNOBS | {"ITEM_ROWS"}, lifted.notes
    source = lifted.source
    store = re.search(r"\*reinterpret_cast<WbVec<float, VEC>\*>\(&\w+\[\w+\]\) = wb_\w+"
                      r"\[wb_i\];", source)
    assert store is not None
    # the vector store in a loop of its own after the lanes (and the scalar tail)
    assert source.rindex("for (int wb_v = 0; wb_v < VEC; ++wb_v)") < store.start()
    assert source.rindex("one by one") < store.start()


def test_a_gather_whose_written_pointers_are_restrict_keeps_its_order() -> None:
    """corpus_holdout/dequant_int8 (``scales[i / 64]``, every pointer ``__restrict__``): the
    compiler may hoist the next item's loads itself; its committed template stays."""
    folder = BENCHMARKS / "corpus_holdout" / "dequant_int8"
    lifted = offline_template(load_kernel_folder(folder)).lifted
    assert lifted.source.count("for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i)") == 2


def test_a_stream_only_region_keeps_its_stores_with_its_lanes() -> None:
    """No gather (every read a stream, loaded before the lanes): the order as before."""
    lifted = lift_kernel("""
extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ x, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
""", entry="k", grid=["ceil_div(n, 256)"], block=["256"], scalars={"n": "n"})
    source = lifted.source
    assert "VEC" in {p.name for p in lifted.params}
    assert source.count("for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i)") == 2


def test_a_flat_index_from_blockdim_is_a_documented_gap() -> None:
    """depth_to_space2 with ``blockIdx.x * blockDim.x`` (not the literal block or a named
    constant of it): not read as a one-element region (vector_regions reads it so only where
    it has a row-group read: session 33), so no VEC; ITEMS_PER_THREAD still lifts."""
    source = (SPELLINGS / "depth_to_space2" / "baseline.cu").read_text().replace(
        "(size_t)blockIdx.x * kThreads", "(size_t)blockIdx.x * blockDim.x")
    lifted = lift_kernel(source, entry="depth_to_space2",
                         grid=["ceil_div(n * c * 4 * h * w, 256)"], block=["256"],
                         scalars={"N": "n", "C": "c", "H": "h", "W": "w"})
    knobs = {p.name for p in lifted.params}
    assert "VEC" not in knobs and {"BLOCK_THREADS", "ITEMS_PER_THREAD"} <= knobs
    assert any(n.startswith("VEC: not applied: no unit-stride per-thread loop") for n in
               lifted.notes), lifted.notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("w", [None, 8])
@pytest.mark.parametrize("name", sorted(SHUFFLE))
def test_the_shuffle_computes_as_written(name: str, w: int | None, tmp_path: Path,
                                         host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """At the check shape (rows of 22 outputs: vectors cross the rows and the tail) and at
    w = 8 (rows of 16: whole vectors)."""
    path, mixes = SHUFFLE[name]
    kf = _with_extent(path, tmp_path / "folder", "w", w)
    _host_check(kf, mixes, held_back_unseen22.SET.host_source, tmp_path / "run", host_flags)


#: the other corpus gather the store order reaches: folder, host source, mixes
OTHER_GATHERS: dict[str, tuple[Path, Callable[[str], str], list[dict[str, Any]]]] = {
    "maxpool3s2_nchw": (held_back_unseen13.SET.root / "maxpool3s2_nchw",
                        held_back_unseen13.SET.host_source, [
                            {"VEC": 4, "ITEMS_PER_THREAD": 2}]),
}


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(OTHER_GATHERS))
def test_the_other_gathers_compute_as_written(name: str, tmp_path: Path,
                                              host_flags: tuple[str, ...]) -> None:  # noqa: F811
    path, host, mixes = OTHER_GATHERS[name]
    kf = load_kernel_folder(path)
    assert "VEC" in {p.name for p in offline_template(kf).lifted.params}
    _host_check(kf, mixes, host, tmp_path / "run", host_flags)


# -- the run-time test: a statistic stored into the row itself ---------------------------------

#: float rows (the host harness's), the statistic at the row's first element's place of
#: ``stat``: where ``stat`` is ``x`` it overwrites the row's first element between the passes
ROW_STAT_IN_ROW = """
extern "C" __global__ void k2(float* y, float* stat, const float* x, int rows, int cols) {
  const int lane = threadIdx.x % 32;
  const int r = blockIdx.x * 4 + threadIdx.x / 32;
  if (r >= rows) return;
  float big = 0.0f;
  for (int c = lane; c < cols; c += 32) big = fmaxf(big, fabsf(x[r * cols + c]));
  for (int m = 16; m > 0; m >>= 1) big = fmaxf(big, __shfl_xor_sync(0xffffffffu, big, m));
  if (lane == 0) stat[r * cols] = -big;
  for (int c = lane; c < cols; c += 32) y[r * cols + c] = x[r * cols + c] / big;
}
"""


@needs_gxx
@pytest.mark.timeout(600)
@pytest.mark.parametrize("store", ["stat[r * cols]", "*(stat + r * cols)"])
@pytest.mark.parametrize("aliased", [True, False])
def test_a_statistic_stored_into_the_row_reads_the_row_again(
        aliased: bool, store: str, tmp_path: Path,
        host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """``stat`` is ``x`` (each row's statistic overwrites its first element before the write
    pass reads it: the kept row is stale there, and the run-time test sends the pass back to
    memory) or a buffer of its own (the kept row is used): as written either way; the store
    a subscript or through a pointer."""
    written = ROW_STAT_IN_ROW.replace("stat[r * cols] = ", f"{store} = ")
    lifted = lift(written.replace("k2(", "k("), ["ceil_div(rows, 4)"], ["128"])
    assert "REG_ROW" in {p.name for p in lifted.params}, lifted.notes
    template = lifted_template(lifted)
    env = {"rows": ROWS, "cols": COLS}
    target = "x" if aliased else "s"
    wrapper = ("\nstatic void k(float* y, float* x, float* s, int rows, int cols) "
               f"{{ k2(y, {target}, x, rows, cols); }}\n")
    args = [("out", ROWS * COLS), ("inout", ROWS * COLS), ("out", ROWS * COLS)]
    want = host(tmp_path, "as_written", written + wrapper, [-(-ROWS // 4)], [128],
                args, host_flags)
    for i, mix in enumerate([{"REG_ROW": 384, "VEC": 4}, {"REG_ROW": 384, "LANES": 8}]):
        config = {**template.default_config(), **mix}
        assert template.space(env).rejection(config) is None
        launch = template.launch_for(config, env)
        source = template.render(config, "fp32").source.replace(" k(", " k2(")
        got = host(tmp_path, f"config{i}", source + wrapper, launch.grid, launch.block, args,
                   host_flags)
        np.testing.assert_array_equal(got, want, err_msg=str(config))
