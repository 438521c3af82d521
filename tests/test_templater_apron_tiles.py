"""Apron tiles: outputs per thread over a shared tile with a halo (templater/apron.py).

Five spellings of the family (the corpus box blur with ``BS`` / ``RADIUS`` macros and
clamped edges; a Laplacian with literal sizes, zero padding, the x loop outside and the work
under an ``if``; a 5x5 Gaussian with ``#define R 2``, weights in ``__constant__``, separate
``TILE_W`` / ``TILE_H`` with an ``#ifndef`` default, thread aliases, a pointer-offset load and
``#pragma unroll`` windows; a 3x3 mean with the author's padded row ``[TILE_H + 2][TILE_W + 2
+ 1]`` and a ``row`` / ``col`` flat index; an expert-style flat load ``e / LX``, ``e % LX``
strided by ``blockDim.x * blockDim.y`` with ``blockIdx.x * blockDim.x`` offsets, zero padding
under ``r >= 0 && r < h && c >= 0 && c < w`` and a pointer into the tile) each lift BLOCK_X, BLOCK_Y, OUT_X, OUT_Y and PAD
with the tile, its loads and the grid following (LOAD_FLAT: the nested load loops as one
loop over the tile's elements), launch as written at the defaults, compile
with nvcc at the corners, and (host run with g++, barriers as coroutine switches) give the
kernel's outputs at the default, the corners and configs with several outputs per thread.
Spellings the analysis cannot follow (halo loads as per-thread branches whose values are
not written as one function of the position (apron_branches.py), a tile read at
``threadIdx.y / 2``, ``gridDim``, ``blockDim`` as a number) are refused with the line, and the tied-tile lift runs
instead.
"""

from __future__ import annotations

import shutil
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

from workbench.templater import LiftedSource, lift_kernel

ROOT = Path(__file__).resolve().parents[1]
BOX_BLUR = (ROOT / "benchmarks/corpus_compute_unseen/box_blur/baseline.cu").read_text()

# name -> (source, entry, block, scalars as (height name, width name))
APRONS: dict[str, tuple[str, str, list[str], tuple[str, str]]] = {
    "box_blur_corpus": (BOX_BLUR, "box_blur", ["16", "16"], ("height", "width")),
    "laplacian_literal_zero_pad": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[8 + 2][32 + 2];
  const int x = blockIdx.x * 32 + threadIdx.x;
  const int y = blockIdx.y * 8 + threadIdx.y;
  for (int c = threadIdx.x; c < 34; c += 32)
    for (int r = threadIdx.y; r < 10; r += 8) {
      const int gr = (int)blockIdx.y * 8 + r - 1;
      const int gc = (int)blockIdx.x * 32 + c - 1;
      t[r][c] = (gr >= 0 && gr < h && gc >= 0 && gc < w) ? in[gr * w + gc] : 0.0f;
    }
  __syncthreads();
  if (x < w && y < h) {
    float s = 0.0f;
    for (int dy = -1; dy <= 1; dy++) {
      for (int dx = -1; dx <= 1; dx++) {
        const float wt = (dy == 0 && dx == 0) ? -4.0f : ((dy == 0 || dx == 0) ? 1.0f : 0.0f);
        s += wt * t[threadIdx.y + 1 + dy][threadIdx.x + 1 + dx];
      }
    }
    out[y * w + x] = s;
  }
}
""", "k", ["32", "8"], ("h", "w")),
    "gaussian5_constant_separate_tiles": ("""
#define R 2
#ifndef TILE_W
#define TILE_W 32
#endif
#define TILE_H 4
__constant__ float gw[(2 * R + 1) * (2 * R + 1)];
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x0 = blockIdx.x * TILE_W;
  const int y0 = blockIdx.y * TILE_H;
  __shared__ float tile[TILE_H + 2 * R][TILE_W + 2 * R];
  for (int yy = ty; yy < TILE_H + 2 * R; yy += TILE_H) {
    for (int xx = tx; xx < TILE_W + 2 * R; xx += TILE_W) {
      const int sy = min(max(y0 + yy - R, 0), h - 1);
      const int sx = min(max(x0 + xx - R, 0), w - 1);
      tile[yy][xx] = *(in + sy * w + sx);
    }
  }
  __syncthreads();
  const int row = y0 + ty, col = x0 + tx;
  if (row >= h || col >= w) return;
  float acc = 0.f;
