"""LANE_WINDOW (workbench/templater/const_window.py; issue 28): a thread of the lane-inner
layout walks consecutive outer elements (pixels) and the input values their taps share are
loaded once, into a register window.

Spellings: held-back set 6's dwconv3_nhwc (1-D block, 32 channels, ``continue`` on the
padding, const_items' own items loop), a 3 x 3 depthwise filter over 64 channels on a 2-D
block (x the channel, y the pixel, a ``constexpr`` channel count, taps ``[i][j][ch]``, the
padding one ``if`` around the add, the generic wrap's ITEMS_X loop kept) and a 5-tap row
filter over 16 lanes (``& 15`` / ``>> 4``, two pixels a warp, one ``for`` over the taps).
Each runs on the host at its default, its last all-ends corner and the window at several
items and outer threads, bit for bit against the kernel as written; ptxas -v reports no
spills and no stack frame with the window on at the largest items. Refusals: the taps in a
``while`` loop (the window's slot would not be a compile-time index) and an input whose
index moves with a value read from memory.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import corner_configs, host_sample
from test_corpus_unseen3 import _SPILLS, _ptxas_log
from test_templater_const_via import (
    _folder,
    _knobs,
    assert_prints_as_written,
    write_folder,
)

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template
from workbench.templater.records import TemplaterResult

DW64 = """
// depthwise 3 x 3 over a channels-last [rows, cols, 64] map; x the channel, y the pixel
constexpr int kC = 64;
__constant__ float wts[3][3][kC];

extern "C" __global__ void k(float* dst, const float* src, int rows, int cols) {
  const int ch = threadIdx.x;
  const int col = 4 * blockIdx.x + threadIdx.y;
  const int row = blockIdx.y;
  if (col < cols) {
    float acc = 0.0f;
    for (int i = 0; i < 3; i++) {
      for (int j = 0; j < 3; j++) {
        const int r = row + i - 1, q = col + j - 1;
        if (r >= 0 && r < rows && q >= 0 && q < cols)
          acc += src[(r * cols + q) * kC + ch] * wts[i][j][ch];
      }
    }
    dst[(row * cols + col) * kC + ch] = acc;
  }
}
"""

ROW5 = """
// out[r][i][c] = 0.5 + sum over t of w5[t][c] * in[r][i + t - 2][c], zero outside the row
#ifndef NCH
#define NCH 16
#endif
__constant__ float w5[5][NCH];

