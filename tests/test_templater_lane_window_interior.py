"""The interior copy of LANE_WINDOW's walk (workbench/templater/const_inner.py; issue 28).

A thread whose bounds tests hold at every item, row and tap runs the walk without them, so
the window's load-once flags are constants (dwconv3_nhwc at 2 channels x 4 x 4 outputs: 36
loads, not 144 guarded ones). Spellings: held-back set 6's dwconv3_nhwc (skips by
``continue``, an early return, a 1-D block) on an 11 x 29 image (threads whose 4 x 4 window
lies inside exist); a second 3 x 3 depthwise filter (a 2-D block of 32 lanes x 4 pixels, an
``#ifndef`` channel count, taps ``[ky][kx][ch]`` from 0, one positive ``if`` guarding the
read inside an ``if (x < W)`` body, ``unsigned`` lane, ``int a = .., b = ..;``); the 5-tap
row filter of test_templater_lane_vec.py. Each bit for bit against the kernel as written at
window configs; the interior copy is shown to run (a wrong interior copy changes the output);
the PTX of the interior copy alone has one load a window slot. Refusals name the line.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_nvcc import NVCC, needs_nvcc
from test_corpus_unseen3 import _SPILLS, _inputs, _ptxas_log, folder_runs
from test_templater_const_via import DWCONV, assert_prints_as_written, write_folder
from test_templater_lane_vec import TAP5

from workbench.core.kernel_folder import KernelFolder
from workbench.core.write_policy import write_file
from workbench.templater import offline_template
from workbench.templater.records import TemplaterResult

DWB = """
// out[y][x][ch] = shift[ch] + sum_{ky,kx} w3[ky][kx][ch] * in[y + ky - 1][x + kx - 1][ch]
#ifndef NCH
#define NCH 32
#endif
__constant__ float w3[3][3][NCH];
__constant__ float shift[NCH];