#pragma unroll
  for (int i = 0; i <= 2 * R; ++i) {
#pragma unroll
    for (int j = 0; j <= 2 * R; ++j) acc += gw[i * (2 * R + 1) + j] * tile[ty + i][tx + j];
  }
  out[row * w + col] = acc;
}
""", "k", ["32", "4"], ("h", "w")),
    "mean3_padded_row": ("""
#define TILE_W 16
#define TILE_H 4
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float s_in[TILE_H + 2][TILE_W + 2 + 1];
  for (int r = threadIdx.y; r < TILE_H + 2; r += TILE_H)
    for (int c = threadIdx.x; c < TILE_W + 2; c += TILE_W) {
      int gr = min(max((int)(blockIdx.y * TILE_H) + r - 1, 0), h - 1);
      int gc = min(max((int)(blockIdx.x * TILE_W) + c - 1, 0), w - 1);
      s_in[r][c] = in[(long long)gr * w + gc];
    }
  __syncthreads();
  int col = blockIdx.x * TILE_W + threadIdx.x;
  int row = blockIdx.y * TILE_H + threadIdx.y;
  if (row < h && col < w) {
    float sum = 0.0f;
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        sum += s_in[threadIdx.y + a][threadIdx.x + b];
    out[(long long)row * w + col] = sum / 9.0f;
  }
}
""", "k", ["16", "4"], ("h", "w")),
    "flat_load_blockdim_zero_pad": ("""
#define RADIUS 1
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float sm[8 + 2 * RADIUS][16 + 2 * RADIUS];
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  for (int e = tid; e < (8 + 2 * RADIUS) * (16 + 2 * RADIUS); e += blockDim.x * blockDim.y) {
    const int ly = e / (16 + 2 * RADIUS);
    const int lx = e % (16 + 2 * RADIUS);
    const int r = blockIdx.y * blockDim.y + ly - RADIUS;
    const int c = blockIdx.x * blockDim.x + lx - RADIUS;
    sm[ly][lx] = (r >= 0 && r < h && c >= 0 && c < w) ? in[r * w + c] : 0.0f;
  }
  __syncthreads();
  const int gx = blockIdx.x * blockDim.x + threadIdx.x;
  const int gy = blockIdx.y * blockDim.y + threadIdx.y;
  if (gx >= w || gy >= h) return;
  const float* row0 = &sm[threadIdx.y][threadIdx.x];
  float v = 0.0f;
  for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) v += (i == 1 ? 2.0f : 1.0f) * sm[threadIdx.y + i][threadIdx.x + j];
  out[gy * w + gx] = v - row0[0];
}
""", "k", ["16", "8"], ("h", "w")),
}

SIZES = {"h": 41, "w": 59}


def env(name: str) -> dict[str, int]:
    hn, wn = APRONS[name][3]
    return {hn: SIZES["h"], wn: SIZES["w"], "elem_bytes": 4}


def lift(name: str) -> LiftedSource:
    source, entry, block, (hn, wn) = APRONS[name]
    return lift_kernel(source, entry=entry, grid=[f"ceil_div({wn}, {block[0]})",
                                                  f"ceil_div({hn}, {block[1]})"],
                       block=block, scalars={hn: hn, wn: wn})


@pytest.mark.parametrize("name", sorted(APRONS))
def test_every_apron_spelling_lifts_outputs_per_thread_with_the_tile_and_grid(name: str) -> None:
    _source, _entry, block, (hn, wn) = APRONS[name]
    lifted = lift(name)
    applied = [f for f in lifted.findings if f.transform == "OUT_XY" and f.applied]
    assert applied, lifted.notes
    assert {"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "PAD"} <= {p.name for p in lifted.params}
    assert lifted.block == ("BLOCK_X", "BLOCK_Y")
    # the author's nested load loops get a flat alternative; a flat load is kept as it is
    assert ("LOAD_FLAT" in {p.name for p in lifted.params}) == ("e / " not in _source)
    assert lifted.grid == (f"ceil_div({wn}, BLOCK_X * OUT_X)",
                           f"ceil_div({hn}, BLOCK_Y * OUT_Y)")
    template = lifted_template(lifted, APRONS[name][1])
    default = template.default_config()
    assert [default["BLOCK_X"], default["BLOCK_Y"], default["OUT_X"], default["OUT_Y"]] == \
        [int(block[0]), int(block[1]), 1, 1]
    launch = template.launch_for(default, env(name))
    assert list(launch.grid)[:2] == [-(-SIZES["w"] // int(block[0])),
                                     -(-SIZES["h"] // int(block[1]))]  # as written
    big = {**default, "BLOCK_X": 32, "BLOCK_Y": 4, "OUT_X": 2, "OUT_Y": 4}
    assert list(template.launch_for(big, env(name)).grid)[:2] == [-(-SIZES["w"] // 64),
                                                                  -(-SIZES["h"] // 16)]
    # the tile's shared bytes bound the space: 8 x 32 outputs of 4 x 128 threads do not fit
    space = template.space(env(name))
    huge = {**default, "BLOCK_X": 128, "BLOCK_Y": 8, "OUT_X": 4, "OUT_Y": 4}
    assert space.rejection(huge) is not None


def test_the_author_padding_is_the_pad_default() -> None:
    lifted = lift("mean3_padded_row")
    assert lifted.defaults["PAD"] == 1
    assert "s_in[TILE_H + 2]" not in lifted.source  # the extents follow the parameters


REFUSED: dict[str, tuple[str, str, int]] = {
    "halo_loaded_by_branches": ("""
