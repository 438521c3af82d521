"""Register tiling of GEMMs as other people write them (issue 28, part A.3).

``C = alpha * A.B + beta * C`` with the old C read in the epilogue; A stored transposed
(``A[k * M + row]``); ``row`` / ``col`` from ``blockIdx * blockDim + threadIdx`` with k-tiles
counted by ``(K + TILE - 1) / TILE`` and a ``#pragma unroll`` inner loop; a while loop over
tiles with the tile step in a ``const int`` local; a double-precision product. Each lifts to
BM/BN/BK/TM/TN with the launch derived, and its default and corner configs compute, on the
host, the same product as the kernel as written; spellings the analysis cannot follow are
refused with the line.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from helpers_templater import corner_configs, host_sample, lifted_template
from regtile_spellings import Spelling, lift, worst_error

GRID = ("ceil_div(N, 16)", "ceil_div(M, 16)")
MNK = {"M": "M", "N": "N", "K": "K"}

SPELLINGS: dict[str, Spelling] = {
    "alpha_beta_epilogue_reads_c": Spelling("""
#define TILE_SIZE 16
extern "C" __global__ void k(int M, int N, int K, float alpha, const float* A,
                             const float* B, float beta, float* C) {
  __shared__ float Asub[TILE_SIZE][TILE_SIZE];
  __shared__ float Bsub[TILE_SIZE][TILE_SIZE];
  int tRow = threadIdx.y, tCol = threadIdx.x;
  int gRow = TILE_SIZE * blockIdx.y + tRow;
  int gCol = TILE_SIZE * blockIdx.x + tCol;
  float tmp = 0.0f;
  for (int bk = 0; bk < K; bk += TILE_SIZE) {
    Asub[tRow][tCol] = (gRow < M && bk + tCol < K) ? A[gRow * K + bk + tCol] : 0.0f;
    Bsub[tRow][tCol] = (bk + tRow < K && gCol < N) ? B[(bk + tRow) * N + gCol] : 0.0f;
    __syncthreads();
    for (int d = 0; d < TILE_SIZE; ++d)
      tmp += Asub[tRow][d] * Bsub[d][tCol];
    __syncthreads();
  }
  if (gRow < M && gCol < N)
    C[gRow * N + gCol] = alpha * tmp + beta * C[gRow * N + gCol];
}
""", GRID, ("16", "16"), {**MNK, "alpha": "1", "beta": "1"},
        "k(M, N, K, 1.5f, A, B, -0.5f, C)", alpha="1.5", beta="-0.5"),
    "a_transposed_literal_32": Spelling("""
// C = A^T B with A stored K x M (element (r, k) at A[k * M + r])
extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float at[32][32];
  __shared__ float bt[32][33];
  int i = blockIdx.y * 32 + threadIdx.y;
  int j = blockIdx.x * 32 + threadIdx.x;
  float c = 0.0f;
  for (int k0 = 0; k0 < K; k0 += 32) {
    int ka = k0 + threadIdx.x;
    at[threadIdx.y][threadIdx.x] = (i < M && ka < K) ? A[ka * M + i] : 0.0f;
    bt[threadIdx.y][threadIdx.x] = (k0 + threadIdx.y < K && j < N) ?
        B[(k0 + threadIdx.y) * N + j] : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < 32; ++kk) c += at[threadIdx.y][kk] * bt[kk][threadIdx.x];
    __syncthreads();
  }
  if (i < M && j < N) C[i * N + j] = c;
}
""", ("ceil_div(N, 32)", "ceil_div(M, 32)"), ("32", "32"), MNK, "k(C, A, B, M, N, K)",
        a_index="(size_t)k * M + r"),
    "blockdim_rowcol_ceil_count_unroll_ifndef": Spelling("""#ifndef TILE
