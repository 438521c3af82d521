"""Register tiling of GEMMs launched with 1-D blocks (issue 28, the sgemm_nt spelling).

One block of ``T * T`` threads whose flat index is split into a row and a column (``/ T`` and
``% T``, ``>> log2 T`` and ``& (T - 1)``, directly or through locals; T a literal, a macro,
an ``#ifndef`` default, a ``constexpr`` or a ``const int`` local), shared tiles declared
2-D or flat (``[T * T]`` read ``S[r * T + c]``, stored at ``S[tid]``), global operands reached through pointer
offsets or flat indices, ``A . B`` and ``A . B^T``, the output's rows offset by blockIdx.y or
(siboehm's SGEMM) by blockIdx.x. Each lift keeps a 1-D block of
``(BM / TM) * (BN / TN)`` threads whose defaults launch the kernel as written, and its default
and corner configs compute, on the host (g++), the product the kernel as written computes;
spellings the analysis cannot prove are refused with the line and what is missing.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import (
    assert_rotation_covers,
    corner_configs,
    lifted_template,
    rotating_sample,
)
from regtile_spellings import Spelling, lift, worst_error

ROOT = Path(__file__).resolve().parents[1]
SGEMM_NT = ROOT / "benchmarks" / "corpus_compute_unseen2" / "sgemm_nt"
MNK = {"M": "M", "N": "N", "K": "K"}
B_T = "(size_t)bt * N * K + (size_t)c * K + k"  # B stored N x K: A . B^T

SPELLINGS: dict[str, Spelling] = {
    # the corpus kernel: macro, unsigned aliases, pointers moved to the block's tiles and
    # walked along K between the barriers, flat tiles, A . B^T
    "corpus_sgemm_nt": Spelling((SGEMM_NT / "baseline.cu").read_text(),
                                ("ceil_div(N, 32)", "ceil_div(M, 32)"), ("1024",), MNK,
                                "sgemm_nt(A, B, C, M, N, K)", b_index=B_T, entry="sgemm_nt"),
    # literals, a tid local split by shift and mask, flat tiles, flat global indices, A . B,
    # braces and #pragma unroll, a rounded-up tile count
    "literal_tid_shift_mask_flat_nn": Spelling("""
extern "C" __global__ void mm(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float tileA[16 * 16];
  __shared__ float tileB[256];
  int tid = threadIdx.x;
  int ty = tid >> 4;
  int tx = tid & 15;
  int row = blockIdx.y * 16 + ty;
  int col = blockIdx.x * 16 + tx;
  float acc = 0.0f;
  int tiles = (K + 15) / 16;
  for (int t = 0; t < tiles; t++) {
    int ka = t * 16 + tx, kb = t * 16 + ty;
    if (row < M && ka < K) {
      tileA[ty * 16 + tx] = A[row * K + ka];
    } else {
      tileA[ty * 16 + tx] = 0.0f;
    }
    tileB[ty * 16 + tx] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int e = 0; e < 16; e++) {
      acc += tileA[ty * 16 + e] * tileB[e * 16 + tx];
    }
    __syncthreads();
  }
  if (row < M && col < N) {
    C[row * N + col] = acc;
  }
}
""", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("256",), MNK, "mm(A, B, C, M, N, K)",
        entry="mm"),
    # an #ifndef default, 2-D tiles in a 1-D block, one declaration of both splits, a batch
    # index from blockIdx.z moving the pointers, B^T read along k, alpha / beta epilogue
    "ifndef_2d_tiles_batched_bt": Spelling("""#ifndef TS
