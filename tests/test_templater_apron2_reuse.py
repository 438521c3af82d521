"""Row reuse for apron tiles (apron_window.py, issue 28): a thread's OUT_Y consecutive
output rows read each tile row once, from a register window.

The family written as different people would: a Laplacian with its five taps written out
(``#ifndef`` tile macro, ``ty``/``tx`` locals, clamped nested loads), a convolution with
its filter in ``__constant__`` memory and taps from ``-R`` to ``R`` (``<=`` bounds, an
early return, a flat zero-padded load, ``#pragma unroll`` already on one loop), and a sum
of squares whose row index goes through a ``const int`` local inside the tap loop, and a
clamped 9 x 9 correlation (a flat load stepping by the macros' product, taps in
``__constant__`` memory; its 16 x 9 window at OUT_Y = 8 still reuses rows). Each
lifts OUT_XY with ROW_REUSE; the PTX at OUT_Y = 8 reads shared memory at most (OUT_Y +
halo) x width times per output column (window values no tap uses are dropped) instead of
OUT_Y x taps; the host runs the default, the
corners and deep configs and gets the kernel's outputs bit for bit. A tap loop whose bound
is a kernel argument is refused with its line (the lift stands, the reads as written).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import needs_nvcc, ptx_of
from helpers_templater import (
    COOPERATIVE_BLOCK,
    assert_rotation_covers,
    corner_configs,
    lifted_template,
    rotating_sample,
    run_on_host,
)

from workbench.templater import LiftedSource, lift_kernel

# name -> (source, block, (rows halo, window width), taps per output)
SPELLINGS: dict[str, tuple[str, list[str], tuple[int, int], int]] = {
    "laplacian_taps_written_out": (r"""
#ifndef TILE
#define TILE 16
#endif
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float s[TILE + 2][TILE + 2];
  for (int yy = threadIdx.y; yy < TILE + 2; yy += TILE)
    for (int xx = threadIdx.x; xx < TILE + 2; xx += TILE) {
      int gy = min(max((int)blockIdx.y * TILE + yy - 1, 0), h - 1);
      int gx = min(max((int)blockIdx.x * TILE + xx - 1, 0), w - 1);
      s[yy][xx] = in[gy * w + gx];
    }
  __syncthreads();
  const int ty = threadIdx.y, tx = threadIdx.x;
  const int y = blockIdx.y * TILE + ty, x = blockIdx.x * TILE + tx;
  if (y < h && x < w) {
    float c = 4.0f * s[ty + 1][tx + 1];
    float n = s[ty][tx + 1] + s[ty + 2][tx + 1] + s[ty + 1][tx] + s[ty + 1][tx + 2];
    out[y * w + x] = c - n;
  }
}
""", ["16", "16"], (2, 3), 5),
    "constant_filter_signed_taps": (r"""
#ifndef R
#define R 2
#endif
__constant__ float filt[(2 * R + 1) * (2 * R + 1)];
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[8 + 2 * R][32 + 2 * R];
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  for (int e = tid; e < (8 + 2 * R) * (32 + 2 * R); e += blockDim.x * blockDim.y) {
    const int ly = e / (32 + 2 * R), lx = e % (32 + 2 * R);
    const int gy = blockIdx.y * blockDim.y + ly - R, gx = blockIdx.x * blockDim.x + lx - R;
    t[ly][lx] = (gy >= 0 && gy < h && gx >= 0 && gx < w) ? in[gy * w + gx] : 0.0f;
  }
  __syncthreads();
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= h || col >= w) return;
  float acc = 0.0f;
#pragma unroll
  for (int dy = -R; dy <= R; ++dy) {
    for (int dx = -R; dx <= R; ++dx) {
      acc += filt[(dy + R) * (2 * R + 1) + (dx + R)] * t[threadIdx.y + R + dy][threadIdx.x + R + dx];
    }
  }
  out[row * w + col] = acc;
}
""", ["32", "8"], (4, 5), 25),
    "sum_of_squares_row_local": (r"""
