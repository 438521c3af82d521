"""Output columns per thread for 2-D convolutions (OUT_X in workbench/templater/conv.py).

Three more spellings of a 2-D window sum than tests/test_templater_conv.py (a 5x5 Gaussian
with ``#define R 2``, a 2-D ``__constant__`` weight array, centred ``#pragma unroll`` loops
without braces, clamped edges and ``blockDim`` offsets; a 3x3 Laplacian with literal radius 1,
ternary weights, zero padding under ``r >= 0 && r < h && c >= 0 && c < w`` and a
pointer-offset load; a "valid" 3x3 convolution without padding whose output is ``(h - 2) x
(w - 2)``, where columns past the check must read nothing) each lift OUT_X beside OUT_Y with
the grid's x divisor ``BLOCK_X * OUT_X``, and (host run with g++) give the kernel's outputs at
the default, the corners and configs with several columns and rows per thread, with and
without USE_SMEM (the block's inputs staged in shared memory before the check). A window
read at ``2 * x + j`` (a strided convolution) keeps OUT_Y and refuses OUT_X with the line.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from helpers_templater import (
    COOPERATIVE_BLOCK,
    corner_configs,
    host_sample,
    lifted_template,
    run_on_host,
)

from workbench.templater import LiftedSource, lift_kernel

# name -> (source, block)
SPELLINGS: dict[str, tuple[str, list[str]]] = {
    "gaussian5_constant_2d_centred": ("""
#define R 2
__constant__ float gauss[2 * R + 1][2 * R + 1];
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= h || col >= w) return;
  float acc = 0.0f;
#pragma unroll
  for (int dy = -R; dy <= R; ++dy)
#pragma unroll
    for (int dx = -R; dx <= R; ++dx)
      acc += gauss[dy + R][dx + R] * in[min(max(row + dy, 0), h - 1) * w + min(max(col + dx, 0), w - 1)];
  out[row * w + col] = acc;
}
""", ["32", "4"]),
    "laplacian3_literal_zero_pad": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  int x = threadIdx.x + blockIdx.x * 16;
  int y = threadIdx.y + blockIdx.y * 16;
  if (x < w && y < h) {
    float s = 0.f;
    for (int i = 0; i < 3; i++) {
      for (int j = 0; j < 3; j++) {
        const int r = y + i - 1;
        const int c = x + j - 1;
        const float wt = (i == 1 && j == 1) ? -8.f : 1.f;
        if (r >= 0 && r < h && c >= 0 && c < w) s += wt * *(in + r * w + c);
      }
    }
    out[y * w + x] = s;
  }
}
""", ["16", "16"]),
    "valid_conv_no_padding": ("""
#define K 3
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  int x = blockIdx.x * 8 + threadIdx.x;
  int y = blockIdx.y * 8 + threadIdx.y;
  if (x >= w - K + 1 || y >= h - K + 1) return;
  float acc = 0.0f;
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < K; ++j) acc += (float)(i * K + j + 1) * in[(y + i) * w + (x + j)];
  out[y * (w - K + 1) + x] = 0.5f * acc;
}
""", ["8", "8"]),
}

H, W = 37, 53
ENV = {"h": H, "w": W, "elem_bytes": 4}


def lift(source: str, block: list[str]) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=[f"ceil_div(w, {block[0]})",
                                                f"ceil_div(h, {block[1]})"],
                       block=block, scalars={"h": "h", "w": "w"})


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_spelling_lifts_out_x_beside_out_y(name: str) -> None:
    source, block = SPELLINGS[name]
    lifted = lift(source, block)
    assert any(f.transform == "OUT_X" and f.applied for f in lifted.findings), lifted.notes
    assert any(f.transform == "OUT_Y" and f.applied for f in lifted.findings), lifted.notes
    bx, by = lifted.block
    assert lifted.grid == (f"ceil_div(w, {bx} * OUT_X)", f"ceil_div(h, {by} * OUT_Y)")
    template = lifted_template(lifted)
    default = template.default_config()
    assert default["OUT_X"] == default["OUT_Y"] == 1
    grid = template.launch_for({**default, "OUT_X": 4}, ENV).grid
    assert list(grid)[:2] == [-(-W // (4 * int(block[0]))), -(-H // int(block[1]))]


def test_a_strided_window_keeps_out_y_and_refuses_out_x_with_the_line() -> None:
    source = SPELLINGS["valid_conv_no_padding"][0].replace(
        "in[(y + i) * w + (x + j)]", "in[(y + i) * w + (2 * x + j)]").replace(
        "x >= w - K + 1", "2 * x >= w - K + 1")
    lifted = lift(source, ["8", "8"])
    refused = [f for f in lifted.findings if f.transform == "OUT_X" and not f.applied]
    assert refused and "other than through x + j" in refused[0].reason, lifted.notes
    assert refused[0].line == 9
    assert any(f.transform == "OUT_Y" and f.applied for f in lifted.findings)
    assert "OUT_X" not in {p.name for p in lifted.params}
    assert lifted.grid[0] == "ceil_div(w, BLOCK_X)"


_MAIN = r"""
int main() {
  const int h = %(h)d, w = %(w)d;
  std::vector<float> in(h * w), out(h * w, -7.0f);
  for (int i = 0; i < h * w; ++i) in[i] = (float)((i * 37) %% 17 - 8) / 8.0f;
  %(fill)s
  wb_launch({%(gx)d, %(gy)d, 1}, {%(bx)d, %(by)d, 1}, [&] { k(out.data(), in.data(), h, w); });
  for (float v : out) std::printf("%%.9g\n", v);
  return 0;
}
"""


def host_run(source: str, grid: list[int], block: list[int], work: Path) -> list[float]:
    fill = ("for (int i = 0; i < 5; ++i) for (int j = 0; j < 5; ++j) "
            "gauss[i][j] = (float)((i * 5 + j) * 13 % 11 - 5) / 4.0f;") \
        if "gauss[" in source else ""
    main = _MAIN % {"h": H, "w": W, "gx": grid[0], "gy": grid[1], "bx": block[0],
                    "by": block[1], "fill": fill}
    program = COOPERATIVE_BLOCK + "#define __constant__\n" + source + main
    printed = run_on_host(work, "host", program, flags=("-ffp-contract=off",))
    return [float(v) for v in printed.split()]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_out_x_configs_give_the_kernels_output_on_the_host(name: str) -> None:
    source, block = SPELLINGS[name]
    template = lifted_template(lift(source, block))
    default = template.default_config()
    configs = [*corner_configs(template, ENV),
               {**default, "OUT_X": 2, "OUT_Y": 8},
               {**default, "OUT_X": 4, "OUT_Y": 4},
               {**default, "OUT_X": 4, "OUT_Y": 1},
               {**default, "OUT_X": 2, "OUT_Y": 8, "USE_SMEM": 1},
               {**default, "OUT_X": 4, "OUT_Y": 2, "USE_SMEM": 1}]
    b = [int(v) for v in block]
    with tempfile.TemporaryDirectory() as tmp:
        want = host_run(source, [-(-W // b[0]), -(-H // b[1])], b, Path(tmp))
        assert any(v != -7.0 for v in want)
        for config in host_sample(configs):
            assert template.space(ENV).rejection(config) is None, config
            launch = template.launch_for(config, ENV)
            got = host_run(template.render(config, "fp32").source, list(launch.grid),
                           list(launch.block), Path(tmp))
            assert got == want, config
