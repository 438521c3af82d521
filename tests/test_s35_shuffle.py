"""Session 35: the work unit of a pixel shuffle (corpus_compute_unseen22/pixel_shuffle_r2).

On the H200 the templater's tuned pick reached 73 % of a copy against the expert's 92 %
(0.79x). The vector family already wrote VEC adjacent output columns an item (the expert's
JV 2 float2 store is VEC 2, JV 2 x XV 2 is VEC 4), ITEMS_PER_THREAD items ``BLOCK * VEC``
apart; the expert's pick (JV 2, XV 2, IV 2, 256 threads, 2 units a thread) also covers both
output rows of an input row in one unit. ITEM_ROWS (workbench/templater/vector_unit_rows.py)
shapes a one-element region's item over (column, row) of the row width its index is split by
(``idx % E``): VEC columns of ITEM_ROWS consecutive rows, adjacent threads on adjacent
columns. Constraints keep E a multiple of VEC and the bound a multiple of E * ITEM_ROWS
(every element covered once); a region with no ``% E``, with two widths, or with a width
the item's first line cannot name is refused with its line.

Respellings (tests/spellings_s35_shuffle/): an NCHW pixel shuffle with macros and size_t
locals (ps_r_macro_sizet) and an NHWC depth-to-space with an early return, a helper and the
channel fastest (d2s_nhwc_exit: its row is one pixel's C channels, so an item is VEC
channels of ITEM_ROWS adjacent output pixels). Session 34's depth_to_space2 and
shuffle_up2_bits (sizes by ``W << 1``: a shift by a literal now reads as a size) and round
31b's grid-stride and unsigned-helper spellings lift it too.

Host (g++): each bit for bit against the kernel as written at the default, the expert-like
mix, the ends of ITEM_ROWS (with VEC 1, 2 and 4 where the extent allows) and the all-ends
configs' first and last, at the check shape and at an extent whose row is a multiple of 4.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import held_back_unseen22
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

SPELLINGS = Path(__file__).resolve().parent / "spellings_s35_shuffle"
S34 = Path(__file__).resolve().parent / "spellings_s34_warp"
R31B = Path(__file__).resolve().parent / "spellings_r31b"
CORPUS = held_back_unseen22.SET.root / "pixel_shuffle_r2"
KNOBS = frozenset({"BLOCK_THREADS", "VEC", "ITEMS_PER_THREAD", "ITEM_ROWS",
                   "MIN_BLOCKS_PER_SM"})

NCHW = {"w": 8, "h": 6}  # rows of 16, planes of 12 rows
#: folder -> (path: a folder, or a round-31b spelling of the corpus kernel's, the row width
#: as the note names it, the check shape's sizes that make the row a multiple of 4 and the
#: row's next extent a multiple of 4 rows)
FOLDERS: dict[str, tuple[Path, str, dict[str, int]]] = {
    "pixel_shuffle_r2": (CORPUS, "((W) * PS_R)", NCHW),
    "ps_r_macro_sizet": (SPELLINGS / "ps_r_macro_sizet", "ow", {"w": 6, "h": 4}),
    # rows of 8 channels, 8 pixels a row of the image
    "d2s_nhwc_exit": (SPELLINGS / "d2s_nhwc_exit", "C", {"c": 8, "w": 4}),
    "depth_to_space2": (S34 / "depth_to_space2", "(size_t)(W * kUp)", NCHW),
    "shuffle_up2_bits": (S34 / "shuffle_up2_bits", "ow", NCHW),
    # a grid-stride loop run once a thread (GRID_STRIDE_ONCE), unsigned indices and a helper
    "pixel_shuffle_r2_gridstride": (R31B / "pixel_shuffle_r2_gridstride.cu", "ow", NCHW),
    "pixel_shuffle_r2_helper_unsigned": (R31B / "pixel_shuffle_r2_helper_unsigned.cu",
                                         "(R * W)", NCHW),
}
#: the expert's pick (JV 2 x XV 2 is VEC 4; IV 2; 2 units a thread of 256), a float2 mix,
#: ITEM_ROWS at its end with each VEC, an odd block
MIXES: list[dict[str, int]] = [
    {"VEC": 4, "ITEM_ROWS": 2, "ITEMS_PER_THREAD": 2},
    {"BLOCK_THREADS": 64, "VEC": 2, "ITEM_ROWS": 2, "ITEMS_PER_THREAD": 4},
    {"BLOCK_THREADS": 96, "VEC": 1, "ITEM_ROWS": 2, "ITEMS_PER_THREAD": 2},
    {"BLOCK_THREADS": 96, "VEC": 1, "ITEM_ROWS": 4, "ITEMS_PER_THREAD": 1},
    {"BLOCK_THREADS": 128, "VEC": 2, "ITEM_ROWS": 4, "ITEMS_PER_THREAD": 8},
    {"BLOCK_THREADS": 32, "VEC": 4, "ITEM_ROWS": 4, "ITEMS_PER_THREAD": 1,
     "MIN_BLOCKS_PER_SM": 4},
]


def _lifted(path: Path) -> Any:
    return offline_template(load_kernel_folder(path)).lifted


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_the_shuffle_lifts_item_rows(name: str, tmp_path: Path) -> None:
    width = FOLDERS[name][1]
    lifted = offline_template(_folder(name, tmp_path, None)).lifted
    assert {p.name for p in lifted.params} == KNOBS, lifted.notes
    note = next(n for n in lifted.notes if n.startswith("ITEM_ROWS: applied"))
    assert f"VEC columns by ITEM_ROWS rows of its row {width} (line " in note, note
    assert lifted.grid[0].endswith("BLOCK_THREADS * VEC * ITEMS_PER_THREAD * ITEM_ROWS)")
    assert any(c.startswith("ITEM_ROWS == 1 or ") and c.endswith(" % VEC == 0")
               for c in lifted.constraints), lifted.constraints
    assert "wb_unit_row<VEC, ITEM_ROWS>(" in lifted.source
    if name == "pixel_shuffle_r2":  # one test a unit, its rows' quotients from its first's
        assert "    if (wb_first < total) {  // every row of the unit, or none" in lifted.source
        assert "int oy = wb_unit_mod(wb_at / (((W) * PS_R)), wb_unit_carry(wb_at, wb_v, " \
            "(((W) * PS_R))), (((H) * PS_R)));" in lifted.source


def test_the_space_keeps_the_rows_whole() -> None:
    """pixel_shuffle_r2 at its check shape (rows of 22, planes of 26 rows): float4 vectors
    would cross a row, and a unit of four rows would straddle two planes (its rows would
    not share ``oy / 2``), so ITEM_ROWS > 1 takes VEC 1 or 2 and two rows there; at the
    tuning shape (rows of 1024, planes of 1024 rows) VEC 4 and four rows too."""
    kf = load_kernel_folder(FOLDERS["pixel_shuffle_r2"][0])
    template = offline_template(kf).template
    default = template.default_config()
    space = template.space(kf.env(kf.check_shape, "fp32"))
    assert space.rejection({**default, "VEC": 4, "ITEM_ROWS": 2}) == \
        "ITEM_ROWS == 1 or (w * 2) % VEC == 0"
    assert space.rejection({**default, "VEC": 2, "ITEM_ROWS": 4}) == \
        "ITEM_ROWS == 1 or ((w * 2) * (h * 2)) == (w * 2) or ((w * 2) * (h * 2)) % " \
        "((w * 2) * ITEM_ROWS) == 0"
    assert space.rejection({**default, "VEC": 2, "ITEM_ROWS": 2}) is None
    assert space.rejection({**default, "VEC": 4, "ITEM_ROWS": 1}) is None
    large = template.space(kf.env("large", "fp32"))
    assert large.rejection({**default, "VEC": 4, "ITEM_ROWS": 4, "ITEMS_PER_THREAD": 2}) is None


def test_a_size_by_a_shift_is_its_product() -> None:
    """Session 34's shuffle_up2_bits sizes its output by ``W << 1``: a left shift by a
    literal is a size (:func:`~.vector_access.size_expression`), so its bound ``total`` and
    row ``ow`` are known and the rows' constraints read them as products."""
    lifted = _lifted(S34 / "shuffle_up2_bits")
    assert {p.name for p in lifted.params} == KNOBS, lifted.notes
    assert "ITEM_ROWS == 1 or (w * 2) % VEC == 0" in lifted.constraints, lifted.constraints
    # a shift by a run-time amount is still no size
    source = (S34 / "shuffle_up2_bits" / "baseline.cu").read_text().replace(
        "const int ow = W << 1;", "const int ow = W << (N & 1);")
    lifted = lift_kernel(source, entry="shuffle_up2", grid=["ceil_div(n * c * 4 * h * w, 256)"],
                         block=["256"], scalars={"N": "n", "C": "c", "H": "h", "W": "w"})
    assert "ITEM_ROWS: not applied: the bound `total` is no size of the shape (line 11)" in \
        lifted.notes, lifted.notes


