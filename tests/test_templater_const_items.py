"""The lane-inner layout's items per thread, OUTER_THREADS and LANE_REGS
(workbench/templater/const_items.py, const_regs.py; issue 28).

Spellings (tests/test_templater_const_via.py has their sources): held-back set 6's
dwconv3_nhwc (1-D block, ``% CHANNELS`` / ``/ CHANNELS`` through #define, a macro block
offset the generic wrap does not read: this family makes the items loop), a per-channel
scale and shift over a 2-D block (threadIdx.x the channel, threadIdx.y the pixel, a
``constexpr`` channel count, the work under an ``if``: the generic wrap's ITEMS_X kept,
OUTER_THREADS added) and a 3-tap row filter over 16 lanes written with ``& 15`` / ``>> 4``,
its taps ``[tap][lane]`` read in a while loop (LANE_REGS refused: the tap counter is no
``for`` counter). Each lifted template runs on the host at its default, its last all-ends
corner and a mixed config, bit for bit against the kernel as written; ptxas -v reports no
spills at the corners.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import corner_configs, host_sample
from test_templater_const_via import (
    DWCONV,
    _folder,
    _knobs,
    _lift,
    assert_corners_do_not_spill,
    assert_prints_as_written,
)

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.write_policy import write_file
from workbench.templater import offline_template


@pytest.mark.parametrize(("name", "lanes", "written"), [("dwconv3_nhwc", 32, 8),
                                                         ("row3", 16, 8)])
def test_a_1d_lane_inner_layout_gets_items_and_outer_threads(name: str, lanes: int,
                                                             written: int,
                                                             tmp_path: Path) -> None:
    _kf, result = _lift(name, tmp_path)
    knobs = _knobs(result)
    assert knobs["ITEMS_PER_THREAD"]["default"] == 1, result.notes
    assert knobs["OUTER_THREADS"]["default"] == written
    assert max(knobs["OUTER_THREADS"]["values"]) * lanes == 1024
    assert result.lifted.block[0] == f"({lanes} // LANE_VEC) * OUTER_THREADS"  # lane_vec.py
    assert result.lifted.grid[0].endswith("OUTER_THREADS * ITEMS_PER_THREAD)")
    assert f"{lanes} * OUTER_THREADS <= 1024" in result.lifted.constraints
    assert f"__launch_bounds__(({lanes} / LANE_VEC) * OUTER_THREADS" in result.lifted.source
    assert "blockIdx.x * ITEMS_PER_THREAD + wb_" in result.lifted.source
    assert "return;" not in result.lifted.source[result.lifted.source.index("extern"):]


def test_the_2d_spelling_keeps_the_wrap_and_adds_outer_threads(tmp_path: Path) -> None:
    _kf, result = _lift("scale_shift", tmp_path)
    knobs = _knobs(result)
    assert knobs["OUTER_THREADS"]["default"] == 4 and knobs["ITEMS_X"]["default"] == 1
    assert result.lifted.block == ("32 // LANE_VEC", "OUTER_THREADS")
    assert result.lifted.grid[0] == "ceil_div(npix, OUTER_THREADS * ITEMS_X)"
    assert "OUTER_THREADS * blockIdx.x" in result.lifted.source or \
        "(blockIdx.x * ITEMS_X + wb_item_x)" in result.lifted.source


def test_lane_regs_preload_the_item_invariant_reads(tmp_path: Path) -> None:
    _kf, result = _lift("dwconv3_nhwc", tmp_path)
    source = result.lifted.source
    assert _knobs(result)["LANE_REGS"]["values"] == [0, 1]
    # the 9 taps of the channel as a 3 x 3 register array, filled before the items loop
    assert "float wb_taps_r0[3][3];" in source
    assert source.index("wb_taps_r0[(dy) - (-1)][(dx) - (-1)] = wb_lv_tab_taps(&(wb_taps_via[") < \
        source.index("for (int wb_outer_item")
    assert "* wb_taps_lane0(dy, dx);" in source and "wb_bias_lane1()" in source


def test_a_while_loop_counter_refuses_lane_regs_with_the_line(tmp_path: Path) -> None:
    """row3's tap loop steps ``t`` before its read (``t++`` first, the tap ``t - 1``): no
    counted ``while`` (the step is not the body's last statement), so no ``for`` counter;
    as written (step last) it reads as its ``for`` (loop_forms) and gets LANE_REGS."""
    from test_templater_const_via import FOLDERS
    written = FOLDERS["row3"][0]
    _kf, counted = _lift("row3", tmp_path / "counted")
    assert "LANE_REGS" in _knobs(counted), counted.notes
    source = written.replace("    int q = pix + t - 1;\n", "    t++;\n    int q = pix + t - 2;\n")
    source = source.replace("acc += w3[t][lane]", "acc += w3[t - 1][lane]").replace(
        "    t++;\n  }", "  }")
    assert source.count("t++") == 1 and source != written
    result = offline_template(_folder("row3", tmp_path, source=source))
    assert "LANE_REGS" not in _knobs(result)
    note = next(n for n in result.notes if n.startswith("LANE_REGS"))
    assert "`t` in `w3[t - 1][lane]` is neither the lane nor the counter" in note
    assert "(line 19)" in note


def test_a_two_index_table_in_a_for_loop_gets_lane_regs(tmp_path: Path) -> None:
    """row3 with its tap loop written as a ``for``: the lane's three taps ``w3[t][lane]``
    go to registers (a 3-entry array over the counter), read through CONST_VIA's macro."""
    from test_templater_const_via import FOLDERS
    source = FOLDERS["row3"][0].replace("int t = 0;\n  while (t < 3) {", "for (int t = 0; t < 3; "
                                        "++t) {").replace("    t++;\n", "")
    assert "while" not in source
    result = offline_template(_folder("row3", tmp_path, source=source))
    assert _knobs(result)["LANE_REGS"]["default"] == 0, result.notes
    lifted = result.lifted.source
    assert "float wb_w3_r0[3];" in lifted
    assert "wb_w3_r0[(t) - (0)] = wb_lv_tab_w3(&(wb_w3_via[t][lane]));" in lifted
    assert "acc += wb_w3_lane0(t) * " in lifted  # the read of in: as written or windowed


def test_a_grid_stride_walk_refuses_outer_threads_with_the_line(tmp_path: Path) -> None:
    """A block that strides by gridDim.x * 4 pixels keeps 4 as written: a wider block would
    walk overlapping pixels; refused, CONST_VIA still offered."""
    from test_templater_const_via import FOLDERS
    source = FOLDERS["stray_lane"][0].replace(
        "  const int p = blockIdx.x * 4 + threadIdx.x / C;\n"
        "  if (p >= npix || threadIdx.x == 5) return;\n"
        "  y[p * C + c] = gain[c] * x[p * C + c];\n",
        "  int p = blockIdx.x * 4 + threadIdx.x / C;\n"
        "  while (p < npix) {\n"
        "    y[p * C + c] = gain[c] * x[p * C + c];\n"
        "    p += gridDim.x * 4;\n"
        "  }\n")
    assert "gridDim" in source
    result = offline_template(_folder("stray_lane", tmp_path, source=source))
    knobs = _knobs(result)
    assert "CONST_VIA" in knobs and "OUTER_THREADS" not in knobs
    note = next(n for n in result.notes if n.startswith("OUTER_THREADS"))
    # p += gridDim.x * 4 (line 10) is the step of the counted while at line 8: the loop's
    # line, the while read as its for (loop_forms)
    assert "reads gridDim" in note and "(line 8)" in note


def test_a_block_offset_macro_used_elsewhere_refuses_outer_threads(tmp_path: Path) -> None:
    """dwconv3 with PIXELS_PER_BLOCK read again in its early exit: that use would follow
    (or not) a wider block; refused with the line, CONST_VIA still offered."""
    folder = tmp_path / "dw"
    shutil.copytree(DWCONV, folder, ignore=shutil.ignore_patterns("expert"))
    written = (folder / "baseline.cu").read_text()
    source = written.replace("  if (x >= w) return;",
                             "  if (x >= w || y >= 4096 * PIXELS_PER_BLOCK) return;")
    assert source != written
    write_file(folder, folder / "baseline.cu", source, overwrite=True)
    result = offline_template(load_kernel_folder(folder))
    knobs = _knobs(result)
    assert "CONST_VIA" in knobs and "OUTER_THREADS" not in knobs
    note = next(n for n in result.notes if n.startswith("OUTER_THREADS"))
    assert "`PIXELS_PER_BLOCK` (the block offset) is used elsewhere too" in note
    assert "(line 17)" in note


def test_an_index_past_the_table_for_some_lane_refuses_lane_regs(tmp_path: Path) -> None:
    """scale[ch + 1] reads past a 32-entry table at lane 31: the kernel never reads there
    (the launch has 31 lanes a pixel) but the preload would; refused."""
    from test_templater_const_via import FOLDERS
    source = FOLDERS["scale_shift"][0].replace("scale[ch]", "scale[ch + 1]")
    kf = _folder("scale_shift", tmp_path, source=source)
    result = offline_template(kf)
    note = next(n for n in result.notes if n.startswith("LANE_REGS: not applied: scale"))
    assert "`ch + 1` is not shown inside [0, 32)" in note


@pytest.mark.timeout(240)
@pytest.mark.parametrize(("name", "mixed"), [
    ("scale_shift", {"CONST_VIA": 1, "LANE_REGS": 0, "ITEMS_X": 2, "OUTER_THREADS": 2}),
    ("row3", {"CONST_VIA": 1, "ITEMS_PER_THREAD": 2, "OUTER_THREADS": 2}),
])
def test_each_spelling_prints_what_the_kernel_as_written_prints(
        name: str, mixed: dict[str, int], tmp_path: Path) -> None:
    kf, result = _lift(name, tmp_path / "folders")
    template = result.template
    env = kf.env(kf.check_shape, "fp32")
    configs = [*host_sample(corner_configs(template, env)),
               {**template.default_config(), **mixed}]
    assert_prints_as_written(kf, result, configs, tmp_path)


@needs_nvcc
@pytest.mark.timeout(300)
def test_row3_corners_compile_without_spills(tmp_path: Path) -> None:
    kf, result = _lift("row3", tmp_path / "folders")
    assert_corners_do_not_spill(kf, result, tmp_path)
