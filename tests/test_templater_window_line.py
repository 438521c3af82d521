"""The register window of the 1-D column lift (workbench/templater/conv_line.py): every input
row a thread's OUT_Y outputs need is read into registers before the first output is summed.

Three spellings of our own besides the spent colfilter13: a 7-point vertical box with its taps
in ``__constant__``, clamped rows through ``min``/``max``, a 2-D block read through
``blockDim`` and an early return on both bounds; a zero-padded filter with an ``#ifndef``
radius, a row local and the add under an ``if`` (the window keeps a flag per row), a 1-D
block with the work inside the check and ``size_t`` indices; reads through ``__ldg`` of
``__restrict__`` pointers under ``#pragma unroll``, rows clamped by ``min``/``max``.
Checked: the lift applies; the rendered kernel gives the kernel's output bit for bit on the
host (default, all-ends and sampled configs); in the PTX every global read comes before the
first add (the window is filled first, so the reads are in flight together); ptxas -v
reports no spills at the all-ends corner and the tightest register cap.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import end_configs, lifted_template, run_on_host
from test_templater_conv_line import _MAIN as MAIN
from test_templater_conv_line import _PRELUDE as PRELUDE
from test_templater_conv_line import ENV, _configs, _variant, colfilter, lift

from workbench.core.write_policy import write_file

# name -> (source, block, grid); every kernel is k(out, in, [wts,] h, w) (no wts where the
# taps are the __constant__ `taps`, as colfilter13's)
KERNELS: dict[str, tuple[str, list[str], list[str]]] = {
    "box7_constant_clamped_2d_block": ("""
#define HALF 3
__constant__ float taps[2 * HALF + 1];
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  const int c = threadIdx.x + blockIdx.x * blockDim.x;
  const int r = threadIdx.y + blockIdx.y * blockDim.y;
  if (c >= w || r >= h) return;
  float box = 0.0f;
  for (int j = 0; j <= 2 * HALF; ++j)
    box += taps[j] * in[min(max(r + j - HALF, 0), h - 1) * w + c];
  out[r * w + c] = box;
}
""", ["32", "8"], ["ceil_div(w, 32)", "ceil_div(h, 8)"]),
    "zero_padded_ifndef_radius_flagged_rows": ("""
#ifndef RADIUS
#define RADIUS 4
#endif
extern "C" __global__ void k(float* out, const float* in, const float* wts, int h, int w) {
  int x = blockDim.x * blockIdx.x + threadIdx.x;
  int y = blockIdx.y;
  if (x < w) {
    float s = 0.0f;
    for (int t = -RADIUS; t <= RADIUS; t++) {
      const int yy = y + t;
      if (yy >= 0 && yy < h) s += wts[t + RADIUS] * in[(size_t)yy * w + x];
    }
    out[(size_t)y * w + x] = s;
  }
}
""", ["64"], ["ceil_div(w, 64)", "h"]),
    "ldg_restrict_unrolled_size_t": ("""
#define KR 4
extern "C" __global__ void k(float* __restrict__ out, const float* __restrict__ in,
                             const float* __restrict__ wts, int h, int w) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y;
  if (x >= w) return;
  float s = 0.f;
#pragma unroll
  for (int t = -KR; t <= KR; ++t) {
    const int yy = min(max(y + t, 0), h - 1);
    s += __ldg(&wts[t + KR]) * __ldg(&in[(size_t)yy * w + x]);
  }
  out[(size_t)y * w + x] = s;
}
""", ["128"], ["ceil_div(w, 128)", "h"]),
}

#: taps per kernel (the window is taps + OUT_Y - 1 rows)
TAPS = {"box7_constant_clamped_2d_block": 7, "zero_padded_ifndef_radius_flagged_rows": 9,
        "ldg_restrict_unrolled_size_t": 9, "colfilter13": 13}


def cases() -> dict[str, tuple[str, list[str], list[str]]]:
    return {**KERNELS, "colfilter13": colfilter()}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_column_lift_applies_to_our_spellings(name: str) -> None:
    lifted = lift(*KERNELS[name])
    assert {p.name for p in lifted.params} >= {"BLOCK_X", "BLOCK_Y", "OUT_Y"}, lifted.notes
    assert "register window" in lifted.source


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_window_gives_the_kernels_output_bit_for_bit(name: str) -> None:
    source, block, grid = KERNELS[name]
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
    program = "#define __ldg(p) (*(p))\n" + PRELUDE % ENV + "".join(parts) + \
        MAIN % {"checks": checks}
    with tempfile.TemporaryDirectory() as tmp:
        printed = run_on_host(Path(tmp), "window", program, flags=("-ffp-contract=off",))
    lines = printed.split("\n")
    assert lines[0] == "unwritten 0"
    same = dict(line.split() for line in lines[1:] if line)
    wrong = [configs[int(n) - 1] for n, ok in same.items() if ok != "1"]
    assert len(same) == len(configs) and not wrong, wrong


def _nvcc(tmp: Path, source: str, *args: str) -> str:
    cu = write_file(tmp, tmp / "k.cu", source, overwrite=True)
    done = subprocess.run(["nvcc", "-arch=sm_90", *args, str(cu)], check=True,
                          capture_output=True, text=True, timeout=300)
    return done.stderr + done.stdout


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", sorted([*KERNELS, "colfilter13"]))
def test_every_read_of_the_window_comes_before_the_first_add(name: str) -> None:
    template = lifted_template(lift(*cases()[name]))
    source = template.render({**template.default_config(), "OUT_Y": 8}, "fp32").source
    with tempfile.TemporaryDirectory() as tmp:
        _nvcc(Path(tmp), source, "-ptx", "-o", str(Path(tmp) / "k.ptx"))
        ptx = (Path(tmp) / "k.ptx").read_text()
    reads = [m.start() for m in re.finditer(r"\bld\.global", ptx)]
    adds = [m.start() for m in re.finditer(r"\b(fma\.rn|add\.f32|add\.rn\.f32)", ptx)]
    taps = TAPS[name]
    # the window's 8 + taps - 1 rows all read before the first add (weights in global
    # memory are read where each add uses them, as written; one pass would read one row
    # per add)
    assert adds and sum(r < min(adds) for r in reads) >= taps + 8 - 1, (len(reads), len(adds))


def _tightest(configs: list[dict[str, Any]]) -> dict[str, Any]:
    """The deepest walk under the tightest register cap among ``configs`` (the most threads
    per SM a minimum of resident blocks asks for, then the most outputs per thread)."""
    return max(configs, key=lambda c: (c["BLOCK_X"] * c["BLOCK_Y"] *
                                       max(1, c["MIN_BLOCKS_PER_SM"]), c["OUT_Y"]))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", sorted([*KERNELS, "colfilter13"]))
def test_the_corners_and_the_tightest_cap_compile_without_spilling(name: str) -> None:
    template = lifted_template(lift(*cases()[name]))
    corners = end_configs(template, ENV)
    deepest = [c for c in corners if c["OUT_Y"] == max(x["OUT_Y"] for x in corners)]
    # the all-ends corner at the deepest walk, and the space's deepest walk under its
    # tightest cap (where the constraint on the window's registers draws the line)
    checked = [_tightest(deepest), _tightest([dict(c) for c in template.space(ENV)])]
    with tempfile.TemporaryDirectory() as tmp:
        for config in checked:
            log = _nvcc(Path(tmp), template.render(config, "fp32").source, "-cubin",
                        "-Xptxas", "-v", "-o", str(Path(tmp) / "k.cubin"))
            assert "Used" in log and not re.search(r"[1-9]\d* bytes spill", log), (config, log)