#define TS 8
#endif
__global__ void bgemm_nt(int M, int N, int K, float alpha, const float* __restrict__ A,
                         const float* __restrict__ Bt, float beta, float* __restrict__ C) {
  __shared__ float sa[TS][TS];
  __shared__ float sb[TS][TS];
  const int batch = blockIdx.z;
  A += (size_t)batch * M * K;
  Bt += (size_t)batch * N * K;
  C += (size_t)batch * M * N;
  const int r = threadIdx.x / TS, c = threadIdx.x % TS;
  const int gr = blockIdx.y * TS + r;
  const int gc = blockIdx.x * TS + c;
  float sum = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TS) {
    sa[r][c] = (gr < M && k0 + c < K) ? A[gr * K + k0 + c] : 0.0f;
    sb[r][c] = (blockIdx.x * TS + r < N && k0 + c < K) ? Bt[(blockIdx.x * TS + r) * K + k0 + c]
                                                       : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < TS; ++kk)
      sum += sa[r][kk] * sb[c][kk];
    __syncthreads();
  }
  if (gr < M && gc < N)
    C[gr * N + gc] = alpha * sum + beta * C[gr * N + gc];
}
""", ("ceil_div(N, 8)", "ceil_div(M, 8)", "batch"), ("64",),
        {**MNK, "alpha": "1", "beta": "1"}, "bgemm_nt(M, N, K, 1.5f, A, B, -0.5f, C)",
        b_index=B_T, alpha="1.5", beta="-0.5", entry="bgemm_nt"),
    # y / x names through a local holding the flat index, pointer offsets to the block's
    # tiles, the column split first, a while loop over k, A . B, a double accumulator
    "y_x_names_pointer_walk_while": Spelling("""
#define BLK 32
extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float As[BLK * BLK];
  __shared__ float Bs[BLK * BLK];
  const unsigned int t = threadIdx.x;
  const unsigned int x = t % BLK;
  const unsigned int y = t / BLK;
  const float* a = A + blockIdx.y * BLK * K;
  const float* b = B + blockIdx.x * BLK;
  float* c = C + blockIdx.y * BLK * N + blockIdx.x * BLK;
  const int rows = M - blockIdx.y * BLK, cols = N - blockIdx.x * BLK;
  double acc = 0.0;
  int k0 = 0;
  while (k0 < K) {
    As[y * BLK + x] = ((int)y < rows && k0 + (int)x < K) ? a[y * K + x] : 0.0f;
    Bs[y * BLK + x] = (k0 + (int)y < K && (int)x < cols) ? b[y * N + x] : 0.0f;
    __syncthreads();
    for (int i = 0; i < BLK; ++i) acc += As[y * BLK + i] * Bs[i * BLK + x];
    __syncthreads();
    a += BLK;
    b += BLK * N;
    k0 += BLK;
  }
  if ((int)y < rows && (int)x < cols) c[y * N + x] = (float)acc;
}
""", ("ceil_div(N, 32)", "ceil_div(M, 32)"), ("1024",), MNK, "k(C, A, B, M, N, K)"),
    # siboehm's shared-memory SGEMM: the ROWS from blockIdx.x (grid (M / 32, N / 32)), the
    # column split first, pointers walked by BLOCKSIZE and BLOCKSIZE * N, braces in the
    # product loop, alpha / beta; bounds guarded so ragged sizes stay in range
    "rows_from_blockidx_x_siboehm": Spelling("""