extern "C" __global__ void k(float* __restrict__ out, const float* __restrict__ in, int H,
                             int W) {
  const unsigned ch = threadIdx.x;
  const int x = blockIdx.x * blockDim.y + threadIdx.y;
  const int y = blockIdx.y;
  if (x < W) {
    float acc = shift[ch];
    for (int ky = 0; ky < 3; ++ky) {
      for (int kx = 0; kx < 3; ++kx) {
        const int iy = y + ky - 1, ix = x + kx - 1;
        if (iy >= 0 && iy < H && ix >= 0 && ix < W)
          acc += w3[ky][kx][ch] * in[((size_t)iy * W + ix) * NCH + ch];
      }
    }
    out[((size_t)y * W + x) * NCH + ch] = acc;
  }
}
"""

#: a skip that reads memory: the thread could not test it before its items
MASKED = DWB.replace("const int iy = y + ky - 1, ix = x + kx - 1;",
                     "const int iy = y + ky - 1, ix = x + kx - 1;\n"
                     "        if (skip[ix & 7]) continue;").replace(
    "const float* __restrict__ in, int H", "const float* __restrict__ in, "
    "const int* __restrict__ skip, int H")

_IMAGE: list[tuple[str, str, str, Any]] = [("out", "f32", "out", ["H", "W", 32]), ("in", "f32", "in", ["H", "W", 32]),
          ("H", "i32", "scalar", "H"), ("W", "i32", "scalar", "W")]


def _folder(name: str, root: Path) -> KernelFolder:
    folder = root / name
    if name == "dwconv3_nhwc":
        args: list[tuple[str, str, str, Any]] = [
            ("out", "f32", "out", ["h", "w", 32]), ("in", "f32", "in", ["h", "w", 32]),
            ("h", "i32", "scalar", "h"), ("w", "i32", "scalar", "w")]
        return write_folder(folder, (DWCONV / "baseline.cu").read_text().replace(
            "void dwconv3_nhwc(", "void k("),
                            ["ceil_div(w, 8)", "h"], ["256"], args, {"h": 11, "w": 29},
                            [("taps", [288]), ("bias", [32])])
    if name == "dwb":
        return write_folder(folder, DWB, ["ceil_div(W, 4)", "H"], ["32", "4"], _IMAGE,
                            {"H": 11, "W": 29}, [("w3", [288]), ("shift", [32])])
    if name == "masked":
        return write_folder(folder, MASKED, ["ceil_div(W, 4)", "H"], ["32", "4"],
                            [*_IMAGE[:2], ("skip", "i32", "in", [8]), *_IMAGE[2:]],
                            {"H": 11, "W": 29}, [("w3", [288]), ("shift", [32])])
    return write_folder(folder, TAP5, ["ceil_div(width, 4)", "height"], ["32", "4"],
                        [("out", "f32", "out", ["height", "width", 32]),
                         ("in", "f32", "in", ["height", "width", 32]),
                         ("filt", "f32", "in", [5, 32]),
                         ("height", "i32", "scalar", "height"),
                         ("width", "i32", "scalar", "width")],
                        {"height": 11, "width": 29}, [("bias5", [32])])


def _lift(name: str, root: Path) -> tuple[KernelFolder, TemplaterResult]:
    kf = _folder(name, root)
    return kf, offline_template(kf)


def _note(result: TemplaterResult) -> str:
    return next(n for n in result.notes if n.startswith("WINDOW_INTERIOR"))


def _items(result: TemplaterResult) -> str:
    names = {p.name for p in result.lifted.params}
    return "ITEMS_X" if "ITEMS_X" in names else "ITEMS_PER_THREAD"


def _configs(result: TemplaterResult) -> list[dict[str, Any]]:
    """4 x 4 outputs a thread at 2 and 4 channels a lane, 2 x 2 with the taps in registers,
    the window at one channel: each with threads inside an 11 x 29 image and at its edges."""
    base = result.template.default_config()
    items = _items(result)
    return [{**base, "LANE_WINDOW": 1, items: 4, "OUT_Y": 4, "LANE_VEC": 2,
             "OUTER_THREADS": 2, "CONST_VIA": 1},
            {**base, "LANE_WINDOW": 1, items: 4, "OUT_Y": 4, "LANE_VEC": 4,
             "OUTER_THREADS": 4},  # 8 lanes of 4 channels: 4 outer threads fill a warp
            {**base, "LANE_WINDOW": 1, items: 2, "OUT_Y": 2, "LANE_REGS": 1,
             "OUTER_THREADS": 4},
            {**base, "LANE_WINDOW": 1, items: 2, "OUT_Y": 1}]


@pytest.mark.parametrize(("name", "tests"), [("dwconv3_nhwc", 3), ("dwb", 2), ("tap5", 2)])
def test_the_window_walk_gets_an_interior_copy(name: str, tests: int, tmp_path: Path) -> None:
    _kf, result = _lift(name, tmp_path)
    note = _note(result)
    assert note.startswith("WINDOW_INTERIOR: applied") and \
        f"whose {tests} bounds test(s) hold" in note, note
    source = result.lifted.source
    # taken only where its registers fit the launch's cap (the preprocessor decides; the
    # flag is a constant false elsewhere)
    assert re.search(r"#if LANE_WINDOW == 1 && \(.* \+ 32 <= 255 && .* <= 65536 / .*\)  "
                     r"// the thread's window inside the image", source), source
    assert "wb_inner = __all_sync(__activemask(), wb_inner);\n#endif\n#else\n" \
        "  const bool wb_inner = false;" in source and "  if (wb_inner) {\n" in source
    # the rows past the image: a test of the thread's own, known false in the copy
    assert re.search(r"wb_inner = wb_inner && !\(\w+ >= \w+\);", source), source
    assert source.count("(false && (") + source.count("(true || (") >= tests


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", ["dwconv3_nhwc", "dwb", "tap5"])
def test_each_spelling_prints_what_the_kernel_as_written_prints(name: str,
                                                                tmp_path: Path) -> None:
    kf, result = _lift(name, tmp_path / "folders")
    assert_prints_as_written(kf, result, _configs(result), tmp_path)


@pytest.mark.timeout(240)
def test_the_interior_copy_runs_on_the_check_image(tmp_path: Path) -> None:
    """A wrong interior copy (its stores off by one) changes dwb's output at 4 x 4 items:
    some threads take it; the copy as lifted prints what the kernel as written prints."""
    kf, result = _lift("dwb", tmp_path / "folders")
    config = _configs(result)[0]
    env = kf.env(kf.check_shape, "fp32")
    source = result.template.render(config, "fp32").source
    head, _sep, rest = source.partition("  if (wb_inner) {")
    inner, sep, tail = rest.partition("} else")
    assert sep and "= acc;" in inner
    broken = head + "  if (wb_inner) {" + inner.replace("= acc;", "= acc + 1.0f;") + sep + tail
    launch = result.template.launch_for(config, env)
    runs = [(kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env)),
            (source, launch), (broken, launch)]
    want, good, bad = folder_runs(kf, runs, _inputs(kf), tmp_path)
    assert np.array_equal(good["out"].view(np.uint32), want["out"].view(np.uint32))
    assert not np.array_equal(bad["out"], want["out"])


def test_a_skip_that_reads_memory_refuses_the_copy_with_the_line(tmp_path: Path) -> None:
    _kf, result = _lift("masked", tmp_path)
    note = _note(result)
    line = next(i for i, ln in enumerate(MASKED.splitlines(), 1) if "skip[ix & 7]" in ln)
    assert note.startswith("WINDOW_INTERIOR: not applied") and "reads memory" in note and \
        f"(line {line})" in note, note
    # the window itself stays (its flags runtime values)
    assert any(n.startswith("LANE_WINDOW: applied") for n in result.notes), result.notes


@needs_nvcc
@pytest.mark.timeout(300)
def test_the_interior_copy_loads_each_window_slot_once(tmp_path: Path) -> None:
    """dwconv3_nhwc at 2 channels a lane, 4 x 4 outputs a thread: the interior copy alone
    (the vote made true) holds 6 x 6 8-byte loads and 16 8-byte stores, no 4-byte access."""
    _kf, result = _lift("dwconv3_nhwc", tmp_path)
    config = {**result.template.default_config(), "LANE_WINDOW": 1, "ITEMS_PER_THREAD": 4,
              "OUT_Y": 4, "LANE_VEC": 2, "CONST_VIA": 1}
    source = result.template.render(config, "fp32").source
    only = source.replace("__all_sync(__activemask(), wb_inner)", "true")
    assert only != source
    src = write_file(tmp_path, tmp_path / "inner.cu", only)
    assert NVCC is not None
    subprocess.run([NVCC, "-ptx", "-arch=sm_90", "-O3", "-o", str(tmp_path / "inner.ptx"),
                    str(src)], check=True, capture_output=True, timeout=120)
    ptx = (tmp_path / "inner.ptx").read_text()
    assert len(re.findall(r"ld\.global\.nc\.v2\.f32", ptx)) == 36
    assert len(re.findall(r"st\.global\.v2\.f32", ptx)) == 16
    assert not re.search(r"(ld|st)\.global(\.nc)?\.f32", ptx)


@needs_nvcc
@pytest.mark.timeout(300)
@pytest.mark.parametrize("config", [
    # one channel, 8 x 1 outputs, 256 threads x 4 blocks (a 64-register cap): the interior
    # copy alone spilled 16 bytes, so it is not written there
    {"LANE_VEC": 1, "ITEMS_PER_THREAD": 8, "OUT_Y": 1, "OUTER_THREADS": 8,
     "MIN_BLOCKS_PER_SM": 4, "CONST_VIA": 1},
    # 8 x 4 with the taps in registers under a 128-register cap (spilled 8 bytes)
    {"LANE_VEC": 1, "ITEMS_PER_THREAD": 8, "OUT_Y": 4, "OUTER_THREADS": 4,
     "MIN_BLOCKS_PER_SM": 4, "LANE_REGS": 1},
    # the expert's pick in the lift's knobs: the interior copy is written, no spill
    {"LANE_VEC": 2, "ITEMS_PER_THREAD": 4, "OUT_Y": 4, "OUTER_THREADS": 8, "CONST_VIA": 1},
])
def test_register_capped_windows_do_not_spill(config: dict[str, int], tmp_path: Path) -> None:
    kf, result = _lift("dwconv3_nhwc", tmp_path)
    full = {**result.template.default_config(), "LANE_WINDOW": 1, **config}
    assert result.template.space(kf.env(kf.check_shape, "fp32")).rejection(full) is None
    log = _ptxas_log(result.template.render(full, "fp32").source, tmp_path, "capped")
    spills = _SPILLS.findall(log)
    assert spills and all(sp == ("0", "0") for sp in spills), f"{full}:\n{log}"