#define R 1
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[16 + 2 * R][16 + 2 * R];
  int tx = threadIdx.x, ty = threadIdx.y;
  int x = blockIdx.x * 16 + tx, y = blockIdx.y * 16 + ty;
  int cx = min(x, w - 1), cy = min(y, h - 1);
  t[ty + R][tx + R] = in[cy * w + cx];
  if (tx < 2 * R) t[ty + R][tx + 16 + R] = in[cy * w + min(x + 16, w - 1)];
  __syncthreads();
  if (x < w && y < h) out[y * w + x] = t[ty + R][tx + R];
}
""", "stores another function of the global position", 9),
    "tile_read_at_twice_the_thread": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[18][18];
  for (int r = threadIdx.y; r < 18; r += 16)
    for (int c = threadIdx.x; c < 18; c += 16)
      t[r][c] = in[min((int)blockIdx.y * 16 + r, h - 1) * w + min((int)blockIdx.x * 16 + c, w - 1)];
  __syncthreads();
  int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
  if (x < w && y < h) out[y * w + x] = t[threadIdx.y / 2 + 1][threadIdx.x];
}
""", "other than through the output point", 9),
    "grid_dim_read": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[18][18];
  for (int r = threadIdx.y; r < 18; r += blockDim.y)
    for (int c = threadIdx.x; c < 18; c += 16)
      t[r][c] = in[min((int)blockIdx.y * 16 + r, h - 1) * w + min((int)blockIdx.x * 16 + c, w - 1)];
  __syncthreads();
  int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
  if (x < w && y < h) out[y * w + x] = t[threadIdx.y + 1][threadIdx.x + 2] * gridDim.x;
}
""", "must not read its size", 9),
    "block_size_used_as_a_count": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[18][18];
  for (int r = threadIdx.y; r < 18; r += 16)
    for (int c = threadIdx.x; c < 18; c += 16)
      t[r][c] = in[min((int)blockIdx.y * 16 + r, h - 1) * w + min((int)blockIdx.x * 16 + c, w - 1)];
  __syncthreads();
  int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
  if (x < w && y < h) out[y * w + x] = t[threadIdx.y + 1][threadIdx.x + 2] * blockDim.x;
}
""", "a block size) is used where the analysis does not know its meaning", 9),
    "write_through_a_pointer_into_the_tile": ("""
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float t[18][18];
  for (int r = threadIdx.y; r < 18; r += 16)
    for (int c = threadIdx.x; c < 18; c += 16)
      t[r][c] = in[min((int)blockIdx.y * 16 + r, h - 1) * w + min((int)blockIdx.x * 16 + c, w - 1)];
  __syncthreads();
  int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
  float* mine = &t[threadIdx.y][threadIdx.x];
  mine[0] = 0.0f;
  if (x < w && y < h) out[y * w + x] = t[threadIdx.y + 1][threadIdx.x + 2];
}
""", "not a kernel argument", 10),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_aprons_the_analysis_cannot_follow_are_refused_with_the_line(name: str) -> None:
    source, reason, row = REFUSED[name]
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(w, 16)", "ceil_div(h, 16)"],
                         block=["16", "16"], scalars={"h": "h", "w": "w"})
    refusals = [f for f in lifted.findings if f.transform == "OUT_XY" and not f.applied]
    assert refusals, lifted.notes
    assert reason in refusals[0].reason, refusals[0].reason
    assert refusals[0].line == row, refusals[0]
    assert not {"OUT_X", "OUT_Y"} & {p.name for p in lifted.params}


