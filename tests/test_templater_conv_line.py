"""Outputs per thread down a column for 1-D tap loops (workbench/templater/conv_line.py).

The spent colfilter13 (a ``while`` tap loop, taps in ``__constant__``, mirrored rows through a
helper, a 1-D block over a 2-D grid with ``y = blockIdx.y`` and no row check) and two
spellings of our own (a ``for`` loop over a 2-D block with clamped rows in ternaries and the
work inside the check; a ``while`` loop from 0 with zero padding under an ``if``, ``fmaf``
and a row local, a 1-D block read through ``blockDim.x``) lift BLOCK_X, BLOCK_Y and OUT_Y
with the grid's y divisor tied to BLOCK_Y * OUT_Y; a host run (all threads in turn, no
contraction) of the rendered kernel at the default, every all-ends config and sampled
configs gives the kernel's output bit for bit; nvcc compiles the deepest walk without
spilling; kernels outside what the analysis follows are refused with the line.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import FULL_MATRIX, end_configs, host_sample, lifted_template, run_on_host

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.template import KernelTemplate
from workbench.core.write_policy import write_file
from workbench.templater import LiftedSource, lift_kernel

ROOT = Path(__file__).resolve().parents[1] / "benchmarks"
COLFILTER = ROOT / "corpus_compute_unseen5" / "colfilter13"

# name -> (source, block, grid); every kernel is k(out, in, wts, h, w)
LINES: dict[str, tuple[str, list[str], list[str]]] = {
    "for_2d_block_clamped_inside_check": ("""
constexpr int R = 3;
extern "C" __global__ void k(float* out, const float* in, const float* wts, int h, int w) {
  const int col = threadIdx.x + blockIdx.x * 32;
  const int row = blockIdx.y * 4 + threadIdx.y;
  if (col < w && row < h) {
    float acc = 0.5f;
    for (int d = -R; d < R + 1; d++) {
      const int rr = row + d < 0 ? 0 : (row + d > h - 1 ? h - 1 : row + d);
      acc += in[(long long)rr * w + col] * wts[d + R];
    }
    out[(long long)row * w + col] = 2.0f * acc;
  }
}
""", ["32", "4"], ["ceil_div(w, 32)", "ceil_div(h, 4)"]),
    "while_1d_block_zero_padded_fmaf": ("""
#ifndef TAPS
#define TAPS 5
#endif
extern "C" __global__ void k(float* out, const float* in, const float* wts, int h, int w) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  int r0 = blockIdx.y;
  if (i >= (unsigned)w) return;
  float s = 0.0f;
  int q = 0;
  while (q < TAPS) {
    int src_row = r0 + q - TAPS / 2;
    if (src_row >= 0 && src_row < h) s = fmaf(wts[q], in[src_row * w + (int)i], s);
    q++;
  }
  out[r0 * w + (int)i] = s;
}
""", ["128"], ["ceil_div(w, 128)", "h"]),
    "pragma_acc_before_check_pointer_column": ("""
#define K 7
extern "C" __global__ void k(float* out, const float* in, const float* wts, int h, int w) {
  int gx = blockIdx.x * blockDim.x + threadIdx.x;
  int gy = blockIdx.y * blockDim.y + threadIdx.y;
  float total = 0.0f;
  if (gx < w && gy < h) {
    const float* column = in + gx;
#pragma unroll
    for (int k = 0; k < K; k += 1) {
      const int src_row = min(max(gy + k - K / 2, 0), h - 1);
      total = total + wts[k] * column[src_row * w];
    }
    out[gy * w + gx] = total;
  }
}
""", ["64", "2"], ["ceil_div(w, 64)", "ceil_div(h, 2)"]),
}

REFUSED: dict[str, tuple[str, str]] = {
    # the weight reads the row: it would differ between one thread's outputs
    "weight_reads_the_row": ("""
extern "C" __global__ void k(float* out, const float* in, const float* wts, int h, int w) {
  int x = blockIdx.x * 64 + threadIdx.x;
  int y = blockIdx.y;
  if (x >= w) return;
  float s = 0.0f;
  for (int t = -1; t <= 1; ++t)
    s += wts[y % 4 + t + 1] * in[min(max(y + t, 0), h - 1) * w + x];
  out[y * w + x] = s;
}
""", "the weight `wts[y % 4 + t + 1]` depends on y"),
    # the counter is read after the loop
    "counter_read_after": ("""