extern "C" __global__ void k(float* out, const float* in, int rows, int cols) {
  int lane = threadIdx.x & 15;
  int pix = blockIdx.x * 8 + (threadIdx.x >> 4);
  int r = blockIdx.y;
  if (pix >= cols) return;
  float acc = 0.5f;
  for (int t = 0; t < 5; ++t) {
    int q = pix + t - 2;
    if (q >= 0 && q < cols) acc += w5[t][lane] * in[((size_t)r * cols + q) * NCH + lane];
  }
  out[((size_t)r * cols + pix) * NCH + lane] = acc;
}
"""

#: name -> (source, grid, block, args, check-shape sizes, constants)
SPELLINGS: dict[str, tuple[str, list[str], list[str], list[tuple[str, str, str, Any]],
                           dict[str, int], list[tuple[str, list[int]]]]] = {
    "dw64": (DW64, ["ceil_div(cols, 4)", "rows"], ["64", "4"],
             [("dst", "f32", "out", ["rows", "cols", 64]),
              ("src", "f32", "in", ["rows", "cols", 64]),
              ("rows", "i32", "scalar", "rows"), ("cols", "i32", "scalar", "cols")],
             {"rows": 5, "cols": 11}, [("wts", [3, 3, 64])]),
    "row5": (ROW5, ["ceil_div(cols, 8)", "rows"], ["128"],
             [("out", "f32", "out", ["rows", "cols", 16]),
              ("in", "f32", "in", ["rows", "cols", 16]),
              ("rows", "i32", "scalar", "rows"), ("cols", "i32", "scalar", "cols")],
             {"rows": 3, "cols": 21}, [("w5", [5, 16])]),
}


def _lift(name: str, root: Path, source: str | None = None) -> tuple[KernelFolder,
                                                                     TemplaterResult]:
    if name == "dwconv3_nhwc":
        kf = _folder(name, root)
    else:
        written, grid, block, args, shapes, constants = SPELLINGS[name]
        kf = write_folder(root / name, written if source is None else source, grid, block,
                          args, shapes, constants)
    return kf, offline_template(kf)


@pytest.mark.parametrize(("name", "items", "along", "window"), [
    ("dwconv3_nhwc", "ITEMS_PER_THREAD", "`x` along `dx`, `y` along `dy`",
     "[OUT_Y + 2][ITEMS_PER_THREAD + 2]"),
    ("dw64", "ITEMS_X", "`col` along `j`, `row` along `i`", "[OUT_Y + 2][ITEMS_X + 2]"),
    ("row5", "ITEMS_PER_THREAD", "`pix` along `t`, `r` (a slot per step)",
     "[OUT_Y][ITEMS_PER_THREAD + 4]"),
])
def test_the_shared_input_reads_go_through_a_window(name: str, items: str, along: str,
                                                    window: str, tmp_path: Path) -> None:
    _kf, result = _lift(name, tmp_path)
    knob = _knobs(result)["LANE_WINDOW"]
    assert knob["values"] == [0, 1] and knob["default"] == 0, result.notes
    note = next(n for n in result.notes if n.startswith("LANE_WINDOW"))
    assert f"move with {along}:" in note, note
    source = result.lifted.source
    assert f"wb_win0{window};" in source and f"bool wb_win0_has{window} = {{}};" in source
    assert "#define wb_win0_read(at) (*(wb_lv_ptr(at)))" in source  # 0: the read as written
    # 1: the thread's items are consecutive outer elements (its outer index times the items)
    assert re.search(rf"wb_lane_outer\(.*, \(.*OUTER_THREADS.*\) \* {items} \+ wb_\w+\);",
                     source)
    # the window is declared before the items loop, so it lives across the items
    assert source.index(f"wb_win0{window};") < source.index(f"< {items}; ++")


@pytest.mark.parametrize(("name", "row", "bound"), [("dwconv3_nhwc", "y", "h"),
                                                    ("dw64", "row", "rows"),
                                                    ("row5", "r", "rows")])
def test_the_block_row_becomes_out_y_consecutive_rows(name: str, row: str, bound: str,
                                                      tmp_path: Path) -> None:
    _kf, result = _lift(name, tmp_path)
    knob = _knobs(result)["OUT_Y"]
    assert knob["values"] == [1, 2, 4] and knob["default"] == 1
    assert result.lifted.grid[1] == f"ceil_div({bound}, OUT_Y)"
    source = result.lifted.source
    assert f"{row} = (blockIdx.y * OUT_Y + wb_row);" in source
    assert f"if ({row} >= {bound}) continue;  // a row past the image" in source


def test_a_row_the_kernel_offsets_refuses_out_y_with_the_line(tmp_path: Path) -> None:
    """row5 reading its row as ``blockIdx.y + 0 * cols``: not the block's row alone (the
    rows loop would not know what it walks); refused, the window along x kept."""
    source = ROW5.replace("int r = blockIdx.y;", "int r = blockIdx.y + 0 * cols;")
    _kf, result = _lift("row5", tmp_path, source=source)
    knobs = _knobs(result)
    assert "OUT_Y" not in knobs and "LANE_WINDOW" in knobs, result.notes
    note = next(n for n in result.notes if n.startswith("OUT_Y"))
    assert "is not the row alone" in note and "(line 11)" in note, note


def test_the_window_is_kept_within_the_register_file(tmp_path: Path) -> None:
    """60 window slots (8 items, 4 rows) fit 512 threads a block, not 1024, and not under a
    minimum of 4 resident blocks of 512 threads (32 registers a thread); at 1 block they fit."""
    kf, result = _lift("dwconv3_nhwc", tmp_path)
    space = result.template.space(kf.env("large", "fp32"))
    widest = {**result.template.default_config(), "LANE_WINDOW": 1, "ITEMS_PER_THREAD": 8,
              "OUT_Y": 4}
    assert space.rejection({**widest, "OUTER_THREADS": 16}) is None
    assert space.rejection({**widest, "OUTER_THREADS": 32}) is not None
    assert space.rejection({**widest, "OUTER_THREADS": 16, "MIN_BLOCKS_PER_SM": 4}) is not None
    assert space.rejection({**widest, "OUTER_THREADS": 16, "MIN_BLOCKS_PER_SM": 1}) is None
    # the window off: the block and the cap as before
    assert space.rejection({**widest, "LANE_WINDOW": 0, "OUTER_THREADS": 32}) is None


@pytest.mark.timeout(240)
def test_a_while_loop_over_the_taps_refuses_the_window_with_the_line(tmp_path: Path) -> None:
    """row3's tap loop as written is a counted while (step last), read as its for since
    ada1dd2: it gets the window, and prints as written at the window's mixed config. With the
    step first (``t++`` before the tap ``t - 1``) it is not counted and stays a while: refused
    at the while's line."""
    from test_templater_const_via import FOLDERS
    written = FOLDERS["row3"][0]
    kf = _folder("row3", tmp_path / "counted")
    counted = offline_template(kf)
    assert "LANE_WINDOW" in _knobs(counted), counted.notes
    assert_prints_as_written(kf, counted, [_window_configs(kf, counted)["mixed"]],
                             tmp_path / "host")
    source = written.replace("    int q = pix + t - 1;\n", "    t++;\n    int q = pix + t - 2;\n")
    source = source.replace("acc += w3[t][lane]", "acc += w3[t - 1][lane]").replace(
        "    t++;\n  }", "  }")
    assert source.count("t++") == 1 and source != written
    result = offline_template(_folder("row3", tmp_path / "stepped", source=source))
    assert "LANE_WINDOW" not in _knobs(result)
    note = next(n for n in result.notes if n.startswith("LANE_WINDOW"))
    assert "inside a while loop" in note and "(line 16)" in note, note  # the while