GATHER = """
extern "C" __global__ void k(float* out, const float* in, int N, int W) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= N * W) return;
  int x = i % W;
  int y = i / W;
  out[i] = in[x * N + y];
}
"""


def _lift(source: str) -> tuple[set[str], tuple[str, ...]]:
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n * w, 256)"], block=["256"],
                         scalars={"N": "n", "W": "w"})
    return {p.name for p in lifted.params}, lifted.notes


def test_a_transpose_gather_lifts_item_rows() -> None:
    knobs, notes = _lift(GATHER)
    assert {"VEC", "ITEM_ROWS"} <= knobs, notes


@pytest.mark.parametrize(("old", "new", "why", "line"), [
    # no remainder: the column is not split off
    ("  int x = i % W;\n", "  int x = i - (i / W) * W;\n",
     "no `i % E` splits the index into a row and a column", 4),
    # two widths: which is the row is not known
    ("  out[i] = in[x * N + y];", "  out[i] = in[x * N + y] + (float)(i % N);",
     "`i` is split by more than one width (N, W): which is the row is not known", 4),
    # the width a local of the element's statements
    ("  int x = i % W;\n", "  const int ww = W;\n  int x = i % ww;\n",
     "the row width `ww` of `i % ww` is not the same size for every thread before the "
     "element's statements", 6),
])
def test_a_row_width_not_known_is_refused_with_its_line(old: str, new: str, why: str,
                                                        line: int) -> None:
    source = GATHER.replace(old, new)
    assert source != GATHER
    knobs, notes = _lift(source)
    assert "VEC" in knobs and "ITEM_ROWS" not in knobs, notes
    assert f"ITEM_ROWS: not applied: {why} (line {line})" in notes, notes


