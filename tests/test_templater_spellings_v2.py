"""First contact with per-element, reduction, warp, scan and stencil kernels as other people
write them (issue 28, tests/spellings_v2/): each folder's kernel lifted by the offline
templater as the corpus's folders are (``offline_template``), the knobs it lifts compared
with what the family lifts for the corpus's own spelling of the same kernel, and every
checked config of the lift computing on the host (g++) what the kernel as written computes,
within the folder's tolerance (partial sums by their total, as the folder compares them).

Spellings (one folder each): a double Newton solver taking a settings struct by value in a
``do``/``while``, the array walked grid-stride in a ``while`` (corpus: kepler_solve); an odd
power series under ``#pragma unroll`` over a literal count, the index from a lambda and a
constexpr block (percell_compute); partial sums in a ``template <int NT>`` helper with a
grid-stride ``while`` and a ``do``/``while`` tree (partial_sum); partial sums of squared
differences through ``__ldg``, down shuffles, a warp's shared slot and an early ``return``
of the lanes past the first warp (sse_partials); a warp a row on a 2-D block whose sum of
squares walks a bumped pointer (warp_row); a row scan bumping both row pointers and counting
down what is left (row_cumsum); a batched 5-point smoothing with ``blockIdx.z`` the image
and an index helper (stencil5); a 7-point Jacobi step with constexpr block sizes, an
``IDX`` macro, ``__ldg(&src[..])`` and early returns (stencil3d); a row softmax, a warp a
row, the lane ``threadIdx.x & (WARP - 1)`` under ``#define WARP 32``, ``__ldg(xr + c)``
and ``__shfl_sync`` broadcasts (row_logsumexp); the logistic map iterated in a ``template
<int ITERS>`` helper under ``#pragma unroll 4`` on a flattened 2-D grid of 1-D blocks
(percell_compute).

Two lifts held configs that were not correct, both from block.lift_block: a multi-D block's
thread count was unconstrained where one dimension alone is lifted (now its product of
names and literals is at most 1024), and a flattened grid's y did not follow BLOCK_THREADS
(now every grid dimension of a linear block id times the block size follows it, or the
block size stays as written with the line).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import held_back_unseen8
import pytest
from helpers_templater import FULL_MATRIX, end_configs, needs_gxx
from test_corpus_unseen3 import (
    _assert_same,
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)
from test_templater_warp2 import SHFL_SYNC

from workbench.core.errors import TemplateError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.loop_forms import counted_whiles

HERE = Path(__file__).resolve().parent / "spellings_v2"

#: The CUDA built-ins these kernels and their lifts use that the unseen3 host prelude has no
#: form of (held-back set 8's: the up shuffle a regenerated scan takes, the fast intrinsics;
#: a broadcast's __shfl_sync).
HOST_EXTRAS = "static const int warpSize = 32;\n" + held_back_unseen8.HOST_EXTRAS + SHFL_SYNC

#: folder -> the knobs its lift holds, in order, and hand-picked mixes (over the default)
#: the all-ends configs do not reach.
LIFTS: dict[str, tuple[tuple[str, ...], list[dict[str, int]]]] = {
    "v2_jacobi3d_macro_ldg": (("BLOCK_X", "BLOCK_Y", "BLOCK_Z", "Z_ITEMS", "MIN_BLOCKS_PER_SM"),
                              [{"BLOCK_X": 16, "BLOCK_Y": 2, "BLOCK_Z": 4, "Z_ITEMS": 4},
                               {"BLOCK_X": 8, "BLOCK_Y": 8, "BLOCK_Z": 1, "Z_ITEMS": 32}]),
    "v2_blur5_batched_helper": (("BLOCK_X", "BLOCK_Y", "OUT_Y", "OUT_X", "MIN_BLOCKS_PER_SM"),
                                [{"BLOCK_X": 64, "BLOCK_Y": 2, "OUT_Y": 4, "OUT_X": 2},
                                 {"BLOCK_X": 32, "BLOCK_Y": 16, "OUT_Y": 8, "OUT_X": 1,
                                  "MIN_BLOCKS_PER_SM": 2}]),
    # the items' loop's bare #pragma unroll gains UNROLL (0 keeps it as written; a316be9)
    "v2_series_lambda_unroll": (("BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "FAST_MATH",
                                 "FAST_DIV", "MIN_BLOCKS_PER_SM"),
                                [{"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "FAST_MATH": 1}]),
    "v2_rowscan_bumped": (("BLOCK_THREADS", "ITEMS_PER_THREAD", "PAD", "MIN_BLOCKS_PER_SM"),
                          [{"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 3, "PAD": 1}]),
    # the do-while tree from NT / 2 reads as its for loop once open_loops reads the file's
    # integer macros (the template parameter NT is one after inlining)
    "v2_partials_template_do": (("BLOCK_THREADS", "GRID_BLOCKS", "VEC", "ITEMS_PER_THREAD",
                                 "FINAL", "MIN_BLOCKS_PER_SM"),
                                [{"BLOCK_THREADS": 1024, "GRID_BLOCKS": 132, "VEC": 4,
                                  "ITEMS_PER_THREAD": 2, "FINAL": 1}]),
    "v2_sqdiff_warp_partials": (("BLOCK_THREADS", "VEC", "ITEMS_PER_THREAD",
                                 "MIN_BLOCKS_PER_SM"),
                                [{"BLOCK_THREADS": 96, "VEC": 2, "ITEMS_PER_THREAD": 4}]),
    # the sum of squares' pointer while reads as its for (loop_forms._movable: `end` and
    # `ss` declared between), so the warp-row family lifts as for the corpus's warp_row;
    # its walk pointer into the const x reads through __ldg under LDG (warp_ldg)
    "v2_rownorm_warp2d": (("WARPS_PER_BLOCK", "LANES", "ILP", "LDG", "VEC", "ITEMS_PER_THREAD",
                           "MIN_BLOCKS_PER_SM"),
                          [{"WARPS_PER_BLOCK": 2, "LANES": 8, "ILP": 2, "LDG": 1, "VEC": 4,
                            "ITEMS_PER_THREAD": 2},
                           {"WARPS_PER_BLOCK": 32, "LANES": 4, "ILP": 4, "VEC": 2,
                            "ITEMS_PER_THREAD": 4, "MIN_BLOCKS_PER_SM": 2}]),
    "v2_logistic_template_iters": (("BLOCK_THREADS", "UNROLL", "MIN_BLOCKS_PER_SM"),
                                   [{"BLOCK_THREADS": 128}]),
    # __ldg(xr + c) read as the row's element by REG_ROW too (session 35): the row kept
    # in registers for the exp-sum and write passes (a cache of 1024 holds 1000)
    "v2_rowsoftmax_warp_macro": (("ROWS_PER_BLOCK", "LANES", "VEC", "ITEMS_PER_THREAD",
                                  "REG_ROW", "MIN_BLOCKS_PER_SM"),
                                 [{"ROWS_PER_BLOCK": 2, "LANES": 8, "VEC": 4,
                                   "ITEMS_PER_THREAD": 2},
                                  {"ROWS_PER_BLOCK": 2, "LANES": 32, "VEC": 4,
                                   "REG_ROW": 1024}]),
    "v2_kepler_struct_do": (("BLOCK_THREADS", "ITEMS_PER_THREAD", "MIN_BLOCKS_PER_SM"),
                            [{"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2}]),
}



def _folder(name: str) -> KernelFolder:
    return load_kernel_folder(HERE / name)


def _checked(name: str, template: Any, env: dict[str, Any]) -> list[dict[str, Any]]:
    """The default, the mixes, then the first and last all-ends configs (every one under
    WORKBENCH_FULL_MATRIX=1), each once and each inside the space."""
    space = template.space(env)
    default = dict(template.default_config())
    ends = end_configs(template, env)
    assert ends, "no all-ends config is valid"
    mixes = [{**default, **m} for m in LIFTS[name][1]]
    out: list[dict[str, Any]] = []
    for config in [default, *mixes, *(ends if FULL_MATRIX else [ends[0], ends[-1]])]:
        assert space.rejection(config) is None, (config, space.rejection(config))
        if config not in out:
            out.append(config)
    return out


def _threads(template: Any, config: dict[str, Any], env: dict[str, Any]) -> int:
    x, y, z = template.launch_for(config, env).block
    return int(x) * int(y) * int(z)


@pytest.mark.parametrize("name", sorted(LIFTS))
def test_the_lift_holds_the_family_knobs(name: str) -> None:
    result = offline_template(_folder(name))
    assert tuple(p.name for p in result.lifted.params) == LIFTS[name][0], result.notes


@pytest.mark.parametrize("name", sorted(LIFTS))
def test_no_config_launches_more_than_1024_threads(name: str) -> None:
    kf = _folder(name)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    over = [c for c in template.space(env) if _threads(template, dict(c), env) > 1024]
    assert not over, over[:3]


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(LIFTS))
def test_every_checked_config_computes_what_the_kernel_as_written_computes(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _folder(name)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = _checked(name, template, env)
    inputs = _inputs(kf)
    want = _run(kf, HOST_EXTRAS + kf.baseline.render({}, "fp32").source,
                kf.baseline.launch_for({}, env), inputs, tmp_path / "plain", host_flags)
    runs = [(HOST_EXTRAS + template.render(c, "fp32").source, template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        _assert_same(kf, got, want, f"{name} at {config}")


def _respelled(tmp_path: Path, name: str, old: str, new: str,
               grid: str | None = None) -> KernelFolder:
    """``name``'s folder copied under ``tmp_path`` with ``old`` in its kernel (once) as
    ``new`` and, where given, ``grid`` as its launch's grid."""
    folder = shutil.copytree(HERE / name, tmp_path / name)
    for file, was, now in ((folder / f"{name}.cu", old, new),
                           (folder / "kernel.toml", *_grid_line(folder, grid))):
        source = file.read_text()
        assert source.count(was) == 1, was
        file.write_text(source.replace(was, now))
    return load_kernel_folder(folder)