def test_a_clamped_column_refuses_the_window_with_the_line(tmp_path: Path) -> None:
    """row5 with its edge clamped through ``min``: a call the index polynomial does not
    follow, so the read is not shown to move with the pixel; refused, the other knobs
    kept."""
    source = ROW5.replace("* cols + q) * NCH", "* cols + min(q, cols - 1)) * NCH")
    assert source != ROW5
    _kf, result = _lift("row5", tmp_path, source=source)
    assert "LANE_WINDOW" not in _knobs(result) and "LANE_REGS" in _knobs(result)
    note = next(n for n in result.notes if n.startswith("LANE_WINDOW"))
    assert "does not move with `pix`" in note
    assert "(line 16)" in note, note


def _window_configs(kf: KernelFolder, result: TemplaterResult) -> dict[str, dict[str, Any]]:
    """The last all-ends corner, the window at 4 items and 2 rows over 2 outer threads with
    the taps in registers, and at 8 items and 4 rows with the shared copy of the taps."""
    template = result.template
    env = kf.env(kf.check_shape, "fp32")
    items = "ITEMS_X" if "ITEMS_X" in template.default_config() else "ITEMS_PER_THREAD"
    base = template.default_config()
    return {"corner": host_sample(corner_configs(template, env))[-1],
            "mixed": {**base, "LANE_WINDOW": 1, items: 4, "OUTER_THREADS": 2, "LANE_REGS": 1,
                      "OUT_Y": 2},
            "widest": {**base, "LANE_WINDOW": 1, items: 8, "CONST_VIA": 1, "OUT_Y": 4}}


@pytest.mark.timeout(240)
@pytest.mark.parametrize(("name", "which"), [("dwconv3_nhwc", ("mixed",)),
                                             ("dw64", ("widest",)),
                                             ("row5", ("mixed",))])
def test_each_spelling_prints_what_the_kernel_as_written_prints(
        name: str, which: tuple[str, ...], tmp_path: Path) -> None:
    """The default is the kernel as written (LANE_WINDOW = 0); here the window's configs,
    split over the spellings to keep the file fast (dwconv3_nhwc's default and corners run
    in tests/test_templater_const_via.py)."""
    kf, result = _lift(name, tmp_path / "folders")
    configs = _window_configs(kf, result)
    assert_prints_as_written(kf, result, [configs[w] for w in which], tmp_path)


@needs_nvcc
@pytest.mark.timeout(300)
def test_the_window_at_the_largest_items_stays_in_registers(tmp_path: Path) -> None:
    """dw64's items loop is the generic wrap's (no ``#pragma unroll`` of its own): the window
    still stays in registers (dwconv3_nhwc's corners: tests/test_templater_const_via.py)."""
    kf, result = _lift("dw64", tmp_path / "folders")
    template = result.template
    for i, config in enumerate([_window_configs(kf, result)["widest"]]):
        log = _ptxas_log(template.render(config, "fp32").source, tmp_path, f"c{i}")
        spills = _SPILLS.findall(log)
        assert spills and all(s == ("0", "0") for s in spills), f"{config}:\n{log}"
        assert re.search(r"\b0 bytes stack frame", log), f"{config}:\n{log}"
