"""LANE_VEC (workbench/templater/lane_vec.py; issue 28): a lane of the lane-inner layout owns
LANE_VEC consecutive channels, loaded and stored as one 8- or 16-byte access.

Spellings: held-back set 6's dwconv3_nhwc (1-D block, ``% CHANNELS`` / ``/ CHANNELS``, taps
and biases in ``__constant__``, composed with CONST_VIA, LANE_REGS, OUT_Y and LANE_WINDOW);
a per-channel scale, shift, ReLU6 and gain over [pixels, 64] (a ``constexpr`` channel count,
a 1-D block of 64 x 4, a ``size_t`` row base in a local, the gain a global table read at the
lane, ``fminf``/``fmaxf`` on the lane's values, the generic wrap's items loop); a 5-tap row
filter over a 2-D block of 32 lanes x 4 pixels (the filter in global memory ``[t + 2][c]``,
the bias in ``__constant__``, the taps' loop from -2, the padding one ``if``). Each runs on
the host at its default, its last all-ends corner and mixed configs, bit for bit against
the kernel as written; ptxas -v: no spills at the 2-D spelling's last corner, and the
16-byte accesses are in the PTX. Refusals name the line: channels-first data (the lane not
the fastest index), an odd channel count, a lane at stride 2, the lane in a condition, a
lane's value in a ternary.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import NVCC, needs_nvcc
from helpers_templater import corner_configs, host_sample
from test_corpus_unseen3 import _SPILLS, _ptxas_log
from test_templater_const_via import (
    DWCONV,
    _knobs,
    assert_prints_as_written,
    write_folder,
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.write_policy import write_file
from workbench.templater import offline_template
from workbench.templater.records import TemplaterResult

ACT64 = """
// dst[p][c] = min(max(src[p][c] * scale[c] + shift[c], 0), 6) * gain[c] over [n, h, w, 64]
constexpr int C = 64;
__constant__ float scale[C];
__constant__ float shift[C];

extern "C" __global__ void k(float* __restrict__ dst, const float* __restrict__ src,
                             const float* __restrict__ gain, int npix) {
  const int lane = threadIdx.x % C;
  const int pix = blockIdx.x * 4 + threadIdx.x / C;
  if (pix >= npix) return;
  const size_t base = (size_t)pix * C;
  float v = src[base + lane] * scale[lane] + shift[lane];
  v = fminf(fmaxf(v, 0.0f), 6.0f) * gain[lane];
  dst[base + lane] = v;
}
"""

TAP5 = """
// out[r][i][c] = bias5[c] + sum over t in [-2, 2] of filt[t + 2][c] * in[r][i + t][c]
#define LANES 32
__constant__ float bias5[LANES];