def _grid_line(folder: Path, grid: str | None) -> tuple[str, str]:
    """(the toml's grid line, its replacement): itself where ``grid`` is None."""
    line = next(x for x in (folder / "kernel.toml").read_text().splitlines()
                if x.startswith("grid = "))
    return line, line if grid is None else f"grid = {grid}"


@pytest.mark.parametrize(("old", "new"), [
    # bumped before the chunk's store reads it: the store would write the next chunk
    ("    if ((int)t < left) yr[t] = run + tile[t];\n",
     "    yr += 0;\n    if ((int)t < left) yr[t] = run + tile[t];\n"),
    # a bump by a row length: not a constant step
    ("    yr += kChunk;\n", "    yr += cols;\n"),
], ids=["bump-before-read", "bump-not-constant"])
def test_a_row_pointer_bumped_other_than_at_the_chunk_end_stays_as_written(
        old: str, new: str, tmp_path: Path) -> None:
    # since block_slots (6225b47) the block size stays as written too (`tile[kChunk - 1]`
    # offsets the slots by their count), so nothing may lift at all: the refusal then
    # carries the same notes
    try:
        lifted = offline_template(_respelled(tmp_path, "v2_rowscan_bumped", old, new)).lifted
        names, notes = {p.name for p in lifted.params}, list(lifted.notes)
    except TemplateError as refused:
        names, notes = set(), [str(n) for n in refused.details["findings"]]
    assert "ITEMS_PER_THREAD" not in names
    # the bumps read from the loop's end stop at the first that is not one: xr's is after it
    assert any(n.startswith(("ROW_SCAN: not applied: `yr[t]` reads `yr`, which changes",
                             "ROW_SCAN: not applied: `xr[t]` reads `xr`, which changes"))
               and "(line " in n for n in notes), notes