#define BLOCKSIZE 32
extern "C" __global__ void sgemm_smem(int M, int N, int K, float alpha, const float *A,
                                      const float *B, float beta, float *C) {
  const uint cRow = blockIdx.x;
  const uint cCol = blockIdx.y;
  __shared__ float As[BLOCKSIZE * BLOCKSIZE];
  __shared__ float Bs[BLOCKSIZE * BLOCKSIZE];
  const uint threadCol = threadIdx.x % BLOCKSIZE;
  const uint threadRow = threadIdx.x / BLOCKSIZE;
  A += cRow * BLOCKSIZE * K;
  B += cCol * BLOCKSIZE;
  C += cRow * BLOCKSIZE * N + cCol * BLOCKSIZE;
  const int rows = M - cRow * BLOCKSIZE, cols = N - cCol * BLOCKSIZE;
  float tmp = 0.0;
  for (int bkIdx = 0; bkIdx < K; bkIdx += BLOCKSIZE) {
    As[threadRow * BLOCKSIZE + threadCol] =
        ((int)threadRow < rows && bkIdx + (int)threadCol < K) ? A[threadRow * K + threadCol] : 0.0f;
    Bs[threadRow * BLOCKSIZE + threadCol] =
        (bkIdx + (int)threadRow < K && (int)threadCol < cols) ? B[threadRow * N + threadCol] : 0.0f;
    __syncthreads();
    A += BLOCKSIZE;
    B += BLOCKSIZE * N;
    for (int dotIdx = 0; dotIdx < BLOCKSIZE; ++dotIdx) {
      tmp += As[threadRow * BLOCKSIZE + dotIdx] *
             Bs[dotIdx * BLOCKSIZE + threadCol];
    }
    __syncthreads();
  }
  if ((int)threadRow < rows && (int)threadCol < cols)
    C[threadRow * N + threadCol] = alpha * tmp + beta * C[threadRow * N + threadCol];
}
""", ("ceil_div(M, 32)", "ceil_div(N, 32)"), ("1024",), {**MNK, "alpha": "1", "beta": "1"},
        "sgemm_smem(M, N, K, 1.5f, A, B, -0.5f, C)", alpha="1.5", beta="-0.5",
        entry="sgemm_smem"),
    # the tile size a file-scope constexpr, 2-D tiles, one declaration of row and column
    "constexpr_tile_2d_tiles": Spelling("""
