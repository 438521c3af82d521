"""Kernels with no bounds test (issue 28): each touches every element of the blocks it
launches, so as written it is right only where its blocks tile the size exactly (its author
launches n a multiple of 256). A family that resizes the work a block covers (the block size,
items a thread, rows a block, 2-D items) must keep the size a multiple of the config's share,
or a config reads and writes past the arrays at a shape where the kernel as written is right
(before workbench/templater/regtile_shapes.py's ``constrain_whole_blocks``: BLOCK_THREADS
512 at n = 768 wrote past y).

Spellings (tests/spellings_g2/): a 1-D scale with the block's 256 written into the index
(BLOCK_THREADS, ITEMS_PER_THREAD); the same over rows x cols flattened (a grid rule over a
product of sizes); a 2-D 5-point Laplacian of a padded grid through an index helper
(BLOCK_X, BLOCK_Y, ITEMS_X, ITEMS_Y); the same through a shared 18 x 18 apron tile (the
apron family's BLOCK_X, BLOCK_Y, OUT_X, OUT_Y, PAD, LOAD_FLAT); a 3 x 3 ``__constant__``
filter over a padded grid (BLOCK_X, BLOCK_Y, ITEMS_X, ITEMS_Y); a warp a row, four rows a
block, a shuffle sum (ITEMS_X over rows); a warp's row maximum, eight rows a block of 256 (the
warp family's WARPS_PER_BLOCK and LANES: WARPS_PER_BLOCK * (32 // LANES) rows a block).
Each: the constraint and its note, a config past the size pruned with the constraint's
text, the space empty (and saying why) at a shape the kernel as written is wrong at, the
guarded twin's space without it, and on the host (g++, the cooperative block) the default
and every valid all-ends config printing what the kernel as written prints.

Refused with the line, guarded or not (workbench/templater/block_outputs.py), by the block
lift and the named constants' alike: a shared-tree sum to one partial a block
(``partial[blockIdx.x] = s[0];``, a ``#define`` block size): another block size writes another
number of partials (before, BLOCK_THREADS 32 at n = 768 wrote 24 partials into the 3 the
folder sizes: the host program aborted); four elements a thread from ``(blockIdx.x *
blockDim.x + threadIdx.x) * 4`` under ``ceil_div(n, 512)`` for 128 threads: the grid did not
follow the block (before, BLOCK_THREADS 32 .. 1024 with that grid: a quarter of y unwritten
at 32, reads past x at 256); the same kernel, guarded or not, under a grid that keeps its
count (``n // 256``, ``3``). The long spelling ``(n + 255) // 256`` tiles n as ``ceil_div``
does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest
from helpers_templater import end_configs, host_sample
from test_corpus_unseen3 import host_flags  # noqa: F401  (the session fixture)
from test_templater_const_via import assert_prints_as_written, write_folder

from workbench.core.errors import EmptySpaceError, TemplateError
from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template
from workbench.templater.records import TemplaterResult

HERE = Path(__file__).resolve().parent / "spellings_g2"


class Unguarded(NamedTuple):
    grid: list[str]
    block: list[str]
    args: list[tuple[str, str, str, Any]]
    whole: dict[str, int]  # a shape whose sizes are multiples of the written tile only
    #: a shape no config tiles (the kernel as written is wrong there); None where one row a
    #: block is in the space (it tiles every size)
    ragged: dict[str, int] | None
    constraints: set[str]
    wide: dict[str, int]  # a config whose share does not divide ``whole``
    guard: tuple[str, str]  # (text, guarded text): the twin that bounds its accesses
    more_guards: tuple[tuple[str, str], ...] = ()  # the twin's other (text, guarded text)
    constants: tuple[tuple[str, list[int]], ...] = ()  # the __constant__ arrays


SPELLINGS: dict[str, Unguarded] = {
    "scale_1d_fixed_block": Unguarded(
        ["ceil_div(n, 256)"], ["256"],
        [("y", "f32", "out", ["n"]), ("x", "f32", "in", ["n"]), ("n", "i32", "scalar", "n")],
        {"n": 768}, {"n": 700}, {"(n) % (BLOCK_THREADS * ITEMS_PER_THREAD) == 0"},
        {"BLOCK_THREADS": 512},
        ("  y[i] = 2.0f * x[i];", "  if (i < n) y[i] = 2.0f * x[i];")),
    "bias_flat_rows_cols": Unguarded(
        ["ceil_div(rows * cols, 256)"], ["256"],
        [("y", "f32", "out", ["rows", "cols"]), ("x", "f32", "in", ["rows", "cols"]),
         ("b", "f32", "in", ["cols"]), ("rows", "i32", "scalar", "rows"),
         ("cols", "i32", "scalar", "cols")],
        {"rows": 6, "cols": 128}, {"rows": 5, "cols": 30},
        {"(rows * cols) % (BLOCK_THREADS * ITEMS_PER_THREAD) == 0"}, {"BLOCK_THREADS": 512},
        ("  y[idx] =", "  if (idx < rows * cols) y[idx] =")),
    "conv3_const_padded": Unguarded(
        ["ceil_div(w, 16)", "ceil_div(h, 16)"], ["16", "16"],
        [("out", "f32", "out", ["h", "w"]), ("in", "f32", "in", ["h + 2", "w + 2"]),
         ("h", "i32", "scalar", "h"), ("w", "i32", "scalar", "w")],
        {"h": 48, "w": 80}, {"h": 48, "w": 78},
        {"(w) % (BLOCK_X * ITEMS_X) == 0", "(h) % (BLOCK_Y * ITEMS_Y) == 0"},
        {"BLOCK_X": 32, "BLOCK_Y": 32},
        ("  const int p = w + 2;", "  if (x >= w || y >= h) return;\n  const int p = w + 2;"),
        constants=(("wt", [9]),)),
    "warp_row_max": Unguarded(
        ["ceil_div(rows, 8)"], ["256"],
        [("out", "f32", "out", ["rows"]), ("in", "f32", "in", ["rows", "cols"]),
         ("rows", "i32", "scalar", "rows"), ("cols", "i32", "scalar", "cols")],
        {"rows": 16, "cols": 70}, None, {"(rows) % (WARPS_PER_BLOCK * (32 // LANES)) == 0"},
        {"WARPS_PER_BLOCK": 32},
        ("  float s = -3.0e38f;", "  if (row >= rows) return;\n  float s = -3.0e38f;")),
    "laplace5_apron_tile": Unguarded(
        ["ceil_div(w, 16)", "ceil_div(h, 16)"], ["16", "16"],
        [("out", "f32", "out", ["h", "w"]), ("in", "f32", "in", ["h + 2", "w + 2"]),
         ("h", "i32", "scalar", "h"), ("w", "i32", "scalar", "w")],
        {"h": 48, "w": 80}, {"h": 48, "w": 78},
        {"(w) % (BLOCK_X * OUT_X) == 0", "(h) % (BLOCK_Y * OUT_Y) == 0"},
        {"BLOCK_X": 32, "BLOCK_Y": 8},
        ("  out[y * w + x] =", "  if (x < w && y < h) out[y * w + x] ="),
        more_guards=(("      tile[j][i] = in[", "      if (blockIdx.y * 16 + j < h + 2 && "
                      "blockIdx.x * 16 + i < w + 2) tile[j][i] = in["),)),
    "laplace5_padded_2d": Unguarded(
        ["ceil_div(w, 16)", "ceil_div(h, 16)"], ["16", "16"],
        [("out", "f32", "out", ["h", "w"]), ("in", "f32", "in", ["h + 2", "w + 2"]),
         ("h", "i32", "scalar", "h"), ("w", "i32", "scalar", "w")],
        {"h": 48, "w": 80}, {"h": 47, "w": 80},
        {"(w) % (BLOCK_X * ITEMS_X) == 0", "(h) % (BLOCK_Y * ITEMS_Y) == 0"},
        {"BLOCK_X": 32, "BLOCK_Y": 8},
        ("  const int p = w + 2;", "  if (r >= h || c >= w) return;\n  const int p = w + 2;")),
    # the warp family's lift (a warp a row, its lanes shuffling: 2397d8b): one warp a block
    # and one row a warp is in the space, so every size is tiled by some config
    "rows_per_block_warp": Unguarded(
        ["ceil_div(rows, 4)"], ["32", "4"],
        [("out", "f32", "out", ["rows", 32]), ("in", "f32", "in", ["rows", 32]),
         ("rows", "i32", "scalar", "rows")],
        {"rows": 12}, None, {"(rows) % (WARPS_PER_BLOCK * ROWS) == 0"},
        {"WARPS_PER_BLOCK": 8, "ROWS": 4},
        ("  float v = in[row * 32 + threadIdx.x];",
         "  if (row >= rows) return;\n  float v = in[row * 32 + threadIdx.x];")),
}


#: spellings whose block lift is refused, guarded or not: (folder, the refusal's words)
REFUSED: dict[str, tuple[Unguarded, str]] = {
    "partial_sums_tree": (Unguarded(
        ["ceil_div(n, 256)"], ["256"],
        [("partial", "f32", "out", ["ceil_div(n, 256)"]), ("x", "f32", "in", ["n"]),
         ("n", "i32", "scalar", "n")],
        {"n": 768}, {"n": 700}, set(), {},
        ("s[t] = x[blockIdx.x * TPB + t];",
         "s[t] = blockIdx.x * TPB + t < n ? x[blockIdx.x * TPB + t] : 0.0f;")),
        "BLOCK_THREADS: not applied: `partial[blockIdx.x] = s[0];` stores one element a block "
        "along x and the grid's x rule divides by 256: the number of those elements would "
        "follow the block size, so it stays as written (line 13)"),
    "saxpy_items_blockdim": (Unguarded(
        ["ceil_div(n, 512)"], ["128"],
        [("y", "f32", "inout", ["n"]), ("x", "f32", "in", ["n"]),
         ("a", "f32", "scalar", "1.5"), ("n", "i32", "scalar", "n")],
        {"n": 1536}, {"n": 1500}, set(), {},
        ("    y[base + j] = a", "    if (base + j < n) y[base + j] = a")),
        "BLOCK_THREADS: not applied: `blockIdx.x * blockDim.x + threadIdx.x` offsets blocks by "
        "the block's x size and the grid's x rule `ceil_div(n, 512)` does not divide by 128: "
        "the grid would stay while each block's share follows the block size, so it stays as written "
        "(line 5)"),
}


def _folder(name: str, root: Path, shape: dict[str, int], guarded: bool = False
            ) -> KernelFolder:
    s = REFUSED[name][0] if name in REFUSED else SPELLINGS[name]
    source = (HERE / f"{name}.cu").read_text()
    for text, bounded in (s.guard, *s.more_guards) if guarded else ():
        assert text in source
        source = source.replace(text, bounded)
    tag = "_".join(f"{k}{v}" for k, v in shape.items())
    return write_folder(root / f"{name}_{tag}{'_guarded' if guarded else ''}", source,
                        s.grid, s.block, s.args, shape, list(s.constants))


def _lift(name: str, root: Path, shape: dict[str, int], guarded: bool = False
          ) -> tuple[KernelFolder, TemplaterResult]:
    kf = _folder(name, root, shape, guarded)
    return kf, offline_template(kf)


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_space_keeps_each_unbounded_size_a_multiple_of_the_blocks_share(
        name: str, tmp_path: Path) -> None:
    s = SPELLINGS[name]
    kf, result = _lift(name, tmp_path, s.whole)
    assert s.constraints <= set(result.lifted.constraints), result.notes
    for c in s.constraints:
        size = c[1:c.index(")")]
        assert any("no comparison bounds the extent by " in n and
                   "the kernel as written reads and writes whole tiles only" in n and
                   f"so the space keeps {size} a multiple of " in n
                   for n in result.notes), result.notes
    template = result.template
    env = kf.env(kf.check_shape, "fp32")
    assert template.space(env).rejection(template.default_config()) is None
    wide = {**template.default_config(), **s.wide}
    assert template.space(env).rejection(wide) in s.constraints


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_a_shape_no_config_tiles_is_an_empty_space_that_names_the_constraint(
        name: str, tmp_path: Path) -> None:
    """Where the kernel as written reads past its arrays too (a size no multiple of its own
    tile), no config is left: the search's require_nonempty says which constraint emptied it."""
    s = SPELLINGS[name]
    if s.ragged is None:
        pytest.skip("a config of one row a block tiles every size")
    kf, result = _lift(name, tmp_path, s.ragged)
    with pytest.raises(EmptySpaceError) as raised:
        result.template.space(kf.env(kf.check_shape, "fp32")).require_nonempty()
    assert raised.value.binding in s.constraints
    assert f"`{raised.value.binding}`" in str(raised.value)


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_guarded_twin_keeps_its_space(name: str, tmp_path: Path) -> None:
    s = SPELLINGS[name]
    _kf, result = _lift(name, tmp_path, s.whole, guarded=True)
    assert not s.constraints & set(result.lifted.constraints), result.lifted.constraints
    assert not any("whole tiles only" in n for n in result.notes)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_checked_config_prints_what_the_kernel_as_written_prints(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    s = SPELLINGS[name]
    kf, result = _lift(name, tmp_path, s.whole)
    template = result.template
    env = kf.env(kf.check_shape, "fp32")
    ends = end_configs(template, env)
    configs = [dict(template.default_config()), *host_sample(ends)]
    assert_prints_as_written(kf, result, configs, tmp_path / "host")


@pytest.mark.parametrize("guarded", [False, True])
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_block_the_grid_would_not_follow_is_refused_with_its_line(
        name: str, guarded: bool, tmp_path: Path) -> None:
    """Neither the block lift nor the named constants' lift resizes it (nothing else lifts)."""
    spelling, refusal = REFUSED[name]
    kf = _folder(name, tmp_path, spelling.whole, guarded)
    with pytest.raises(TemplateError) as raised:
        offline_template(kf)
    assert refusal in str(raised.value)
    if "blockDim" in (HERE / f"{name}.cu").read_text():  # else named never resizes it
        assert "named constants: not applied: `blockIdx.x * blockDim.x` offsets blocks by " \
            "the block's x size" in str(raised.value)


def _scale_with_grid(rule: str, guarded: bool, root: Path) -> KernelFolder:
    s = SPELLINGS["scale_1d_fixed_block"]
    source = (HERE / "scale_1d_fixed_block.cu").read_text()
    if guarded:
        source = source.replace(s.guard[0], s.guard[1])
    return write_folder(root / f"scale_{'g' if guarded else 'u'}", source, [rule], s.block,
                        s.args, s.whole, [])


@pytest.mark.parametrize("guarded", [False, True])
def test_the_long_spelling_of_ceil_div_tiles_the_size_too(guarded: bool, tmp_path: Path) -> None:
    """``(n + 255) // 256`` is ``ceil_div(n, 256)``: the same constraint where unguarded."""
    result = offline_template(_scale_with_grid("(n + 255) // 256", guarded, tmp_path))
    whole = "(n) % (BLOCK_THREADS * ITEMS_PER_THREAD) == 0"
    assert (whole in result.lifted.constraints) is not guarded, result.lifted.constraints


@pytest.mark.parametrize("guarded", [False, True])
@pytest.mark.parametrize("rule", ["n // 256", "3"])
def test_a_grid_that_keeps_its_count_keeps_the_block(rule: str, guarded: bool,
                                                     tmp_path: Path) -> None:
    """A floor division or a fixed count does not divide by the block size: resizing the
    block would leave the grid as it is (before, BLOCK_THREADS 128 covered half of y)."""
    with pytest.raises(TemplateError) as raised:
        offline_template(_scale_with_grid(rule, guarded, tmp_path))
    assert "BLOCK_THREADS: not applied: `blockIdx.x * 256 + threadIdx.x` offsets blocks by " \
        f"the block's x size and the grid's x rule `{rule}` does not divide by 256: the grid " \
        "would stay while each block's share follows the block size, so it stays as " \
        "written (line 4)" in str(raised.value)


@pytest.mark.timeout(600)
def test_rows_a_block_over_a_grid_written_as_a_count_guard_the_rows_they_add(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """One block a row (grid ``rows``) needs no row test as written; ROWS_PER_BLOCK tiles the
    rows and bounds them itself (its per-row flag), at rows = 5, no multiple of 2, 4 or 8.
    Before, the flag of a kernel with no guard was declared inside the first phase's loop,
    after its first use: no config compiled (g++: 'wb_live' was not declared)."""
    kf = write_folder(tmp_path / "reverse", (HERE / "reverse_rows_block_per_row.cu").read_text(),
                      ["rows"], ["256"], [("out", "f32", "out", ["rows", 512]),
                                          ("in", "f32", "in", ["rows", 512]),
                                          ("rows", "i32", "scalar", "rows")], {"rows": 5}, [])
    result = offline_template(kf)
    assert {"BLOCK_THREADS", "ROWS_PER_BLOCK"} <= {p.name for p in result.lifted.params}
    assert not any(" % " in c for c in result.lifted.constraints), result.lifted.constraints
    template = result.template
    ends = end_configs(template, kf.env(kf.check_shape, "fp32"))
    assert any(c["ROWS_PER_BLOCK"] == 8 for c in ends)
    assert_prints_as_written(kf, result, [dict(template.default_config()), *host_sample(ends)],
                             tmp_path / "host")


@pytest.mark.parametrize(("guard", "whole"), [
    ("  if (i < LIMIT) y[i] = 2.0f * x[i];", False),  # the size by another name: guarded
    ("  if (LIMIT > i) y[i] = 2.0f * x[i];", False),
    ("  if (i > LIMIT - 768) y[i] = 2.0f * x[i];", True),  # a bound from below guards nothing
    ("  if (threadIdx.x < LIMIT) y[i] = 2.0f * x[i];", True),  # no block index: no place
])
def test_a_place_bounded_from_above_by_any_name_is_guarded(guard: str, whole: bool,
                                                          tmp_path: Path) -> None:
    """A kernel that bounds its place by a macro (``gx < WIDTH``, the grid covering ``w``)
    guards its points: a block past the extent writes nothing, so the space keeps configs
    that do not tile n (before, tests/test_templater_stencil2d_rows.py's
    heat_macros_zero_pad_clamped_row lost every config at w = 45). A bound from below, or a
    bound on the thread's index within its block, bounds no place: the constraint stays."""
    s = SPELLINGS["scale_1d_fixed_block"]
    source = "#define LIMIT 768\n" + (HERE / "scale_1d_fixed_block.cu").read_text()
    source = source.replace("  y[i] = 2.0f * x[i];", guard)
    kf = write_folder(tmp_path / "k", source, s.grid, s.block, s.args, s.whole, [])
    constraints = set(offline_template(kf).lifted.constraints)
    assert bool(s.constraints & constraints) is whole, constraints