#define TILE 16
#endif
__global__ void matmul_kernel(const float *a, const float *b, float *c, int m, int n, int k)
{
    __shared__ float tile_a[TILE][TILE];
    __shared__ float tile_b[TILE][TILE];
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float value = 0;
    int n_tiles = (k + TILE - 1) / TILE;
    for (int t = 0; t < n_tiles; ++t)
    {
        if (row < m && t * TILE + threadIdx.x < k)
        {
            tile_a[threadIdx.y][threadIdx.x] = a[row * k + t * TILE + threadIdx.x];
        }
        else
        {
            tile_a[threadIdx.y][threadIdx.x] = 0;
        }
        if (col < n && t * TILE + threadIdx.y < k)
        {
            tile_b[threadIdx.y][threadIdx.x] = b[(t * TILE + threadIdx.y) * n + col];
        }
        else
        {
            tile_b[threadIdx.y][threadIdx.x] = 0;
        }
        __syncthreads();
        #pragma unroll
        for (int e = 0; e < TILE; ++e)
            value += tile_a[threadIdx.y][e] * tile_b[e][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n)
        c[row * n + col] = value;
}
""", GRID, ("16", "16"), {"m": "M", "n": "N", "k": "K"}, "matmul_kernel(A, B, C, M, N, K)",
        entry="matmul_kernel"),
    "while_loop_const_step_pointer_walk": Spelling("""
#define BLK 16
extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float sA[BLK][BLK];
  __shared__ float sB[BLK][BLK];
  const int ly = threadIdx.y;
  const int lx = threadIdx.x;
  const int y = blockIdx.y * BLK + ly;
  const int x = blockIdx.x * BLK + lx;
  const float* pa = A + blockIdx.y * BLK * K;
  const float* pb = B + blockIdx.x * BLK;
  float r = 0.0f;
  int kt = 0;
  while (kt < K) {
    sA[ly][lx] = (y < M && kt + lx < K) ? pa[ly * K + lx] : 0.0f;
    sB[ly][lx] = (kt + ly < K && x < N) ? pb[ly * N + lx] : 0.0f;
    __syncthreads();
    for (int q = 0; q < BLK; ++q) r += sA[ly][q] * sB[q][lx];
    __syncthreads();
    pa += BLK;
    pb += BLK * N;
    kt += BLK;
  }
  if (y < M && x < N) C[y * N + x] = r;
}
""", GRID, ("16", "16"), MNK, "k(C, A, B, M, N, K)"),
}

ENV = {"batch": 1, "M": 37, "N": 45, "K": 29}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_lifts_a_register_tile_with_derived_launch(name: str) -> None:
    s = SPELLINGS[name]
    lifted = lift(s)
    assert any(f.transform == "REGISTER_TILE" and f.applied for f in lifted.findings), \
        lifted.notes
    assert {"BM", "BN", "BK", "TM", "TN"} <= {p.name for p in lifted.params}
    assert lifted.block == ("BN // TN", "BM // TM")
    template = lifted_template(lifted, s.entry)
    default = template.default_config()
    tile = int(s.block[0])
    assert (default["BM"], default["BN"], default["BK"], default["TM"], default["TN"]) == \
        (tile, tile, tile, 1, 1)
    launch = template.launch_for(default, {**ENV, "elem_bytes": 4})
    assert list(launch.block[:2]) == [tile, tile]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_computes_the_product_at_default_and_corners(name: str) -> None:
    s = SPELLINGS[name]
    template = lifted_template(lift(s), s.entry)
    with tempfile.TemporaryDirectory() as tmp:
        for config in host_sample(corner_configs(template, {**ENV, "elem_bytes": 4})):
            assert worst_error(s, template, config, ENV, Path(tmp)) < 1e-3, config


# -- refusals ------------------------------------------------------------------------------

BASE = SPELLINGS["blockdim_rowcol_ceil_count_unroll_ifndef"]


@pytest.mark.parametrize("edit,reason,line", [
    # the count assumes whole tiles: a deeper BK would drop the remainder
    (("int n_tiles = (k + TILE - 1) / TILE;", "int n_tiles = k / TILE;"),
     "counts whole tiles of the written size", 11),
    # a thread numbering by the tile size
    (("float value = 0;", "float value = 0; int lane = threadIdx.y * TILE + threadIdx.x;"),
     "multiplies a thread index by the tile size", 10),
    # blockDim used other than as the block offset
    (("if (row < m && col < n)\n", "if (row < m && col < n && blockDim.x > 8)\n"),
     "is used other than as a block offset", 36),
])
def test_spellings_the_analysis_cannot_follow_are_refused_with_the_line(
        edit: tuple[str, str], reason: str, line: int) -> None:
    assert edit[0] in BASE.source
    s = Spelling(BASE.source.replace(edit[0], edit[1], 1), BASE.grid, BASE.block, BASE.scalars,
                 BASE.call, entry=BASE.entry)
    lifted = lift(s)
    found = [f for f in lifted.findings if f.transform == "REGISTER_TILE"]
    assert found and not any(f.applied for f in found), lifted.notes
    assert reason in found[0].reason, found[0].reason
    assert found[0].line == line