constexpr int TS = 16;
extern "C" __global__ void mm(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float sa[TS][TS];
  __shared__ float sb[TS][TS];
  const int tid = threadIdx.x;
  const int r = tid / TS;
  const int c = tid % TS;
  const int row = blockIdx.y * TS + r, col = blockIdx.x * TS + c;
  float acc = 0.0f;
  for (int t = 0; t < K; t += TS) {
    sa[r][c] = (row < M && t + c < K) ? A[row * K + t + c] : 0.0f;
    sb[r][c] = (t + r < K && col < N) ? B[(t + r) * N + col] : 0.0f;
    __syncthreads();
    for (int e = 0; e < TS; ++e) acc += sa[r][e] * sb[e][c];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
""", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("256",), MNK, "mm(A, B, C, M, N, K)",
        entry="mm"),
    # the tile size a const int local, unsigned splits by / and & (T - 1), B^T, flat tiles
    "const_int_local_mask_bt": Spelling("""
extern "C" __global__ void abt(const float* A, const float* Bt, float* C, int M, int N, int K) {
  const int TILE = 16;
  __shared__ float a_s[TILE * TILE];
  __shared__ float b_s[TILE * TILE];
  const unsigned ly = threadIdx.x / TILE;
  const unsigned lx = threadIdx.x & (TILE - 1);
  const int gm = blockIdx.y * TILE + ly;
  const int gn0 = blockIdx.x * TILE;
  float v = 0.0f;
  for (int kb = 0; kb < K; kb += TILE) {
    a_s[ly * TILE + lx] = (gm < M && kb + (int)lx < K) ? A[gm * K + kb + lx] : 0.0f;
    b_s[ly * TILE + lx] = (gn0 + (int)ly < N && kb + (int)lx < K) ? Bt[(gn0 + ly) * K + kb + lx] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < TILE; i++)
      v += a_s[ly * TILE + i] * b_s[lx * TILE + i];
    __syncthreads();
  }
  if (gm < M && gn0 + (int)lx < N) C[gm * N + gn0 + lx] = v;
}
""", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("256",), MNK, "abt(A, B, C, M, N, K)",
        b_index=B_T, entry="abt"),
    # the tiles stored at the flat index itself (S[tid], S[threadIdx.x]: row tid / T, column
    # tid % T), the row and column split in one declaration
    "flat_tid_stores": Spelling("""
#define T 16
extern "C" __global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[T * T];
  __shared__ float Bs[T * T];
  const int tid = threadIdx.x;
  const int ty = tid / T, tx = tid % T;
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += T) {
    As[tid] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
    Bs[threadIdx.x] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < T; ++kk)
      acc += As[ty * T + kk] * Bs[kk * T + tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
""", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("256",), MNK, "k(A, B, C, M, N, K)"),
}

ENV = {"batch": 2, "M": 37, "N": 44, "K": 28}


def _env(s: Spelling) -> dict[str, int]:
    return {**ENV, "batch": ENV["batch"] if len(s.grid) == 3 else 1}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_1d_spelling_lifts_a_register_tile_keeping_a_1d_block(name: str) -> None:
    s = SPELLINGS[name]
    lifted = lift(s)
    assert any(f.transform == "REGISTER_TILE" and f.applied for f in lifted.findings), \
        lifted.notes
    assert {p.name for p in lifted.params} == {"BM", "BN", "BK", "TM", "TN", "VEC"}
    assert lifted.block[0] == "(BN // TN) * (BM // TM)" and \
        all(b == "1" for b in lifted.block[1:])
    template = lifted_template(lifted, s.entry)
    default = template.default_config()
    threads = int(s.block[0])
    side = int(threads ** 0.5)
    assert (default["BM"], default["BN"], default["BK"], default["TM"], default["TN"]) == \
        (side, side, side, 1, 1)
    launch = template.launch_for(default, {**_env(s), "elem_bytes": 4})
    assert list(launch.block) == [threads, 1, 1]
    # B read along k (A . B^T) is stored k-major, as A's tile always is
    kmajor = re.findall(r"__shared__ float (\w+)\[BK\]\[B[MN] \+ 1\]", lifted.source)
    assert len(kmajor) == (2 if s.b_index == B_T else 1), lifted.source


def _configs(s: Spelling) -> list[dict[str, Any]]:
    """Default, a coarse BM != BN config with float4 loads, and the valid corners."""
    template = lifted_template(lift(s), s.entry)
    env = {**_env(s), "elem_bytes": 4}
    space = template.space(env)
    out = corner_configs(template, env)
    # BM != BN: the all-ends corners have BM == BN and cannot tell the rows from the columns
    coarse = {**template.default_config(), "BM": 32, "BN": 64, "BK": 8, "TM": 4, "TN": 4,
              "VEC": 4}
    assert space.rejection(coarse) is None, space.rejection(coarse)
    default, *corners = (c for c in out if space.rejection(c) is None)
    return [default, coarse, *corners]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_1d_spelling_computes_the_product_at_default_and_corners(name: str) -> None:
    """Each spelling at its default and the coarse BM != BN config (the corners have
    BM == BN and cannot tell rows from columns) and, by default, one of its all-ends corners
    in turn (the spellings cover them between them each run); all of them with
    ``WORKBENCH_FULL_MATRIX=1``."""
    s = SPELLINGS[name]
    template = lifted_template(lift(s), s.entry)
    configs = _configs(s)
    assert len(configs) >= 3, configs
    assert_rotation_covers(len(SPELLINGS), configs, keep=2)
    with tempfile.TemporaryDirectory() as tmp:
        for config in rotating_sample(configs, sorted(SPELLINGS).index(name), keep=2):
            assert worst_error(s, template, config, _env(s), Path(tmp)) < 1e-3, config


# -- refusals ------------------------------------------------------------------------------

BASE = SPELLINGS["literal_tid_shift_mask_flat_nn"]


@pytest.mark.parametrize("edit,reason,line", [
    # the flat index swizzled: a thread numbering other than row / column
    (("tileB[ty * 16 + tx] = (kb", "tileB[tid ^ 1] = (kb"),
     "uses the flat thread index `tid` other than split", 19),
    # the block's row offset added to the thread's column
    (("int row = blockIdx.y * 16 + ty;", "int row = blockIdx.y * 16 + tx;"),
     "is not at (block row * 16 + thread row, block column * 16 + thread column)", 28),
    # a flat tile read at a column the analysis cannot bound by the tile's row
    (("acc += tileA[ty * 16 + e] * tileB[e * 16 + tx];",
      "acc += tileA[ty * 16 + (e ^ 1)] * tileB[(e ^ 1) * 16 + tx];"),
     "not a loop variable running 0 .. 16 - 1", 23),
    # a flat tile indexed other than row * T + column
    (("acc += tileA[ty * 16 + e]", "acc += tileA[16 * ty + e + 0 * tx]"),
     "indexes the flat tile tileA otherwise than `row * 16 + column`", 23),
    # threadIdx.y in a 1-D block
    (("int ty = tid >> 4;", "int ty = threadIdx.y;"),
     "`threadIdx.y` is read in a kernel launched with a 1-D block", 6),
])
def test_1d_spellings_the_analysis_cannot_prove_are_refused_with_the_line(
        edit: tuple[str, str], reason: str, line: int) -> None:
    assert edit[0] in BASE.source
    s = Spelling(BASE.source.replace(edit[0], edit[1], 1), BASE.grid, BASE.block, BASE.scalars,
                 BASE.call, entry=BASE.entry)
    lifted = lift(s)
    found = [f for f in lifted.findings if f.transform == "REGISTER_TILE"]
    assert found and not any(f.applied for f in found), lifted.notes
    assert reason in found[0].reason, found[0].reason
    assert found[0].line == line, found[0]


NT_BASE = SPELLINGS["corpus_sgemm_nt"]


@pytest.mark.parametrize("edit,reason,line", [
    # A's rows offset by the block index of the output's columns (a pointer offset: no sum
    # pairs the two, the addresses do)
    (("A += cRow * BLOCKSIZE * K;", "A += cCol * BLOCKSIZE * K;"),
     "the load `A[threadRow * K + threadCol]` of tile As does not move by one block along "
     "rows", 28),
    # the output's columns step by two tiles per block
    (("C += cRow * BLOCKSIZE * N + cCol * BLOCKSIZE;",
      "C += cRow * BLOCKSIZE * N + cCol * 2 * BLOCKSIZE;"),
     "is not at (block row * 32 + thread row, block column * 32 + thread column)", 39),
])
def test_1d_addresses_that_do_not_follow_the_block_are_refused(
        edit: tuple[str, str], reason: str, line: int) -> None:
    assert edit[0] in NT_BASE.source
    s = Spelling(NT_BASE.source.replace(edit[0], edit[1], 1), NT_BASE.grid, NT_BASE.block,
                 NT_BASE.scalars, NT_BASE.call, entry=NT_BASE.entry)
    found = [f for f in lift(s).findings if f.transform == "REGISTER_TILE"]
    assert found and not any(f.applied for f in found)
    assert reason in found[0].reason, found[0].reason
    assert found[0].line == line, found[0]


def test_the_block_index_of_the_rows_sets_the_grid_rule_it_divides() -> None:
    lifted = lift(SPELLINGS["rows_from_blockidx_x_siboehm"])
    assert lifted.grid == ("ceil_div(M, BM)", "ceil_div(N, BN)")
    assert lift(SPELLINGS["corpus_sgemm_nt"]).grid == ("ceil_div(N, BN)", "ceil_div(M, BM)")


def test_a_1d_block_that_is_not_the_tile_squared_is_not_register_tiled() -> None:
    # 512 threads split by / 16: not a (16, 16) block, nothing of the family to model
    s = Spelling(BASE.source, BASE.grid, ("512",), BASE.scalars, BASE.call, entry=BASE.entry)
    lifted = lift(s)
    assert not any(f.transform == "REGISTER_TILE" and f.applied for f in lifted.findings)