def test_a_row_pointer_that_moves_with_the_row_is_no_batch_alias(tmp_path: Path) -> None:
    """``src`` set from the point's row differs between a thread's outputs: the register
    window (keyed by offsets from the point) would hand one row's values to the next, so
    the rows lift does not read through it (the batch's Z_ITEMS still applies)."""
    kf = _respelled(tmp_path, "v2_blur5_batched_helper",
                    "const float* src = img + (size_t)blockIdx.z * w * h;",
                    "const float* src = img + (size_t)blockIdx.z * w * h + 0 * y;")
    knobs = {p.name for p in offline_template(kf).lifted.params}
    assert "OUT_Y" not in knobs and "Z_ITEMS" in knobs, knobs


def test_a_mask_that_is_not_31_is_no_lane(tmp_path: Path) -> None:
    """``threadIdx.x & (WARP - 2)`` folds to 30: not the lane, so nothing lifts and the
    refusal names the read."""
    kf = _respelled(tmp_path, "v2_rowsoftmax_warp_macro", "threadIdx.x & (WARP - 1)",
                    "threadIdx.x & (WARP - 2)")
    with pytest.raises(TemplateError, match=r"LANES: not applied: threadIdx.x is read in "
                                            r"`threadIdx.x & \(WARP - 2\)`"):
        offline_template(kf)