extern "C" __global__ void k(float* out, const float* in, const float* wts, int h, int w) {
  int x = blockIdx.x * 64 + threadIdx.x;
  int y = blockIdx.y;
  if (x >= w) return;
  float s = 0.0f;
  int t = 0;
  while (t < 3) { s += wts[t] * in[min(y + t, h - 1) * w + x]; ++t; }
  out[y * w + x] = s * t;
}
""", "the tap counter t is read after its loop"),
    # a conversion whose result type the analysis does not know: the register would convert
    "value_of_unknown_type": ("""
extern "C" __global__ void k(float* out, const __half* in, const float* wts, int h, int w) {
  int x = blockIdx.x * 64 + threadIdx.x;
  int y = blockIdx.y;
  if (x >= w) return;
  float s = 0.0f;
  for (int t = 0; t < 3; ++t) s += wts[t] * __half2float(in[min(y + t, h - 1) * w + x]);
  out[y * w + x] = s;
}
""", "the type of the value `__half2float("),
}

ENV = {"h": 19, "w": 45, "elem_bytes": 4}


def lift(source: str, block: list[str], grid: list[str]) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=grid, block=block,
                       scalars={"h": "h", "w": "w"})


def colfilter() -> tuple[str, list[str], list[str]]:
    folder = load_kernel_folder(COLFILTER)
    rules = folder.baseline.launch.to_dict()
    # the entry renamed k, as the other spellings' (the host harness calls k)
    source = folder.baseline.source.replace("colfilter13(", "k(")
    return source, list(rules["block"]), list(rules["grid"])


def cases() -> dict[str, tuple[str, list[str], list[str]]]:
    return {**LINES, "colfilter13": colfilter()}


@pytest.mark.parametrize("name", sorted([*LINES, "colfilter13"]))
def test_every_line_filter_lifts_rows_per_thread_with_a_tied_grid(name: str) -> None:
    source, block, grid = cases()[name]
    lifted = lift(source, block, grid)
    names = [p.name for p in lifted.params]
    assert names[:3] == ["BLOCK_X", "BLOCK_Y", "OUT_Y"], lifted.notes
    assert lifted.block == ("BLOCK_X", "BLOCK_Y")
    assert "BLOCK_Y * OUT_Y" in lifted.grid[1] and "BLOCK_X" in lifted.grid[0]
    template = lifted_template(lifted)
    default = template.default_config()
    launch = template.launch_for(default, ENV)
    b = [int(v) for v in block] + [1] * (2 - len(block))
    assert list(launch.block)[:2] == b
    assert list(launch.grid)[:2] == [-(-ENV["w"] // b[0]), -(-ENV["h"] // b[1])]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_line_filters_the_analysis_cannot_follow_are_refused_with_the_line(name: str) -> None:
    source, why = REFUSED[name]
    lifted = lift(source, ["64"], ["ceil_div(w, 64)", "h"])
    assert "OUT_Y" not in {p.name for p in lifted.params}
    notes = [n for n in lifted.notes if n.startswith("OUT_Y: not applied") and why in n]
    assert notes and re.search(r"\(line \d+\)$", notes[0]), lifted.notes


# -- host run: every thread in turn (no barriers here), all configs in one program ---------

_PRELUDE = r"""
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>
struct wb_dim3 { unsigned x, y, z; };
static wb_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __constant__ static
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__
using std::min;
using std::max;
template <class F> static void wb_launch(wb_dim3 g, wb_dim3 b, F body) {
  gridDim = g; blockDim = b;
  for (unsigned by = 0; by < g.y; ++by) for (unsigned bx = 0; bx < g.x; ++bx)
    for (unsigned ty = 0; ty < b.y; ++ty) for (unsigned tx = 0; tx < b.x; ++tx) {
      blockIdx = {bx, by, 0}; threadIdx = {tx, ty, 0}; body();
    }
}
static const int h = %(h)d, w = %(w)d;
static std::vector<float> in_(h * w), wts_(64);
"""

_VARIANT = r"""
%(defines)s
namespace v%(n)d {
%(source)s
static std::vector<float> run() {
  std::vector<float> out(h * w, -7.0f);
  %(fill)s
  wb_launch({%(gx)d, %(gy)d, 1}, {%(bx)d, %(by)d, 1},
            [&] { k(out.data(), in_.data(), %(wts)sh, w); });
  return out;
}
}
%(undefs)s
"""

_MAIN = r"""
int main() {
  for (int i = 0; i < h * w; ++i) in_[i] = (float)((i * 37) %% 17 - 8) / 7.0f;
  for (int i = 0; i < 64; ++i) wts_[i] = (float)((i * 13) %% 11 - 5) / 3.0f;
  std::vector<float> want = v0::run();
  int bad = 0;
  for (float v : want) bad += v == -7.0f;
  std::printf("unwritten %%d\n", bad);
%(checks)s
  return 0;
}
"""


def _variant(n: int, source: str, config: dict[str, Any], launch: tuple[list[int], list[int]]
             ) -> str:
    grid, block = launch
    body = source.replace('extern "C" ', "")
    constant = "taps" if "__constant__ float taps" in source else ""
    fill = f"for (int i = 0; i < (int)(sizeof({constant}) / sizeof(float)); ++i) " \
        f"{constant}[i] = wts_[i];" if constant else ""
    return _VARIANT % {
        "defines": "\n".join(f"#define {k_} {v}" for k_, v in config.items()),
        "undefs": "\n".join(f"#undef {k_}" for k_ in config) +
        "\n#undef RAD\n#undef TAPS\n#undef K",
        "n": n, "source": body, "fill": fill, "gx": grid[0], "gy": grid[1],
        "bx": block[0], "by": [*block, 1][1], "wts": "" if constant else "wts_.data(), "}


def _configs(template: KernelTemplate) -> list[dict[str, Any]]:
    space = list(template.space(ENV))
    rng = random.Random(28)
    default = dict(template.default_config())
    # every all-ends config under WORKBENCH_FULL_MATRIX=1, else the first and the last
    return [default, *host_sample(end_configs(template, ENV)),
            *(dict(c) for c in rng.sample(space, 6 if FULL_MATRIX else 3)),
            {**default, "OUT_Y": 16}, {**default, "BLOCK_Y": 8, "OUT_Y": 4}]


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("name", sorted([*LINES, "colfilter13"]))
def test_default_all_ends_and_sampled_configs_give_the_kernels_output(name: str) -> None:
    source, block, grid = cases()[name]
    template = lifted_template(lift(source, block, grid))
    b = [int(v) for v in block] + [1] * (2 - len(block))
    parts = [_variant(0, source, {}, ([-(-ENV["w"] // b[0]), -(-ENV["h"] // b[1])], b))]
    configs = _configs(template)
    for n, config in enumerate(configs, start=1):
        launch = template.launch_for(config, ENV)
        parts.append(_variant(n, template.render(config, "fp32").source, config,
                              (list(launch.grid), list(launch.block))))
    checks = "\n".join(f'  std::printf("%d %d\\n", {n}, (int)(v{n}::run() == want));'
                       for n in range(1, len(configs) + 1))
    program = _PRELUDE % ENV + "".join(parts) + _MAIN % {"checks": checks}
    with tempfile.TemporaryDirectory() as tmp:
        printed = run_on_host(Path(tmp), "lines", program, flags=("-ffp-contract=off",))
    lines = printed.split("\n")
    assert lines[0] == "unwritten 0"
    same = dict(line.split() for line in lines[1:] if line)
    wrong = [configs[int(n) - 1] for n, ok in same.items() if ok != "1"]
    assert len(same) == len(configs) and not wrong, wrong


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_deepest_column_walk_compiles_without_spilling() -> None:
    source, block, grid = colfilter()
    template = lifted_template(lift(source, block, grid))
    config = {**template.default_config(), "OUT_Y": 16, "BLOCK_X": 64}
    with tempfile.TemporaryDirectory() as tmp:
        cu = write_file(Path(tmp), Path(tmp) / "k.cu", template.render(config, "fp32").source,
                        overwrite=True)
        done = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o",
                               str(Path(tmp) / "k.cubin"), str(cu)], check=True,
                              capture_output=True, text=True, timeout=300)
    log = done.stderr + done.stdout
    assert "Used" in log and not re.search(r"[1-9]\d* bytes spill", log), log


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_each_input_row_is_loaded_once_per_thread() -> None:
    source, block, grid = colfilter()
    template = lifted_template(lift(source, block, grid))
    counts = {}
    with tempfile.TemporaryDirectory() as tmp:
        for oy in (1, 4, 16):
            cu = write_file(Path(tmp), Path(tmp) / "k.cu", template.render(
                {**template.default_config(), "OUT_Y": oy}, "fp32").source, overwrite=True)
            subprocess.run(["nvcc", "-arch=sm_90", "-ptx", "-o", str(Path(tmp) / "k.ptx"),
                            str(cu)], check=True, capture_output=True, timeout=300)
            ptx = (Path(tmp) / "k.ptx").read_text()
            counts[oy] = (len(re.findall(r"\bld\.global", ptx)),
                          len(re.findall(r"\bld\.const", ptx)))
    # 13 + OUT_Y - 1 input rows (wrapping would load 13 * OUT_Y); the 13 taps once
    assert counts == {oy: (13 + oy - 1, 13) for oy in (1, 4, 16)}, counts