def _folder(name: str, root: Path, extents: dict[str, int] | None) -> KernelFolder:
    """``name``'s folder (a round-31b spelling: the corpus folder respelled under ``root``),
    its check shape's sizes set to ``extents`` (a copy) where given."""
    path = FOLDERS[name][0]
    if path.suffix == ".cu":
        path = respelled(CORPUS, root / "spelled", path.read_text()).path
    if extents is None:
        return load_kernel_folder(path)
    copy = root / "extent" / path.name
    shutil.copytree(path, copy, ignore=shutil.ignore_patterns("expert"))
    toml = copy / "kernel.toml"
    text = toml.read_text()
    for key, extent in extents.items():
        small = re.compile(r"^(small = \{.*\b" + key + r" = )\d+", re.M)
        text, hits = small.subn(lambda m, e=extent: f"{m.group(1)}{e}", text)
        assert hits == 1
    toml.write_text(text)
    return load_kernel_folder(copy)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("whole_rows", [False, True], ids=["check", "rows_of_4"])
@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_the_shuffle_computes_as_written(name: str, whole_rows: bool, tmp_path: Path,
                                         host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _folder(name, tmp_path / "folder", FOLDERS[name][2] if whole_rows else None)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    space, default = template.space(env), template.default_config()
    kept = [m for m in MIXES if space.rejection({**default, **m}) is None]
    # two rows a unit at each extent; four where the row's quotient's next extent is a
    # multiple of 4 (or not divided again: ps_r_macro_sizet's row, a local); float4 rows
    # only where the row is a multiple of 4
    assert any(m["ITEM_ROWS"] == 2 for m in kept)
    assert any(m["ITEM_ROWS"] == 4 for m in kept) or not whole_rows
    assert whole_rows == any(m["VEC"] == 4 and m["ITEM_ROWS"] > 1 for m in kept)
    configs = host_configs(template, env, kept)
    assert same_as_written(kf, template, configs, held_back_unseen22.SET.host_source,
                           tmp_path / "run", host_flags) == len(configs)