def test_a_plane_address_taken_other_than_by_ldg_stays_refused(tmp_path: Path) -> None:
    """``*(&src[..])`` reads the plane too, but only ``__ldg(&src[..])`` is read as the load:
    the z-march still refuses the address with its line."""
    kf = _respelled(tmp_path, "v2_jacobi3d_macro_ldg", "__ldg(&src[IDX(i, j, k - 1)])",
                    "*(&src[IDX(i, j, k - 1)])")
    lifted = offline_template(kf).lifted
    assert "Z_ITEMS" not in {p.name for p in lifted.params}
    assert any(n.startswith("Z_ITEMS: not applied: `&src[") and "takes the address of a "
               "plane read (line 19)" in n for n in lifted.notes), lifted.notes


def test_a_1d_block_laid_out_as_rows_of_points_is_refused_with_its_line() -> None:
    """v2_lap9_flat_tile's 256 threads are 32 x 8 points (``threadIdx.x % TX``, ``/ TX``):
    the rows lift takes a 2-D block, so nothing lifts, and the refusal names the split."""
    with pytest.raises(TemplateError, match=r"OUT_Y: not applied: the 1-D block of 256 "
                       r"threads is laid out as rows of points by `threadIdx.x / TX`.*\(line 11\)"):
        offline_template(_folder("v2_lap9_flat_tile"))


def test_items_name_the_index_they_miss_where_the_loop_is_in_a_helper() -> None:
    """The logistic map's loop is in ``logistic<64>``; the flattened 2-D grid's point is no
    ``blockIdx.x * B + threadIdx.x``: ITEMS_PER_THREAD says so (it was silent)."""
    lifted = offline_template(_folder("v2_logistic_template_iters")).lifted
    assert "ITEMS_PER_THREAD" not in {p.name for p in lifted.params}
    assert any(n.startswith("ITEMS_PER_THREAD: not applied: items with independent state: no "
                            "top-level `T i = blockIdx.x * B + threadIdx.x`") and
               n.endswith("(line 8)") for n in lifted.notes), lifted.notes


