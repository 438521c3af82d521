"""The apron lift's row window read straight from the source (workbench/templater/apron.py,
apron_window.py): at USE_SMEM = 0 a thread's OUT_Y outputs load only the window positions
some output reads (``Window.taps``), with no test of the tile's stored regions per value.

Two spellings of our own besides the spent wave2d_o4 (a 9-point star whose corners are
never stored): a full 5 x 5 weighted box with an ``#ifndef`` radius whose branches store the
corners too, zero padding through a helper with an early return, the work under an ``if``
(again with its sizes as file-scope ``constexpr`` ints, two in one declaration);
a y-derivative written as explicit terms (rows -2, -1, +1, +2: the centre row is not read)
over a tile with a halo along y only, rows clamped through a helper, an early return.
Checked: the lift applies with the row window; the window's source loads are tested by the
tapped positions only; the rendered kernel gives the kernel's output bit for bit on the
host (default, all-ends and sampled configs, the window at USE_SMEM = 0 and 1); ptxas -v
reports no spills at the deepest corners.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from helpers_templater import COOPERATIVE_BLOCK, end_configs, lifted_template, run_on_host
from test_templater_apron_branches import _MAIN as MAIN
from test_templater_apron_branches import ENV, _configs, _variant, lift, lift_case

from workbench.core.write_policy import write_file
from workbench.templater.apron import tapped_test

# name -> (source, block); every kernel is k(out, in, h, w), launched over ceil(w / bx) x
# ceil(h / by) blocks
KERNELS: dict[str, tuple[str, list[str]]] = {
    "box5x5_corners_ifndef_radius_zero_padded": ("""
#ifndef RAD
#define RAD 2
#endif
#define BW 32
#define BH 8
__device__ float at_or_zero(const float* a, int r, int c, int h, int w) {
  if (r < 0 || r >= h || c < 0 || c >= w) return 0.0f;
  return a[r * w + c];
}
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float patch[BH + 2 * RAD][BW + 2 * RAD];
  const int col = blockIdx.x * BW + threadIdx.x;
  const int row = blockIdx.y * BH + threadIdx.y;
  const int pc = threadIdx.x + RAD, pr = threadIdx.y + RAD;
  patch[pr][pc] = at_or_zero(in, row, col, h, w);
  if (threadIdx.x < RAD) {
    patch[pr][pc - RAD] = at_or_zero(in, row, col - RAD, h, w);
    patch[pr][pc + BW] = at_or_zero(in, row, col + BW, h, w);
  }
  if (threadIdx.y < RAD) {
    patch[pr - RAD][pc] = at_or_zero(in, row - RAD, col, h, w);
    patch[pr + BH][pc] = at_or_zero(in, row + BH, col, h, w);
    if (threadIdx.x < RAD) {
      patch[pr - RAD][pc - RAD] = at_or_zero(in, row - RAD, col - RAD, h, w);
      patch[pr - RAD][pc + BW] = at_or_zero(in, row - RAD, col + BW, h, w);
      patch[pr + BH][pc - RAD] = at_or_zero(in, row + BH, col - RAD, h, w);
      patch[pr + BH][pc + BW] = at_or_zero(in, row + BH, col + BW, h, w);
    }
  }
  __syncthreads();
  if (row < h && col < w) {
    float sum = 0.0f;
    for (int dr = -RAD; dr <= RAD; dr++)
      for (int dc = -RAD; dc <= RAD; dc++)
        sum += patch[pr + dr][pc + dc] * (float)(1 + (dr + RAD) * 5 + dc + RAD) * 0.01f;
    out[row * w + col] = sum;
  }
}
""", ["32", "8"]),
    # the same box with its sizes as file-scope constexprs (two in one declaration): read
    # like the macros (semantic.file_constants)
    "box5x5_constexpr_sizes": ("""
constexpr int RAD = 2;
constexpr int BW = 32, BH = 8;
__device__ float at_or_zero(const float* a, int r, int c, int h, int w) {
  if (r < 0 || r >= h || c < 0 || c >= w) return 0.0f;
  return a[r * w + c];
}
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float patch[BH + 2 * RAD][BW + 2 * RAD];
  const int col = blockIdx.x * BW + threadIdx.x;
  const int row = blockIdx.y * BH + threadIdx.y;
  const int pc = threadIdx.x + RAD, pr = threadIdx.y + RAD;
  patch[pr][pc] = at_or_zero(in, row, col, h, w);
  if (threadIdx.x < RAD) {
    patch[pr][pc - RAD] = at_or_zero(in, row, col - RAD, h, w);
    patch[pr][pc + BW] = at_or_zero(in, row, col + BW, h, w);
  }
  if (threadIdx.y < RAD) {
    patch[pr - RAD][pc] = at_or_zero(in, row - RAD, col, h, w);
    patch[pr + BH][pc] = at_or_zero(in, row + BH, col, h, w);
    if (threadIdx.x < RAD) {
      patch[pr - RAD][pc - RAD] = at_or_zero(in, row - RAD, col - RAD, h, w);
      patch[pr - RAD][pc + BW] = at_or_zero(in, row - RAD, col + BW, h, w);
      patch[pr + BH][pc - RAD] = at_or_zero(in, row + BH, col - RAD, h, w);
      patch[pr + BH][pc + BW] = at_or_zero(in, row + BH, col + BW, h, w);
    }
  }
  __syncthreads();
  if (row < h && col < w) {
    float sum = 0.0f;
    for (int dr = -RAD; dr <= RAD; dr++)
      for (int dc = -RAD; dc <= RAD; dc++)
        sum += patch[pr + dr][pc + dc] * (float)(1 + (dr + RAD) * 5 + dc + RAD) * 0.01f;
    out[row * w + col] = sum;
  }
}
""", ["32", "8"]),
    "y_derivative_explicit_terms_clamped": ("""
