"""First contact of the lane-inner (channels-last, per-channel) family (issue 28): kernels
written the way other programmers would, not the corpus's spellings.

- ``dw3_global``: a 3 x 3 NHWC depthwise filter whose taps and bias live in GLOBAL memory (no
  ``__constant__`` table): the layout's transforms (items, outer threads, rows, the register
  window and its interior copy, LANE_VEC) are legal on the layout and the accesses alone, so
  it lifts what dwconv3_nhwc lifts but CONST_VIA / LANE_REGS (which are about constant
  memory). Before: the generic items wrap only.
- ``gelu_arg``: bias + GELU over [rows, C] with C a kernel argument on a (64, 4) block, a
  ``__device__`` helper: items and outer threads; LANE_VEC refused (C is not known to be even:
  a row's start may not be 8-byte aligned). Before: nothing lifted.
- ``dequant_i8``: per-channel int8 dequantisation, scales in global memory through
  ``__ldg``, ``unsigned`` indices, ``& (CH - 1)`` and ``>> 6`` for the lane and the pixel, a
  ``4u`` block offset (which crashed the templater's grid rule before): items and outer
  threads; LANE_VEC refused (the lane's input is int8, the lanes' vectors are float). On
  the host as ``dequant_i32`` (the same walk over int32 codes: the host simulation has no
  int8 buffers).

Each lifted spelling prints, bit for bit, what the kernel as written prints at its default,
its all-ends corners (sampled) and mixed configs (the host simulation).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers_templater import corner_configs, host_sample
from test_templater_const_via import assert_prints_as_written, write_folder

from workbench.core.kernel_folder import KernelFolder
from workbench.templater import offline_template
from workbench.templater.records import TemplaterResult

DW3_GLOBAL = """
// 3x3 NHWC depthwise, filter [3][3][32] and bias in global memory
#define C 32
extern "C" __global__ void k(float* out, const float* in, const float* filt,
                             const float* bias, int h, int w) {
  const int c = threadIdx.x % C;
  const int x = blockIdx.x * 8 + threadIdx.x / C;
  const int y = blockIdx.y;
  if (x >= w) return;
  float acc = bias[c];
  for (int dy = -1; dy <= 1; ++dy) {
    const int yy = y + dy;
    if (yy < 0 || yy >= h) continue;
    for (int dx = -1; dx <= 1; ++dx) {
      const int xx = x + dx;
      if (xx < 0 || xx >= w) continue;
      acc += in[((size_t)yy * w + xx) * C + c] * filt[((dy + 1) * 3 + dx + 1) * C + c];
    }
  }
  out[((size_t)y * w + x) * C + c] = acc;
}
"""

GELU_ARG = """
// y[r][c] = gelu(x[r][c] + b[c]) over [rows, C], C a kernel argument
__device__ __forceinline__ float gelu(float v) {
  return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
}
extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ x,
                             const float* __restrict__ b, int rows, int C) {
  int c = threadIdx.x;
  int r = blockIdx.x * blockDim.y + threadIdx.y;
  if (r >= rows || c >= C) return;
  y[(size_t)r * C + c] = gelu(x[(size_t)r * C + c] + b[c]);
}
"""

DEQUANT = """
// per-channel int8 dequant: y[r][c] = (float)q[r][c] * scale[c], 64 channels
#ifndef CH
#define CH 64
#endif
extern "C" __global__ void k(float* __restrict__ y, const signed char* __restrict__ q,
                             const float* __restrict__ scale, unsigned n) {
  unsigned c = threadIdx.x & (CH - 1);
  unsigned r = blockIdx.x * 4u + (threadIdx.x >> 6);
  if (r < n) y[r * CH + c] = (float)q[r * CH + c] * __ldg(&scale[c]);
}
"""

#: the same walk over int32 codes (the host simulation has no int8 buffers)
DEQUANT32 = DEQUANT.replace("const signed char*", "const int*")

_ROWS: list[tuple[str, str, str, Any]] = [("y", "f32", "out", ["rows", 64]),
                                          ("x", "f32", "in", ["rows", 64]),
                                          ("b", "f32", "in", [64]),
                                          ("rows", "i32", "scalar", "rows"),
                                          ("C", "i32", "scalar", 64)]


def _folder(name: str, root: Path) -> KernelFolder:
    folder = root / name
    if name == "dw3_global":
        return write_folder(folder, DW3_GLOBAL, ["ceil_div(w, 8)", "h"], ["256"],
                            [("out", "f32", "out", ["h", "w", 32]),
                             ("in", "f32", "in", ["h", "w", 32]),
                             ("filt", "f32", "in", [288]), ("bias", "f32", "in", [32]),
                             ("h", "i32", "scalar", "h"), ("w", "i32", "scalar", "w")],
                            {"h": 11, "w": 29}, [])
    if name == "gelu_arg":
        return write_folder(folder, GELU_ARG, ["ceil_div(rows, 4)"], ["64", "4"], _ROWS,
                            {"rows": 23}, [])
    wide = name == "dequant_i32"
    return write_folder(folder, DEQUANT32 if wide else DEQUANT, ["ceil_div(n, 4)"], ["256"],
                        [("y", "f32", "out", ["n", 64]),
                         ("q", "i32" if wide else "i8", "in", ["n", 64]),
                         ("scale", "f32", "in", [64]), ("n", "i32", "scalar", "n")],
                        {"n": 19}, [])


def _lift(name: str, root: Path) -> tuple[KernelFolder, TemplaterResult]:
    kf = _folder(name, root)
    return kf, offline_template(kf)


def _note(result: TemplaterResult, knob: str) -> str:
    return next(n for n in result.notes if n.startswith(f"{knob}:"))


@pytest.mark.parametrize(("name", "knobs", "refused"), [
    ("dw3_global", {"ITEMS_PER_THREAD", "OUTER_THREADS", "LANE_VEC", "OUT_Y", "LANE_WINDOW"},
     {}),
    ("gelu_arg", {"ITEMS_X", "OUTER_THREADS"},
     {"LANE_VEC": "do not divide by 2: a lane cannot own 2 or 4 whole channels"}),
    ("dequant_i8", {"ITEMS_PER_THREAD", "OUTER_THREADS"},
     {"LANE_VEC": "`q` is neither a float pointer parameter nor a float __constant__ table"}),
    ("dequant_i32", {"ITEMS_PER_THREAD", "OUTER_THREADS"},
     {"LANE_VEC": "`q` is neither a float pointer parameter nor a float __constant__ table"}),
])
def test_each_spelling_lifts_the_layouts_knobs(name: str, knobs: set[str],
                                               refused: dict[str, str],
                                               tmp_path: Path) -> None:
    _kf, result = _lift(name, tmp_path)
    lifted = {p.name for p in result.lifted.params}
    assert knobs <= lifted, result.notes
    assert not {"CONST_VIA", "LANE_REGS"} & lifted  # no constant table: nothing to stage
    for knob, reason in refused.items():
        note = _note(result, knob)
        assert knob not in lifted and reason in note, note


def test_the_global_filter_gets_the_window_and_its_interior_copy(tmp_path: Path) -> None:
    _kf, result = _lift("dw3_global", tmp_path)
    assert _note(result, "WINDOW_INTERIOR").startswith("WINDOW_INTERIOR: applied")
    source = result.lifted.source
    # the filter and the bias are the lane's channels too (one vector access each)
    assert "(*wb_lv_ptr(&(filt[((dy + 1) * 3 + dx + 1) * C + c])))" in source
    assert "(*wb_lv_ptr(&(bias[c])))" in source
    assert "wb_lv_float wb_win0[OUT_Y + 2][ITEMS_PER_THREAD + 2];" in source


def _configs(kf: KernelFolder, result: TemplaterResult) -> list[dict[str, Any]]:
    template = result.template
    base = dict(template.default_config())
    names = set(base)
    mixed = [{**base, "OUTER_THREADS": 2, "ITEMS_PER_THREAD" if "ITEMS_PER_THREAD" in names
              else "ITEMS_X": 4}]
    if "LANE_WINDOW" in names:
        mixed += [{**base, "LANE_WINDOW": 1, "ITEMS_PER_THREAD": 4, "OUT_Y": 4, "LANE_VEC": 2,
                   "OUTER_THREADS": 2},
                  {**base, "LANE_WINDOW": 0, "ITEMS_PER_THREAD": 2, "OUT_Y": 2, "LANE_VEC": 4}]
    return [base, *host_sample(corner_configs(template, kf.env(kf.check_shape, "fp32"))),
            *mixed]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", ["dw3_global", "gelu_arg", "dequant_i32"])
def test_each_spelling_prints_what_the_kernel_as_written_prints(name: str,
                                                                tmp_path: Path) -> None:
    kf, result = _lift(name, tmp_path / "folders")
    assert_prints_as_written(kf, result, _configs(kf, result), tmp_path)