#define BX 32
#define BY 4
extern "C" __global__ void k(float* energy, const float* img, int h, int w) {
  __shared__ float tile[BY + 2][BX + 2];
  for (int i = threadIdx.y; i < BY + 2; i += BY) {
    for (int j = threadIdx.x; j < BX + 2; j += BX) {
      const int gi = min((int)blockIdx.y * BY + i, h - 1);
      const int gj = min((int)blockIdx.x * BX + j, w - 1);
      tile[i][j] = img[gi * w + gj];
    }
  }
  __syncthreads();
  const int gy = blockIdx.y * BY + threadIdx.y;
  const int gx = blockIdx.x * BX + threadIdx.x;
  if (gy < h && gx < w) {
    float e = 0.0f;
    for (int a = 0; a < 3; a++) {
      const int yy = threadIdx.y + a;
      for (int b = 0; b < 3; b++) {
        const float v = tile[yy][threadIdx.x + b];
        e += v * v;
      }
    }
    energy[gy * w + gx] = e;
  }
}
""", ["32", "4"], (2, 3), 9),
}
SPELLINGS["clamped_9x9_flat_literal_step"] = (r"""
#define R 4
#define BW 32
#define BH 8
__constant__ float filt[(2 * R + 1) * (2 * R + 1)];
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[BH + 2 * R][BW + 2 * R];
  for (int e = threadIdx.y * BW + threadIdx.x; e < (BH + 2 * R) * (BW + 2 * R); e += BW * BH) {
    const int ly = e / (BW + 2 * R), lx = e % (BW + 2 * R);
    const int gy = min(max((int)blockIdx.y * BH + ly - R, 0), h - 1);
    const int gx = min(max((int)blockIdx.x * BW + lx - R, 0), w - 1);
    t[ly][lx] = in[gy * w + gx];
  }
  __syncthreads();
  const int y = blockIdx.y * BH + threadIdx.y, x = blockIdx.x * BW + threadIdx.x;
  if (y >= h || x >= w) return;
  float acc = 0.0f;
  for (int j = 0; j <= 2 * R; ++j)
    for (int i = 0; i <= 2 * R; ++i)
      acc += filt[j * (2 * R + 1) + i] * t[threadIdx.y + j][threadIdx.x + i];
  out[y * w + x] = acc;
}
""", ["32", "8"], (8, 9), 81)
SIZES = {"h": 45, "w": 77}
ENV = {**SIZES, "elem_bytes": 4}


def lift(name: str) -> LiftedSource:
    source, block, *_ = SPELLINGS[name]
    return lift_kernel(source, entry="k", grid=[f"ceil_div(w, {block[0]})",
                                                f"ceil_div(h, {block[1]})"],
                       block=block, scalars={"h": "h", "w": "w"})


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_spelling_reuses_the_rows_it_reads(name: str) -> None:
    lifted = lift(name)
    applied = {f.transform for f in lifted.findings if f.applied}
    assert {"OUT_XY", "ROW_REUSE"} <= applied, lifted.notes
    halo, width = SPELLINGS[name][2]
    assert f"(OUT_Y + {halo}) x {width} register window" in next(
        f.reason for f in lifted.findings if f.transform == "ROW_REUSE")
    assert f"wb_win[OUT_Y + {halo}][{width}]" in lifted.source


@needs_nvcc
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_deep_configs_read_each_tile_row_once(name: str) -> None:
    template = lifted_template(lift(name), "k")
    (halo, width), taps = SPELLINGS[name][2:]
    default = template.default_config()
    as_written = ptx_of(template, default, "fp32")
    assert len(re.findall(r"ld\.shared", as_written)) == taps  # one output, as written
    deep = {**default, "OUT_Y": 8, "OUT_X": 1}
    ptx = ptx_of(template, deep, "fp32")
    loads = len(re.findall(r"ld\.shared", ptx))
    assert loads <= (8 + halo) * width < 8 * taps  # the window, not every output's taps
    assert "ld.local" not in ptx and "st.local" not in ptx  # the window stays in registers


def test_a_tap_loop_with_a_run_time_bound_is_refused_with_its_line() -> None:
    source = r"""
extern "C" __global__ void k(float* out, const float* in, int h, int w, int taps) {
  __shared__ float t[8 + 4][32 + 4];
  for (int r = threadIdx.y; r < 12; r += 8)
    for (int c = threadIdx.x; c < 36; c += 32)
      t[r][c] = in[min((int)blockIdx.y * 8 + r, h - 1) * w + min((int)blockIdx.x * 32 + c, w - 1)];
  __syncthreads();
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 8 + threadIdx.y;
  float s = 0.0f;
  for (int d = 0; d < taps; ++d) s += t[threadIdx.y + d][threadIdx.x];
  if (x < w && y < h) out[y * w + x] = s;
}
"""
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(w, 32)", "ceil_div(h, 8)"],
                         block=["32", "8"], scalars={"h": "h", "w": "w", "taps": "taps"})
    refusals = [f for f in lifted.findings if f.transform == "ROW_REUSE"]
    if not any(f.transform == "OUT_XY" and f.applied for f in lifted.findings):
        pytest.skip("the apron lift itself refuses this kernel: " + "; ".join(lifted.notes))
    assert refusals and not refusals[0].applied, lifted.notes
    assert "not a loop with constant bounds" in refusals[0].reason
    assert refusals[0].line == 10
    assert "wb_win" not in lifted.source


# -- host run ------------------------------------------------------------------------------

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
    fill = ("for (unsigned i = 0; i < sizeof(filt) / sizeof(float); ++i) "
            "filt[i] = (float)((i * 13) % 11 - 5) / 4.0f;") if "filt[" in source else ""
    main = _MAIN % {**SIZES, "gx": grid[0], "gy": grid[1], "bx": block[0], "by": block[1],
                    "fill": fill}
    program = COOPERATIVE_BLOCK + "#define __constant__\n" + source + main
    printed = run_on_host(work, "host", program, flags=("-ffp-contract=off",))
    return [float(v) for v in printed.split()]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_reused_rows_give_the_kernels_output_on_the_host(name: str) -> None:
    """Each spelling as written, then its lift at the default and, by default, one of the
    two all-ends corners and two hand-picked tilings in turn (the spellings cover all four
    between them each run); every one with ``WORKBENCH_FULL_MATRIX=1``."""
    source, block, *_ = SPELLINGS[name]
    template = lifted_template(lift(name), "k")
    default = template.default_config()
    configs: list[dict[str, Any]] = [
        *corner_configs(template, ENV),
        {**default, "BLOCK_X": 16, "BLOCK_Y": 2, "OUT_X": 2, "OUT_Y": 4},
        {**default, "BLOCK_X": 32, "BLOCK_Y": 2, "OUT_X": 1, "OUT_Y": 8}]
    b = [int(v) for v in block]
    with tempfile.TemporaryDirectory() as tmp:
        want = host_run(source, [-(-SIZES["w"] // b[0]), -(-SIZES["h"] // b[1])], b, Path(tmp))
        assert -7.0 not in want and any(want)
        assert_rotation_covers(len(SPELLINGS), configs)
        for config in rotating_sample(configs, sorted(SPELLINGS).index(name)):
            assert template.space(ENV).rejection(config) is None, config
            launch = template.launch_for(config, ENV)
            got = host_run(template.render(config, "fp32").source, list(launch.grid),
                           list(launch.block), Path(tmp))
            assert got == want, config
