"""The templater's tiled / 2-D-output transforms (issue 28, build item 1).

The shared-memory GEMM family written the way different people write it (macro or literal
tile, ``#ifndef`` default, if/else or conditional stores, ``++tile`` or ``t += TILE`` loops,
pointer increments, a column-major B, ``blockDim`` offsets, a padded tile): each lifts to
a register tile whose block sizes are tied by derived launch rules and joint constraints;
the rendered template compiles with nvcc at its default and corner configs; and a host
simulation of the CUDA block (every thread a coroutine, ``__syncthreads`` a yield) runs
the rendered kernel at sampled configs of the space and compares with a plain product.
Kernels the analysis cannot follow are refused with the reason and the line.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from dataclasses import dataclass
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
from regtile_spellings import HOST_VECTOR

from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel


@dataclass(frozen=True)
class Gemm:
    """One author's spelling: source, launch as written, B's layout and the call's tail."""

    source: str
    tile: int
    b_index: str = "k * N + c"  # B's element (k, c) in the simulation's reference
    extra_args: str = ""  # scalars after K
    alpha: str = "1.0"


GEMMS: dict[str, Gemm] = {
    "macro_aliases": Gemm("""// the corpus spelling: #define TILE, tx/ty aliases declared together
#define TILE 16
extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty;
  int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int t = 0; t < K; t += TILE) {
    As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
    Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
""", 16),
    "literal_ifelse_tile_count": Gemm("""
extern "C" __global__ void k(float* out, const float* a, const float* b, int M, int N, int K) {
  __shared__ float sa[32][32];
  __shared__ float sb[32][32];
  const int r = blockIdx.y * 32 + threadIdx.y;
  const int c = blockIdx.x * 32 + threadIdx.x;
  float sum = 0;
  for (int tile = 0; tile < (K + 31) / 32; ++tile) {
    int ka = tile * 32 + threadIdx.x;
    int kb = tile * 32 + threadIdx.y;
    if (r < M && ka < K) sa[threadIdx.y][threadIdx.x] = a[(long long)r * K + ka];
    else sa[threadIdx.y][threadIdx.x] = 0.0f;
    if (kb < K && c < N) { sb[threadIdx.y][threadIdx.x] = b[(long long)kb * N + c]; }
    else { sb[threadIdx.y][threadIdx.x] = 0.0f; }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 32; i++) {
      sum = fmaf(sa[threadIdx.y][i], sb[i][threadIdx.x], sum);
    }
    __syncthreads();
  }
  if (r < M && c < N) out[(long long)r * N + c] = sum;
}
""", 32),
    "ifndef_pointers_colmajor_b_padded": Gemm("""#ifndef BLOCK_SIZE
#define BLOCK_SIZE 16
#endif
// B is stored column-major (element (k, n) at B[k + n * K]); A's tile carries a pad
extern "C" __global__ void k(float* __restrict__ C, const float* __restrict__ A,
                             const float* __restrict__ B, int M, int N, int K) {
  int bx = blockIdx.x, by = blockIdx.y;
  int tx = threadIdx.x;
  int ty = threadIdx.y;
  __shared__ float tileA[BLOCK_SIZE][BLOCK_SIZE + 1];
  __shared__ float tileB[BLOCK_SIZE][BLOCK_SIZE];
  const float* a = A + (long long)by * BLOCK_SIZE * K;
  const float* b = B + (long long)bx * BLOCK_SIZE * K;
  int gr = by * BLOCK_SIZE + ty, gc = bx * BLOCK_SIZE + tx;
  float c0 = 0.0f;
  for (int kk = 0; kk < K; kk += BLOCK_SIZE) {
    tileA[ty][tx] = (gr < M && kk + tx < K) ? a[ty * K + tx] : 0.0f;
    tileB[tx][ty] = (gc < N && kk + ty < K) ? b[tx * K + ty] : 0.0f;
    __syncthreads();
    for (int e = 0; e < BLOCK_SIZE; ++e) c0 += tileA[ty][e] * tileB[tx][e];
    __syncthreads();
    a += BLOCK_SIZE;
    b += BLOCK_SIZE;
  }
  if (gr < M && gc < N) C[gr * N + gc] = c0;
}
""", 16, b_index="k + c * K"),
    "blockdim_offsets_scaled": Gemm("""
extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K,
                             float alpha) {
  __shared__ float As[16][16];
  __shared__ float Bs[16][16];
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  float v = 0.0f;
  for (int t = 0; t < K; t += 16) {
    As[threadIdx.y][threadIdx.x] =
        row < M && t + threadIdx.x < K ? A[row * K + t + threadIdx.x] : 0.f;
    Bs[threadIdx.y][threadIdx.x] =
        col < N && t + threadIdx.y < K ? B[(t + threadIdx.y) * N + col] : 0.f;
    __syncthreads();
    for (int q = 0; q < 16; q++) {
      float x = As[threadIdx.y][q];
      v += x * Bs[q][threadIdx.x];
    }
    __syncthreads();
  }
  if (row < M && col < N) {
    C[row * N + col] = alpha * v;
  }
}
""", 16, extra_args=", 0.5f", alpha="0.5"),
}


