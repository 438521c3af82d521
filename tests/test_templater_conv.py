"""Output rows per thread for 2-D convolutions (workbench/templater/conv.py).

Three spellings of a 2-D window sum (a constant-memory filter with ``#define KS``; a pointer
filter with a ``RADIUS`` macro, a centred window and the check around the work; clamped
edges) each lift OUT_Y with the grid's y divisor tied to BLOCK_Y * OUT_Y, launch as written
at the defaults, compile with nvcc at the default and corners, and load each input value
once per input row (the PTX's ld.global count is KS * (KS + OUT_Y - 1), not KS * KS * OUT_Y);
kernels the analysis cannot follow are refused with the line; (slow) a host run of the
rendered kernel at sampled configs gives the baseline's output exactly.
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
from helpers_templater import (
    COOPERATIVE_BLOCK,
    corner_configs,
    host_sample,
    lifted_template,
    run_on_host,
)

from workbench.core.write_policy import write_file
from workbench.templater import LiftedSource, lift_kernel

# name -> (source, block, extra kernel arguments before h, w)
CONVS: dict[str, tuple[str, list[str], str]] = {
    "constant_filter_ks_define": ("""
#define KS 5
#define R (KS / 2)
__constant__ float filt[KS * KS];
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  int x = blockIdx.x * 16 + threadIdx.x;
  int y = blockIdx.y * 16 + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
  for (int i = 0; i < KS; ++i) {
    for (int j = 0; j < KS; ++j) {
      int yy = y + i - R, xx = x + j - R;
      if (yy >= 0 && yy < h && xx >= 0 && xx < w) acc += filt[i * KS + j] * in[yy * w + xx];
    }
  }
  out[y * w + x] = acc;
}
""", ["16", "16"], ""),
    "pointer_filter_radius_centred": ("""
#define RADIUS 2
#define WIDTH (2 * RADIUS + 1)
extern "C" __global__ void k(float* out, const float* in, const float* wts, int h, int w) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = threadIdx.y + blockIdx.y * 8;
  if (col < w && row < h) {
    float sum = 0.f;
    for (int dy = -RADIUS; dy <= RADIUS; dy++) {
      const int r = row + dy;
      for (int dx = -RADIUS; dx <= RADIUS; dx++) {
        const int c = col + dx;
        const float v = (0 <= r && r < h && 0 <= c && c < w) ? in[(long long)r * w + c] : 0.f;
        sum += wts[(dy + RADIUS) * WIDTH + (dx + RADIUS)] * v;
      }
    }
    out[(long long)row * w + col] = 2.0f * sum;
  }
}
""", ["32", "8"], "wts.data(), "),
    "clamped_edges_3x3": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 4 + threadIdx.y;
  if (y >= h || x >= w) return;
  float s = 0.0f;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      s += in[min(max(y + i - 1, 0), h - 1) * w + min(max(x - 1 + j, 0), w - 1)] *
           (float)(1 + i * 3 + j);
  out[y * w + x] = s;
}
""", ["32", "4"], ""),
}

ENV = {"h": 37, "w": 53, "elem_bytes": 4}


def lift(source: str, block: list[str]) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=[f"ceil_div(w, {block[0]})",
                                                f"ceil_div(h, {block[1]})"],
                       block=block, scalars={"h": "h", "w": "w"})