@pytest.mark.parametrize("name", sorted(APRONS))
def test_apron_templates_compile_at_default_and_corners(name: str, compiler: Any) -> None:
    template = lifted_template(lift(name), APRONS[name][1])
    for config in host_sample(corner_configs(template, env(name))):
        result = compiler.compile(template.render(config, "fp32"))
        assert result.ok, f"{config}: {result.error_summary}\n{result.log[-1500:]}"


# -- host run: every block's threads as coroutines, barriers as switches --------------------

_MAIN = r"""
int main() {
  const int h = %(h)d, w = %(w)d;
  std::vector<float> in(h * w), out(h * w, -7.0f);
  for (int i = 0; i < h * w; ++i) in[i] = (float)((i * 37) %% 17 - 8) / 8.0f;
  %(fill)s
  wb_launch({%(gx)d, %(gy)d, 1}, {%(bx)d, %(by)d, 1},
            [&] { %(entry)s(out.data(), in.data(), h, w); });
  for (float v : out) std::printf("%%.9g\n", v);
  return 0;
}
"""


def host_run(name: str, source: str, grid: list[int], block: list[int],
             work: Path) -> list[float]:
    fill = ("for (unsigned i = 0; i < sizeof(gw) / sizeof(float); ++i) "
            "gw[i] = (float)((i * 13) % 11 - 5) / 4.0f;") if "gw[" in source else ""
    main = _MAIN % {**SIZES, "gx": grid[0], "gy": grid[1], "bx": block[0], "by": block[1],
                    "fill": fill, "entry": APRONS[name][1]}
    program = COOPERATIVE_BLOCK + "#define __constant__\n" + source + main
    printed = run_on_host(work, "host", program, flags=("-ffp-contract=off",))
    return [float(v) for v in printed.split()]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host run")
@pytest.mark.parametrize("name", sorted(APRONS))
def test_apron_configs_give_the_kernels_output_on_the_host(name: str) -> None:
    source, _entry, block, _names = APRONS[name]
    template = lifted_template(lift(name), APRONS[name][1])
    default = template.default_config()
    configs = [*corner_configs(template, env(name)),
               {**default, "BLOCK_X": 8, "BLOCK_Y": 4, "OUT_X": 4, "OUT_Y": 2, "PAD": 1,
                **({"LOAD_FLAT": 1} if "LOAD_FLAT" in default else {})},
               {**default, "BLOCK_X": 32, "BLOCK_Y": 2, "OUT_X": 1, "OUT_Y": 8}]
    b = [int(v) for v in block]
    with tempfile.TemporaryDirectory() as tmp:
        want = host_run(name, source, [-(-SIZES["w"] // b[0]), -(-SIZES["h"] // b[1])], b,
                        Path(tmp))
        assert -7.0 not in want and any(want)
        for config in host_sample(configs):
            assert template.space(env(name)).rejection(config) is None, config
            launch = template.launch_for(config, env(name))
            got = host_run(name, template.render(config, "fp32").source, list(launch.grid),
                           list(launch.block), Path(tmp))
            assert got == want, config