#define HALO 2
#define TILE_X 64
#define TILE_Y 4
__device__ int clamp_row(int y, int h) { return y < 0 ? 0 : (y >= h ? h - 1 : y); }
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float col[TILE_Y + 2 * HALO][TILE_X];
  int gx = threadIdx.x + TILE_X * blockIdx.x;
  int gy = threadIdx.y + TILE_Y * blockIdx.y;
  int sy = threadIdx.y + HALO;
  int cx = min(gx, w - 1);
  col[sy][threadIdx.x] = in[clamp_row(gy, h) * w + cx];
  if (threadIdx.y < HALO) {
    col[sy - HALO][threadIdx.x] = in[clamp_row(gy - HALO, h) * w + cx];
    col[sy + TILE_Y][threadIdx.x] = in[clamp_row(gy + TILE_Y, h) * w + cx];
  }
  __syncthreads();
  if (gx >= w || gy >= h) return;
  out[gy * w + gx] = (col[sy - 2][threadIdx.x] - 8.0f * col[sy - 1][threadIdx.x] +
                      8.0f * col[sy + 1][threadIdx.x] - col[sy + 2][threadIdx.x]) * (1.0f / 12.0f);
}
""", ["64", "4"]),
}


def _lifted(name: str):
    return lift_case(name) if name == "wave2d_o4" else lift(*KERNELS[name])


def test_the_tapped_test_covers_each_output_rows_reads() -> None:
    # a derivative's rows -2, -1, +1, +2 (window rows 0, 1, 3, 4) in column 0: at OUT_Y = 1
    # window row 2 (the centre) is read by no output, at OUT_Y = 2 output 1 reads it (row 3)
    test = tapped_test(((0, 0), (1, 0), (3, 0), (4, 0)), "OY")
    for oy in (1, 2, 4):
        read = {r + k for r in (0, 1, 3, 4) for k in range(oy)}
        for r in range(oy + 5):
            for c in range(2):
                got = eval(test.replace("&&", " and ").replace("||", " or ")
                           .replace("OY", str(oy)),
                           {"wb_r": r, "wb_c": c})
                assert got == (c == 0 and r in read), (oy, r, c, test)


@pytest.mark.parametrize("name", sorted([*KERNELS, "wave2d_o4"]))
def test_the_source_window_loads_only_the_tapped_positions(name: str) -> None:
    lifted = _lifted(name)
    assert any(n.startswith("ROW_REUSE: applied") for n in lifted.notes), lifted.notes
    start = lifted.source.index("if (wb_reuse) {")
    window = lifted.source[start:lifted.source.index("#endif", start)]
    direct = window[window.index("#else"):]
    # the positions are tested at compile time, the tile's regions (`? 1 : 2`) not at all
    assert "if ((wb_c == " in direct and "? 1 : 2" not in direct, direct


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_window_gives_the_kernels_output_bit_for_bit(name: str) -> None:
    source, block = KERNELS[name]
    template = lifted_template(lift(source, block))
    b = [int(v) for v in block]
    parts = [_variant(0, name, source, {}, ([-(-ENV["w"] // b[0]), -(-ENV["h"] // b[1])], b))]
    default = dict(template.default_config())
    configs = [*_configs(template), {**default, "OUT_Y": 8, "BLOCK_Y": 1, "USE_SMEM": 0},
               {**default, "OUT_Y": 2, "BLOCK_Y": 4, "USE_SMEM": 0},
               {**default, "OUT_Y": 4, "OUT_X": 2, "BLOCK_Y": 2, "USE_SMEM": 1}]
    for n, config in enumerate(configs, start=1):
        assert template.space(ENV).rejection(config) is None, config
        launch = template.launch_for(config, ENV)
        parts.append(_variant(n, name, template.render(config, "fp32").source, config,
                              (list(launch.grid), list(launch.block))))
    checks = "\n".join(f'  std::printf("%d %d\\n", {n}, (int)(v{n}::run() == want));'
                       for n in range(1, len(configs) + 1))
    prelude = COOPERATIVE_BLOCK + f"static const int h = {ENV['h']}, w = {ENV['w']};\n" + \
        "static std::vector<float> in_(h * w), prev_(h * w);\n"
    program = prelude + "".join(parts) + MAIN % {"checks": checks}
    with tempfile.TemporaryDirectory() as tmp:
        printed = run_on_host(Path(tmp), "window", program, flags=("-ffp-contract=off",))
    lines = printed.split("\n")
    assert lines[0] == "unwritten 0"
    same = dict(line.split() for line in lines[1:] if line)
    wrong = [configs[int(n) - 1] for n, ok in same.items() if ok != "1"]
    assert len(same) == len(configs) and not wrong, wrong


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", sorted([*KERNELS, "wave2d_o4"]))
def test_the_deepest_corner_read_from_the_source_compiles_without_spilling(name: str) -> None:
    template = lifted_template(_lifted(name))
    corners = [c for c in end_configs(template, ENV) if c["USE_SMEM"] == 0]
    config = max(corners, key=lambda c: (c["OUT_Y"] * c["OUT_X"], c["BLOCK_X"] * c["BLOCK_Y"]
                                         * max(1, c["MIN_BLOCKS_PER_SM"])))
    with tempfile.TemporaryDirectory() as tmp:
        cu = write_file(Path(tmp), Path(tmp) / "k.cu", template.render(config, "fp32").source,
                        overwrite=True)
        done = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o",
                               str(Path(tmp) / "k.cubin"), str(cu)], check=True,
                              capture_output=True, text=True, timeout=300)
    log = done.stderr + done.stdout
    assert "Used" in log and not re.search(r"[1-9]\d* bytes spill", log), (config, log)
