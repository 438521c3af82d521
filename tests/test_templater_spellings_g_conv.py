"""The 2-D convolution with a ``__constant__`` filter as other people write it, at first
contact (issue 28): the kernels of tests/spellings_g/conv/ lifted by the offline templater
and compared with the corpus's conv2d_const lift (BLOCK_X, BLOCK_Y, OUT_X, OUT_Y, USE_SMEM);
every checked config prints, bit for bit, what the kernel as written prints on the host
(g++, the cooperative block).

Spellings: the radius a ``constexpr``, a 3-D filter ``wts[c][i][j]``, the channels the outer
loop, a (32, 8) block and the work under an ``if`` (the corpus's knobs); the radius a kernel
argument bounded by a macro maximum, the channels the inner loop of a channels-last input,
the edge clamped, the point through ``blockIdx * blockDim`` (the register window needs a
compile-time window: OUT_Y refused with the line; the generic items wrap now reads the
``blockDim`` offset and gives ITEMS_X and ITEMS_Y, workbench/templater/wrap.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers_templater import end_configs, host_sample
from test_templater_const_via import _knobs, assert_prints_as_written, write_folder

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template

HERE = Path(__file__).resolve().parent / "spellings_g" / "conv"
HW = [("h", "i32", "scalar", "h"), ("w", "i32", "scalar", "w")]
#: name -> (grid, block, args, check sizes, constants)
SPECS: dict[str, tuple[list[str], list[str], list[tuple[str, str, str, Any]], dict[str, int],
                       list[tuple[str, list[int]]]]] = {
    "radius_constexpr_channels_outer": (
        ["ceil_div(w, 32)", "ceil_div(h, 8)"], ["32", "8"],
        [("out", "f32", "out", ["h", "w"]), ("in", "f32", "in", [3, "h", "w"]), *HW],
        {"h": 37, "w": 53}, [("wts", [3, 5, 5])]),
    "radius_arg_max_channels_inner": (
        ["ceil_div(w, 16)", "ceil_div(h, 16)"], ["16", "16"],
        [("out", "f32", "out", ["h", "w"]), ("in", "f32", "in", ["h", "w", 4]), *HW,
         ("r", "i32", "scalar", "2")], {"h": 37, "w": 53}, [("coef", [7, 7])]),
}
CORPUS_KNOBS = {"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "USE_SMEM"}


def _folder(name: str, root: Path) -> KernelFolder:
    grid, block, args, sizes, constants = SPECS[name]
    return write_folder(root / name, (HERE / f"{name}.cu").read_text(), grid, block, args,
                        sizes, constants)


def test_the_constexpr_radius_gets_the_corpus_knobs(tmp_path: Path) -> None:
    result = offline_template(_folder("radius_constexpr_channels_outer", tmp_path))
    assert set(_knobs(result)) >= CORPUS_KNOBS, result.notes
    assert result.lifted.grid == ("ceil_div(w, BLOCK_X * OUT_X)", "ceil_div(h, BLOCK_Y * OUT_Y)")


def test_a_run_time_radius_gets_items_and_the_window_refusal(tmp_path: Path) -> None:
    result = offline_template(_folder("radius_arg_max_channels_inner", tmp_path))
    knobs = _knobs(result)
    assert {"BLOCK_X", "BLOCK_Y", "ITEMS_X", "ITEMS_Y"} <= set(knobs), result.notes
    assert "OUT_Y" not in knobs
    assert result.lifted.grid == ("ceil_div(w, BLOCK_X * ITEMS_X)",
                                  "ceil_div(h, BLOCK_Y * ITEMS_Y)")
    assert "OUT_Y: not applied: the window over dy is not a compile-time size (line 13)" in \
        result.notes


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_checked_config_prints_what_the_kernel_as_written_prints(
        name: str, tmp_path: Path) -> None:
    kf = _folder(name, tmp_path / "folders")
    result = offline_template(kf)
    template = result.template
    ends = end_configs(template, kf.env(kf.check_shape, "fp32"))
    configs = [dict(template.default_config()), *host_sample(ends)]
    assert_prints_as_written(kf, result, configs, tmp_path)