extern "C" __global__ void k(float* out, const float* in, const float* filt, int height,
                             int width) {
  int c = threadIdx.x;
  int col = blockIdx.x * 4 + threadIdx.y;
  int row = blockIdx.y;
  if (col < width) {
    float acc = bias5[c];
    for (int t = -2; t <= 2; t++) {
      int src_col = col + t;
      if (src_col >= 0 && src_col < width)
        acc += filt[(t + 2) * LANES + c] * in[(row * width + src_col) * LANES + c];
    }
    out[(row * width + col) * LANES + c] = acc;
  }
}
"""

def _folder(name: str, root: Path, source: str | None = None,
            channels: int = 64) -> KernelFolder:
    if name == "dwconv3_nhwc":
        return load_kernel_folder(DWCONV)
    if name == "act64":
        args: list[tuple[str, str, str, Any]] = [
            ("dst", "f32", "out", ["npix", channels]), ("src", "f32", "in", ["npix", channels]),
            ("gain", "f32", "in", [channels]), ("npix", "i32", "scalar", "npix")]
        return write_folder(root / name, ACT64 if source is None else source,
                            ["ceil_div(npix, 4)"], [str(channels * 4)], args, {"npix": 23},
                            [("scale", [channels]), ("shift", [channels])])
    return write_folder(root / name, TAP5 if source is None else source,
                        ["ceil_div(width, 4)", "height"], ["32", "4"],
                        [("out", "f32", "out", ["height", "width", 32]),
                         ("in", "f32", "in", ["height", "width", 32]),
                         ("filt", "f32", "in", [5, 32]),
                         ("height", "i32", "scalar", "height"),
                         ("width", "i32", "scalar", "width")],
                        {"height": 3, "width": 13}, [("bias5", [32])])


def _lift(name: str, root: Path, source: str | None = None,
          channels: int = 64) -> tuple[KernelFolder, TemplaterResult]:
    kf = _folder(name, root, source, channels)
    return kf, offline_template(kf)


def _line(source: str, fragment: str) -> int:
    """The 1-based line of ``source`` holding ``fragment``."""
    return next(i for i, ln in enumerate(source.splitlines(), 1) if fragment in ln)


def _note(result: TemplaterResult) -> str:
    return next(n for n in result.notes if n.startswith("LANE_VEC"))


@pytest.mark.parametrize(("name", "block", "lane"), [
    ("dwconv3_nhwc", ("(32 // LANE_VEC) * OUTER_THREADS",),
     "c = (threadIdx.x % (32 / LANE_VEC)) * LANE_VEC;"),
    ("act64", ("(64 // LANE_VEC) * OUTER_THREADS",),
     "lane = (threadIdx.x % (64 / LANE_VEC)) * LANE_VEC;"),
    ("tap5", ("32 // LANE_VEC", "OUTER_THREADS"), "c = threadIdx.x * LANE_VEC;"),
])
def test_a_lane_owns_lane_vec_channels(name: str, block: tuple[str, ...], lane: str,
                                       tmp_path: Path) -> None:
    _kf, result = _lift(name, tmp_path)
    knob = _knobs(result)["LANE_VEC"]
    assert knob["values"] == [1, 2, 4] and knob["default"] == 1, result.notes
    assert result.lifted.block == block
    source = result.lifted.source
    assert lane in source
    note = _note(result)
    assert note.startswith("LANE_VEC: applied") and \
        "CHANNELS * 4 % (LANE_VEC * 4) == 0" in note, note
    # the pixel of a thread: the lanes of a pixel are K / LANE_VEC
    if len(block) == 1:
        assert re.search(r"threadIdx\.x / \(\d+ / LANE_VEC\)", source)


def test_global_accesses_are_vectors_and_constant_tables_gathered(tmp_path: Path) -> None:
    """act64: src, gain and dst through one vector access each; scale and shift entry by
    entry from constant memory (4-byte aligned), as one vector from CONST_VIA's 16-byte
    aligned shared copy; fminf / fmaxf channel by channel."""
    _kf, result = _lift("act64", tmp_path)
    source = result.lifted.source
    for access in ("src[base + lane]", "gain[lane]", "dst[base + lane]"):
        assert f"(*wb_lv_ptr(&({access})))" in source, access
    assert "wb_lv_tab_scale(&(wb_scale_via[lane]))" in source
    assert "#if CONST_VIA == 1 && LANE_VEC > 1  // the 16-byte aligned shared copy of scale\n" \
        "#define wb_lv_tab_scale(p) (*wb_lv_ptr(p))\n#else\n" \
        "#define wb_lv_tab_scale(p) wb_lv_gather(p)\n#endif" in source
    assert "alignas(16) __shared__ float wb_scale_s[64];" in source
    assert "wb_lv_float v = " in source
    assert "wb_lv_fminf(wb_lv_fmaxf(v, 0.0f), 6.0f)" in source
    assert "#define wb_lv_fmaxf fmaxf" in source  # LANE_VEC = 1: the call as written


def test_dwconv3_composes_with_the_register_families(tmp_path: Path) -> None:
    kf, result = _lift("dwconv3_nhwc", tmp_path)
    source = result.lifted.source
    # LANE_REGS: the lane's taps as its channels; LANE_WINDOW: a slot a pixel's channels
    assert "wb_lv_float wb_taps_r0[3][3];" in source
    assert "wb_lv_float wb_win0[OUT_Y + 2][ITEMS_PER_THREAD + 2];" in source
    assert "wb_win0_has[wb_row + (dy) - (-1)][wb_outer_item + (dx) - (-1)], " \
        "wb_win0[wb_row + (dy) - (-1)][wb_outer_item + (dx) - (-1)], wb_lv_ptr(at))" in source
    # the window's consecutive walk keeps the pixel's lanes at 32 / LANE_VEC
    assert "(blockIdx.x * OUTER_THREADS + threadIdx.x / (32 / LANE_VEC)) * ITEMS_PER_THREAD" \
        in source
    constraints = result.lifted.constraints
    assert any(c.startswith("LANE_REGS == 0 or LANE_VEC == 1") for c in constraints)
    # the window's slots count LANE_VEC registers each against the register file: 60 slots
    # of 4 channels fit 16 outer threads (128 threads), not 32
    space = result.template.space(kf.env("large", "fp32"))
    widest = {**result.template.default_config(), "LANE_VEC": 4, "LANE_WINDOW": 1,
              "ITEMS_PER_THREAD": 8, "OUT_Y": 4}
    assert space.rejection({**widest, "OUTER_THREADS": 16}) is None
    assert "* LANE_VEC) * ((32 / LANE_VEC) * OUTER_THREADS) <= 32768" in str(
        space.rejection({**widest, "OUTER_THREADS": 32}))


def _configs(name: str, kf: KernelFolder, result: TemplaterResult) -> list[dict[str, Any]]:
    """The default, the last all-ends corner (LANE_VEC = 4) and the lane's channels in mixed
    configs."""
    template = result.template
    env = kf.env(kf.check_shape, "fp32")
    base = template.default_config()
    items = "ITEMS_X" if "ITEMS_X" in base else "ITEMS_PER_THREAD"
    mixed = {
        "dwconv3_nhwc": [{**base, "LANE_VEC": 2, "LANE_WINDOW": 1, items: 4, "OUT_Y": 2,
                          "LANE_REGS": 1, "OUTER_THREADS": 2, "CONST_VIA": 1}],
        "act64": [{**base, "LANE_VEC": 4, "LANE_REGS": 1, "OUTER_THREADS": 2, items: 2},
                  {**base, "LANE_VEC": 2, "CONST_VIA": 1}],
        # 8 lanes of 4 channels x 4 outer threads: one whole warp (2 would be half of one,
        # out of the space)
        "tap5": [{**base, "LANE_VEC": 4, "LANE_WINDOW": 1, items: 4, "OUT_Y": 2,
                  "OUTER_THREADS": 4},
                 {**base, "LANE_VEC": 2, "CONST_VIA": 1, "LANE_REGS": 1, "OUT_Y": 4}],
    }[name]
    if name == "dwconv3_nhwc":  # its default and corners: tests/test_templater_const_via.py
        return mixed
    return [*host_sample(corner_configs(template, env)), *mixed]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", ["dwconv3_nhwc", "act64", "tap5"])
def test_each_spelling_prints_what_the_kernel_as_written_prints(name: str,
                                                                tmp_path: Path) -> None:
    kf, result = _lift(name, tmp_path / "folders")
    configs = _configs(name, kf, result)
    assert configs[-1]["LANE_VEC"] > 1
    # dwconv3_nhwc's last corner (LANE_VEC 4, CONST_VIA 1): tests/test_templater_const_via.py
    assert name == "dwconv3_nhwc" or any(c["LANE_VEC"] == 4 for c in configs)
    assert_prints_as_written(kf, result, configs, tmp_path)


@needs_nvcc
@pytest.mark.timeout(300)
def test_the_2d_spelling_does_not_spill_at_its_last_corner(tmp_path: Path) -> None:
    kf, result = _lift("tap5", tmp_path / "folders")
    template = result.template
    corner = corner_configs(template, kf.env(kf.check_shape, "fp32"))[-1]
    assert corner["LANE_VEC"] == 4, corner
    log = _ptxas_log(template.render(corner, "fp32").source, tmp_path, "corner")
    spills = _SPILLS.findall(log)
    assert spills and all(s == ("0", "0") for s in spills), f"{corner}:\n{log}"


@needs_nvcc
@pytest.mark.timeout(300)
def test_four_channels_a_lane_are_one_16_byte_load_and_store(tmp_path: Path) -> None:
    """dwconv3_nhwc at LANE_VEC = 4: every global access of the lane is 16 bytes (9 input
    loads, 1 store a pixel), the 9 taps' multiply-adds stay fused, 4 a pixel each; with
    CONST_VIA = 1 the 9 taps and the bias are 16-byte shared reads."""
    _kf, result = _lift("dwconv3_nhwc", tmp_path)
    config = {**result.template.default_config(), "LANE_VEC": 4}
    ptx = _ptx(config, result, tmp_path)
    assert len(re.findall(r"ld\.global(\.nc)?\.v4\.f32", ptx)) == 9
    assert len(re.findall(r"st\.global\.v4\.f32", ptx)) == 1
    assert not re.search(r"(ld|st)\.global(\.nc)?\.f32", ptx)
    assert len(re.findall(r"fma\.rn\.f32", ptx)) == 36
    # the taps and the bias from the aligned shared copy: one 16-byte read each
    shared = _ptx({**config, "CONST_VIA": 1}, result, tmp_path)
    assert len(re.findall(r"ld\.shared\.v4\.f32", shared)) == 10
    assert not re.search(r"ld\.shared\.f32", shared)


def _ptx(config: dict[str, Any], result: TemplaterResult, work: Path) -> str:
    label = f"c{abs(hash(tuple(sorted(config.items()))))}"
    src = write_file(work, work / f"{label}.cu", result.template.render(config, "fp32").source)
    assert NVCC is not None
    subprocess.run([NVCC, "-ptx", "-arch=sm_90", "-O3", "-o", str(work / f"{label}.ptx"),
                    str(src)], check=True, capture_output=True, timeout=120)
    return (work / f"{label}.ptx").read_text()


# -- refusals, each with its line --------------------------------------------------------

PLANAR = ACT64.replace("src[base + lane]", "src[(size_t)lane * npix + pix]")
STRIDED = ACT64.replace("gain[lane]", "gain[2 * lane]")
IN_CONDITION = ACT64.replace("if (pix >= npix) return;", "if (pix >= npix || lane >= 60) "
                             "return;")
TERNARY = ACT64.replace("v = fminf(fmaxf(v, 0.0f), 6.0f) * gain[lane];",
                        "v = v > 0.0f ? v : 0.125f * v;")


@pytest.mark.parametrize(("source", "at", "reason"), [
    (PLANAR, "src[(size_t)lane * npix + pix]", "is not the unit-stride (fastest) index of "
     "`src[(size_t)lane * npix + pix]`"),
    (STRIDED, "gain[2 * lane]", "is not the unit-stride (fastest) index of `gain[2 * lane]`"),
    (IN_CONDITION, "lane >= 60", "the lane `lane` is used in `(pix >= npix || lane >= 60)` "
     "other than as the unit-stride index"),
    (TERNARY, "v > 0.0f ?", "meets `>` in `v > 0.0f`"),
])
def test_a_lane_that_is_not_the_fastest_unit_stride_index_is_refused_with_the_line(
        source: str, at: str, reason: str, tmp_path: Path) -> None:
    assert source != ACT64
    _kf, result = _lift("act64", tmp_path, source)
    knobs = _knobs(result)
    assert "LANE_VEC" not in knobs and "CONST_VIA" in knobs, result.notes
    note = _note(result)
    assert reason in note, note
    assert f"(line {_line(source, at)})" in note, note
    assert "LANE_VEC" not in result.lifted.source


def test_an_odd_channel_count_is_refused_with_the_line(tmp_path: Path) -> None:
    source = ACT64.replace("constexpr int C = 64;", "constexpr int C = 27;")
    _kf, result = _lift("act64", tmp_path, source, channels=27)
    assert "LANE_VEC" not in _knobs(result) and "OUTER_THREADS" in _knobs(result)
    note = _note(result)
    assert "the 27 lanes of a pixel (or an access's offsets) do not divide by 2" in note
    assert f"(line {_line(source, 'const int lane =')})" in note, note