def lift_gemm(g: Gemm) -> LiftedSource:
    t = g.tile
    scalars = {"M": "M", "N": "N", "K": "K", **({"alpha": "1"} if g.extra_args else {})}
    return lift_kernel(g.source, entry="k", grid=[f"ceil_div(N, {t})", f"ceil_div(M, {t})"],
                       block=[str(t), str(t)], scalars=scalars)


ENV = {"M": 37, "N": 45, "K": 29, "elem_bytes": 4}


@pytest.mark.parametrize("name", sorted(GEMMS))
def test_every_gemm_spelling_gets_a_register_tile_with_tied_blocks(name: str) -> None:
    g = GEMMS[name]
    lifted = lift_gemm(g)
    assert any(f.transform == "REGISTER_TILE" and f.applied for f in lifted.findings), \
        lifted.notes
    names = {p.name for p in lifted.params}
    assert {"BM", "BN", "BK", "TM", "TN"} <= names
    # block sizes follow the tiles: derived, never independent ranges
    assert lifted.block == ("BN // TN", "BM // TM")
    assert lifted.grid == ("ceil_div(N, BN)", "ceil_div(M, BM)")
    assert "(BM // TM) * (BN // TN) <= 1024" in lifted.constraints
    template = lifted_template(lifted)
    default = template.default_config()
    assert (default["BM"], default["BN"], default["BK"], default["TM"], default["TN"]) == \
        (g.tile, g.tile, g.tile, 1, 1)
    launch = template.launch_for(default, ENV)
    assert list(launch.block[:2]) == [g.tile, g.tile]  # the defaults launch as written
    space = template.space(ENV)
    assert len(space) > 100
    for config in space:  # every config fits a block and static shared memory
        c = {k: int(v) for k, v in config.items()}
        threads = (c["BM"] // c["TM"]) * (c["BN"] // c["TN"])
        assert 32 <= threads <= 1024
        assert 4 * (c["BK"] * (c["BM"] + 1) + c["BK"] * c["BN"]) <= 49152  # A k-major
    body = lifted.source[lifted.source.index('extern "C"'):]
    assert "__syncthreads" in body and "[TM][TN]" in body


def test_tiles_read_along_k_are_stored_k_major_with_an_odd_row_length() -> None:
    # the author padded both tiles ([T][T + 1]); the lift stores them k-major with a pad of
    # one word at every config: no PAD knob
    lifted = lift_gemm(GEMMS["ifndef_pointers_colmajor_b_padded"])
    assert "__shared__ float tileA[BK][BM + 1];" in lifted.source
    assert "__shared__ float tileB[BK][BN + 1];" in lifted.source  # read [n][k]
    assert "PAD" not in lifted_template(lifted).param_names


# -- refusals ----------------------------------------------------------------------------

BASE = GEMMS["macro_aliases"].source


def _refusal(source: str) -> tuple[str, int]:
    lifted = lift_gemm(Gemm(source, 16))
    found = [f for f in lifted.findings if f.transform == "REGISTER_TILE"]
    assert found and not any(f.applied for f in found), lifted.notes
    return found[0].reason, found[0].line


@pytest.mark.parametrize("edit,reason,line", [
    (("  float acc = 0.0f;\n", "  float acc = 0.0f;\n  if (row >= M) return;\n"),
     "early exit", 10),
    (("  int col = blockIdx.x * TILE + tx;\n",
      "  int col = blockIdx.x * TILE + tx;\n  int tid = ty * TILE + tx;\n"),
     "multiplies a thread index by the tile size", 9),
    (("    __syncthreads();\n    for", "    __syncthreads();\n    __syncthreads();\n    for"),
     "exactly two barriers", 10),
    (("acc += As[ty][k] * Bs[k][tx];", "acc += As[ty][k] * Bs[k][tx]; C[k] = acc;"),
     "the compute writes `C[k]`", 14),
    (("acc += As[ty][k] * Bs[k][tx];", "acc += As[0][k] * Bs[k][tx];"),
     "does not read the tile at (thread index, k)", 14),
    (("t += TILE) {", "t += TILE + ty) {"), "depends on the thread index", 10),
    (("for (int t = 0; t < K; t += TILE) {", "for (int t = 0; t < K / TILE * TILE; t += TILE) {"),
     "counts whole tiles of the written size", 10),
])
def test_kernels_the_analysis_cannot_follow_are_refused_with_the_line(
        edit: tuple[str, str], reason: str, line: int) -> None:
    assert edit[0] in BASE
    got, at = _refusal(BASE.replace(edit[0], edit[1], 1))
    assert reason in got
    assert at == line


# -- nvcc at the corners -------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(GEMMS))
def test_gemm_templates_compile_at_default_and_corners(name: str, compiler: Any) -> None:
    template = lifted_template(lift_gemm(GEMMS[name]))
    for config in host_sample(corner_configs(template, ENV)):
        result = compiler.compile(template.render(config, "fp32"))
        assert result.ok, f"{config}: {result.error_summary}\n{result.log[-1500:]}"


# -- host simulation of the block ---------------------------------------------------------

_MAIN = r"""
int main() {
  const int M = %(M)d, N = %(N)d, K = %(K)d;
  std::vector<float> A(M * K), B(K * N), C(M * N, -7.0f);
  for (int i = 0; i < M * K; ++i) A[i] = (float)((i * 37) %% 17 - 8) / 8.0f;
  for (int i = 0; i < K * N; ++i) B[i] = (float)((i * 29) %% 13 - 6) / 4.0f;
  wb_launch({%(gx)d, %(gy)d, 1}, {%(bx)d, %(by)d, 1},
            [&] { k(C.data(), A.data(), B.data(), M, N, K%(extra)s); });
  double worst = 0.0;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      double ref = 0.0;
      for (int k = 0; k < K; ++k) ref += (double)A[r * K + k] * B[%(b_index)s];
      worst = std::max(worst, std::fabs(%(alpha)s * ref - C[r * N + c]));
    }
  std::printf("%%.9g\n", worst);
  return 0;
}
"""


def simulate(g: Gemm, template: KernelTemplate, config: dict[str, Any], work: Path) -> float:
    """Worst absolute error of the rendered kernel, run on the host block by block."""
    launch = template.launch_for(config, ENV)
    source = template.render(config, "fp32").source
    main = _MAIN % {**ENV, "gx": launch.grid[0], "gy": launch.grid[1], "bx": launch.block[0],
                    "by": launch.block[1], "extra": g.extra_args, "b_index": g.b_index,
                    "alpha": g.alpha}
    return float(run_on_host(work, "sim", COOPERATIVE_BLOCK + HOST_VECTOR + source + main))


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
@pytest.mark.parametrize("name", sorted(GEMMS))
def test_sampled_configs_compute_the_product(name: str) -> None:
    g = GEMMS[name]
    template = lifted_template(lift_gemm(g))
    space = list(template.space(ENV))
    rng = random.Random(28)
    configs = [dict(template.default_config()), *corner_configs(template, ENV)[1:],
               *(dict(c) for c in rng.sample(space, 3))]
    with tempfile.TemporaryDirectory() as tmp:
        for config in host_sample(configs):
            assert simulate(g, template, config, Path(tmp)) < 1e-3, config


# -- the textbook transpose, spelled with macros or literals, its pad included --------------

TRANSPOSES = {
    "macros_padded": """#define TILE_DIM 32
#define BLOCK_ROWS 8
extern "C" __global__ void k(float* odata, const float* idata, int width, int height) {
  __shared__ float tile[TILE_DIM][TILE_DIM + 1];
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
  __syncthreads();
  x = blockIdx.y * TILE_DIM + threadIdx.x;
  y = blockIdx.x * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
""",
    "literals_33": """extern "C" __global__ void k(float* out, const float* in, int width, int height) {
  __shared__ float t[32][33];
  int bx = blockIdx.x * 32, by = blockIdx.y * 32;
  for (int r = 0; r < 32; r += 8) {
    int gx = bx + threadIdx.x, gy = by + threadIdx.y + r;
    if (gx < width && gy < height) t[threadIdx.y + r][threadIdx.x] = in[gy * width + gx];
  }
  __syncthreads();
  for (int r = 0; r < 32; r += 8) {
    int ox = by + threadIdx.x, oy = bx + threadIdx.y + r;
    if (ox < height && oy < width) out[oy * height + ox] = t[threadIdx.x][threadIdx.y + r];
  }
}
""",
}


def lift_transpose(name: str) -> LiftedSource:
    return lift_kernel(TRANSPOSES[name], entry="k",
                       grid=["ceil_div(width, 32)", "ceil_div(height, 32)"], block=["32", "8"],
                       scalars={"width": "width", "height": "height"})


@pytest.mark.parametrize("name", sorted(TRANSPOSES))
def test_the_textbook_transpose_lifts_tile_rows_pad_and_order(name: str, compiler: Any) -> None:
    lifted = lift_transpose(name)
    names = [p.name for p in lifted.params]
    assert {"TILE", "PAD", "BLOCK_ORDER"} <= set(names), lifted.notes
    rows = "TUNED_BLOCK_ROWS" if "#define BLOCK_ROWS" in TRANSPOSES[name] else "BLOCK_ROWS"
    assert rows in names
    assert lifted.block == ("TILE", rows)
    assert lifted.grid == ("ceil_div(width, TILE)", "ceil_div(height, TILE)")
    template = lifted_template(lifted)
    assert template.default_config()["PAD"] == 1  # the author's pad is the default
    env = {"width": 100, "height": 70}
    for config in host_sample(corner_configs(template, env)):
        result = compiler.compile(template.render(config, "fp32"))
        assert result.ok, f"{config}: {result.error_summary}\n{result.log[-1500:]}"


# -- a shared tile tied to the block: lifted with every use, or the block kept --------------

BLUR = """#define TILE 16
extern "C" __global__ void k(float* out, const float* in, int w, int h) {
  __shared__ float tile[TILE + 2][TILE + 2];
  int x0 = blockIdx.x * TILE - 1, y0 = blockIdx.y * TILE - 1;
  for (int i = threadIdx.y; i < TILE + 2; i += TILE)
    for (int j = threadIdx.x; j < TILE + 2; j += TILE) {
      int gx = min(max(x0 + j, 0), w - 1), gy = min(max(y0 + i, 0), h - 1);
      tile[i][j] = in[gy * w + gx];
    }
  __syncthreads();
  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
  if (x < w && y < h) {
    float s = 0.0f;
    for (int dy = 0; dy < 3; ++dy)
      for (int dx = 0; dx < 3; ++dx) s += tile[threadIdx.y + dy][threadIdx.x + dx];
    out[y * w + x] = s / 9.0f;
  }
}
"""


# the halo loaded by per-thread branches: the apron lift (apron.py) does not follow that
# load, so the tied tile is lifted through its macro (or the block kept)
BLUR_BRANCHES = BLUR.replace("""  for (int i = threadIdx.y; i < TILE + 2; i += TILE)
    for (int j = threadIdx.x; j < TILE + 2; j += TILE) {
      int gx = min(max(x0 + j, 0), w - 1), gy = min(max(y0 + i, 0), h - 1);
      tile[i][j] = in[gy * w + gx];
    }
""", """  int tx = threadIdx.x, ty = threadIdx.y, e = TILE + 1;
  int cx = min(max(x0 + tx + 1, 0), w - 1), cy = min(max(y0 + ty + 1, 0), h - 1);
  int ex = min(max(x0 + tx * e, 0), w - 1), ey = min(max(y0 + ty * e, 0), h - 1);
  tile[ty + 1][tx + 1] = in[cy * w + cx];
  if (tx < 2) tile[ty + 1][tx * e] = in[cy * w + ex];
  if (ty < 2) tile[ty * e][tx + 1] = in[ey * w + cx];
  if (tx < 2 && ty < 2) tile[ty * e][tx * e] = in[ey * w + ex];
""")


def lift_blur(source: str) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=["ceil_div(w, 16)", "ceil_div(h, 16)"],
                       block=["16", "16"], scalars={"w": "w", "h": "h"})