#: The logistic kernel's flattened point, as written.
FLAT = "const int i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x"
#: Other spellings of a grid flattened into one index, each with its launch's grid: every
#: grid dimension of the linear block id times the block size follows BLOCK_THREADS (a
#: literal count of blocks along x or y stays).
FLATTENINGS = {
    "x-first": ("const int i = (blockIdx.x + gridDim.x * blockIdx.y) * blockDim.x", None),
    "distributed": ("const int i = blockIdx.x * blockDim.x + gridDim.x * blockDim.x * "
                    "blockIdx.y", None),
    "size-first": ("const int i = blockDim.x * (64 * blockIdx.y + blockIdx.x)", None),
    "3-d": ("const int i = ((blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x) * "
            "blockDim.x", '["64", "2", "ceil_div(n, 64 * 2 * 256)"]'),
    "y-first": ("const int i = (blockIdx.x * gridDim.y + blockIdx.y) * blockDim.x",
                '["ceil_div(n, 64 * 256)", "64"]'),
    # the linear block id and the block size in locals, read through their values
    "locals": ("const unsigned blk = blockIdx.y * gridDim.x + blockIdx.x;\n"
               "  const unsigned bs = blockDim.x;\n  const int i = blk * bs", None),
    # y's rule alone holds the block (x's 64 stays): more blocks than needed, every point
    "y-over-block": (FLAT, '["64", "ceil_div(n, 256)"]'),
}


@needs_gxx
@pytest.mark.timeout(600)
@pytest.mark.parametrize("spelling", sorted(FLATTENINGS))
def test_a_flattened_grid_follows_the_block_size(
        spelling: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    new, grid = FLATTENINGS[spelling]
    kf = _respelled(tmp_path, "v2_logistic_template_iters", FLAT, new, grid)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = [{**dict(template.default_config()), "BLOCK_THREADS": b} for b in (32, 128, 1024)]
    inputs = _inputs(kf)
    want = _run(kf, HOST_EXTRAS + kf.baseline.render({}, "fp32").source,
                kf.baseline.launch_for({}, env), inputs, tmp_path / "plain", host_flags)
    runs = [(HOST_EXTRAS + template.render(c, "fp32").source, template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        _assert_same(kf, got, want, f"{spelling} at {config}")


@pytest.mark.parametrize("grid", ['["64", "ceil_div(n, 16384)"]', '["64", "2"]'],
                         ids=["folded-divisor", "fixed-grid"])
def test_a_flattened_grid_that_would_not_follow_keeps_the_block_size(
        grid: str, tmp_path: Path) -> None:
    """A y rule dividing by no factor of 256 (folded to 16384) and a grid of fixed counts
    (none follows; at 32 threads 64 x 2 blocks would miss points) are refused with the
    line."""
    kf = _respelled(tmp_path, "v2_logistic_template_iters", FLAT, FLAT, grid)
    lifted = offline_template(kf).lifted
    assert "BLOCK_THREADS" not in {p.name for p in lifted.params}
    # the block lift and the named constants' launch block (a lone 1-D block of a kernel
    # reading blockDim) each refuse with the line
    for start in ("BLOCK_THREADS: not applied: `(blockIdx.y * gridDim.x + blockIdx.x) * "
                  "blockDim.x + threadI` offsets blocks by the block's x size",
                  "named constants: not applied: `(blockIdx.y * gridDim.x + blockIdx.x) * "
                  "blockDim.x` offsets blocks by the block size"):
        assert any(n.startswith(start) and n.endswith("(line 14)") for n in lifted.notes), \
            lifted.notes


def test_a_pointer_walk_with_declarations_between_reads_as_its_for() -> None:
    """v2_rownorm_warp2d's ``const float* src = ..; const float* end = ..; float ss = 0.0f;
    while (src < end) {..; src += 32;}``: src (the name the body steps; end is declared too)
    moves into the for past two declarations that write nothing, every line kept."""
    source = (HERE / "v2_rownorm_warp2d" / "v2_rownorm_warp2d.cu").read_text()
    done = counted_whiles(InlinedSource(source, "k.cu"), "v2_rownorm_warp2d").text
    assert "for (const float* src = x + (size_t)row * cols + threadIdx.x; src < end; " \
        "src += 32) {" in done, done
    assert done.count("\n") == source.count("\n")
    # a store between may change what the value reads (y[0]): left as written
    stored = source.replace("float ss = 0.0f;", "float ss = 0.0f; y[0] = ss;").replace(
        "cols + threadIdx.x;", "cols + threadIdx.x + (int)y[0];")
    assert "while (src < end)" in \
        counted_whiles(InlinedSource(stored, "k.cu"), "v2_rownorm_warp2d").text