@pytest.mark.parametrize("name", sorted(CONVS))
def test_every_conv_spelling_lifts_out_y_with_a_tied_grid(name: str) -> None:
    source, block, _extra = CONVS[name]
    lifted = lift(source, block)
    applied = [f for f in lifted.findings if f.transform == "OUT_Y" and f.applied]
    assert applied, lifted.notes
    assert {"OUT_Y"} <= {p.name for p in lifted.params}
    bx, by = lifted.block
    assert lifted.grid == (f"ceil_div(w, {bx} * OUT_X)", f"ceil_div(h, {by} * OUT_Y)")
    template = lifted_template(lifted)
    default = template.default_config()
    assert default["OUT_Y"] == default["OUT_X"] == 1
    assert [default[bx], default[by]] == [int(b) for b in block]
    want = [-(-ENV["w"] // int(block[0])), -(-ENV["h"] // int(block[1]))]
    assert list(template.launch_for(default, ENV).grid)[:2] == want  # as written
    assert list(template.launch_for({**default, "OUT_Y": 4}, ENV).grid)[:2] == \
        [want[0], -(-ENV["h"] // (4 * int(block[1])))]
    assert list(template.launch_for({**default, "OUT_X": 2}, ENV).grid)[:2] == \
        [-(-ENV["w"] // (2 * int(block[0]))), want[1]]
    # no wrapping transform ran on top: the work per thread is the rows, not whole blocks
    assert not any(p.name.startswith("ITEMS_") for p in lifted.params)


REFUSED = {
    "window_not_compile_time": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w, int ks) {
  int x = blockIdx.x * 16 + threadIdx.x;
  int y = blockIdx.y * 16 + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
  for (int i = 0; i < ks; ++i)
    for (int j = 0; j < ks; ++j)
      if (y + i < h && x + j < w) acc += in[(y + i) * w + x + j];
  out[y * w + x] = acc;
}
""", "not a compile-time size", 7),
    "write_inside_the_loop": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  int x = blockIdx.x * 16 + threadIdx.x;
  int y = blockIdx.y * 16 + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      if (y + i < h && x + j < w) acc += in[(y + i) * w + x + j];
    }
    out[y * w + x] = acc;
  }
  out[y * w + x] = acc;
}
""", "is neither a declaration nor the inner window loop", 11),
    "row_loop_inside": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  int x = blockIdx.x * 16 + threadIdx.x;
  int y = blockIdx.y * 16 + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 3; ++i)
      if (y + i < h && x + j < w) acc += in[(y + i) * w + x + j];
  out[y * w + x] = acc;
}
""", "the row loop is the inner loop", 9),
    "row_read_not_through_the_sum": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  int x = blockIdx.x * 16 + threadIdx.x;
  int y = blockIdx.y * 16 + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      if (2 * y + i < h && x + j < w) acc += in[(2 * y + i) * w + x + j];
  out[y * w + x] = acc;
}
""", "other than through y + i", 9),  # y + 2 * i is a dilated window (test_s35_dil_window)
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_convs_the_analysis_cannot_follow_are_refused_with_the_line(name: str) -> None:
    source, reason, row = REFUSED[name]
    lifted = lift(source, ["16", "16"])
    refusals = [f for f in lifted.findings if f.transform == "OUT_Y" and not f.applied]
    assert refusals, lifted.notes
    assert reason in refusals[0].reason, refusals[0].reason
    assert refusals[0].line == row
    assert "OUT_Y" not in {p.name for p in lifted.params}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv_templates_compile_at_default_and_corners(name: str, compiler: Any) -> None:
    source, block, _extra = CONVS[name]
    template = lifted_template(lift(source, block))
    for config in host_sample(corner_configs(template, ENV)):
        result = compiler.compile(template.render(config, "fp32"))
        assert result.ok, f"{config}: {result.error_summary}\n{result.log[-1500:]}"


def _ld_global(source: str, work: Path) -> int:
    cu = write_file(work, work / "k.cu", source, overwrite=True)
    ptx = work / "k.ptx"
    subprocess.run(["nvcc", "-arch=sm_90", "-ptx", "-o", str(ptx), str(cu)], check=True,
                   capture_output=True, timeout=300)
    return len(re.findall(r"\bld\.global", ptx.read_text()))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize(("name", "ks"), [("constant_filter_ks_define", 5),
                                          ("clamped_edges_3x3", 3)])
def test_each_input_value_is_loaded_once_per_input_row(name: str, ks: int) -> None:
    source, block, _extra = CONVS[name]
    template = lifted_template(lift(source, block))
    default = dict(template.default_config())
    with tempfile.TemporaryDirectory() as tmp:
        counts = {oy: _ld_global(template.render({**default, "OUT_Y": oy}, "fp32").source,
                                 Path(tmp)) for oy in (1, 2, 4)}
    # KS x KS loads as written; KS more per extra output row (wrapping would multiply)
    assert counts == {oy: ks * (ks + oy - 1) for oy in (1, 2, 4)}, counts


# -- host run of the rendered kernel (threads as coroutines: USE_SMEM's barrier holds) -----

_MAIN = r"""
int main() {
  const int h = %(h)d, w = %(w)d;
  std::vector<float> in(h * w), out(h * w, -7.0f), wts(64);
  for (int i = 0; i < h * w; ++i) in[i] = (float)((i * 37) %% 17 - 8) / 8.0f;
  for (int i = 0; i < 64; ++i) wts[i] = (float)((i * 13) %% 11 - 5) / 4.0f;
  %(fill)s
  wb_launch({%(gx)d, %(gy)d, 1}, {%(bx)d, %(by)d, 1},
            [&] { k(out.data(), in.data(), %(extra)sh, w); });
  for (float v : out) std::printf("%%.9g\n", v);
  return 0;
}
"""


def host_run(name: str, source: str, grid: list[int], block: list[int],
             work: Path) -> list[float]:
    extra = CONVS[name][2]
    fill = ("for (unsigned i = 0; i < sizeof(filt) / sizeof(float); ++i) "
            "filt[i] = wts[i % 64];") if "filt" in source else ""
    main = _MAIN % {**ENV, "gx": grid[0], "gy": grid[1], "bx": block[0], "by": block[1],
                    "extra": extra, "fill": fill}
    printed = run_on_host(work, "host", COOPERATIVE_BLOCK + "#define __constant__\n" + source +
                          main, flags=("-ffp-contract=off",))
    return [float(v) for v in printed.split()]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("name", sorted(CONVS))
def test_sampled_conv_configs_give_the_baselines_output(name: str) -> None:
    source, block, _extra = CONVS[name]
    template = lifted_template(lift(source, block))
    space = list(template.space(ENV))
    rng = random.Random(28)
    configs = [*corner_configs(template, ENV)[1:], *(dict(c) for c in rng.sample(space, 3))]
    configs += [{**template.default_config(), "OUT_Y": oy} for oy in (2, 4, 8)]
    configs += [{**template.default_config(), "OUT_X": 2, "OUT_Y": 4, "USE_SMEM": 1}]
    b = [int(v) for v in block]
    with tempfile.TemporaryDirectory() as tmp:
        want = host_run(name, source, [-(-ENV["w"] // b[0]), -(-ENV["h"] // b[1])], b,
                        Path(tmp))
        assert -7.0 not in want and any(want)
        for config in host_sample(configs):
            launch = template.launch_for(config, ENV)
            got = host_run(name, template.render(config, "fp32").source, list(launch.grid),
                           list(launch.block), Path(tmp))
            assert got == want, config