def test_a_halo_tile_spelled_with_its_macro_follows_one_tile_parameter(compiler: Any) -> None:
    assert any(f.transform == "OUT_XY" and f.applied for f in lift_blur(BLUR).findings)
    lifted = lift_blur(BLUR_BRANCHES)
    assert [p.name for p in lifted.params][:1] == ["TUNED_TILE"], lifted.notes
    assert "#define TILE TUNED_TILE" in lifted.source  # extents, halo and load loops follow
    assert "__shared__ float tile[TILE + 2][TILE + 2];" in lifted.source
    assert lifted.block == ("TUNED_TILE", "TUNED_TILE")
    assert lifted.grid == ("ceil_div(w, TUNED_TILE)", "ceil_div(h, TUNED_TILE)")
    template = lifted_template(lifted)
    for tile in (8, 32):
        config = {**template.default_config(), "TUNED_TILE": tile}
        result = compiler.compile(template.render(config, "fp32"))
        assert result.ok, result.log[-1500:]


@pytest.mark.parametrize("source,line", [
    (BLUR_BRANCHES.replace("#define TILE 16\n", "").replace("TILE", "16"), 2),  # literals
    (GEMMS["literal_ifelse_tile_count"].source.replace(
        "  float sum = 0;\n", "  float sum = 0;\n  if (r >= M) return;\n"), 3),
], ids=["blur_literals", "gemm_refused"])
def test_a_tied_tile_the_analysis_cannot_lift_keeps_the_block(source: str, line: int) -> None:
    """The issue's failure: block x / y lifted as independent ranges while the shared tile
    (and its halo) stayed at the written size."""
    tile = 32 if "sa[32]" in source else 16
    lifted = lift_kernel(source, entry="k", grid=[f"ceil_div(N, {tile})", f"ceil_div(M, {tile})"],
                         block=[str(tile), str(tile)], scalars={})
    assert lifted.block == (str(tile), str(tile))
    assert not {"BLOCK_X", "BLOCK_Y"} & {p.name for p in lifted.params}
    kept = [f for f in lifted.findings if f.transform == "BLOCK_X" and not f.applied]
    assert kept and "tied to the block size" in kept[0].reason and kept[0].line == line


def test_a_refused_gemm_spelled_with_one_macro_keeps_its_tiles_tied() -> None:
    lifted = lift_blur(GEMMS["macro_aliases"].source.replace(
        "  float acc = 0.0f;\n", "  float acc = 0.0f;\n  if (row >= M) return;\n"))
    assert any(f.transform == "REGISTER_TILE" and "early exit" in f.reason
               for f in lifted.findings)
    assert lifted.block == ("TUNED_TILE", "TUNED_TILE")
    assert "#define TILE TUNED_TILE" in lifted.source
