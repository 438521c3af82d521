"""Register tiling of GEMMs whose tiles only some threads copy (issue 28; set 6's
linear_gelu_lda copies its X slice with ``if (threadIdx.x < Tile::DEPTH)``).

A block wider (taller) than a shared tile copies that tile with the threads that fit, the
guard a bound on a thread index (workbench/templater/regtile_guard.py): the analysis counts
the positions the guarded threads cover against the tile's extent, and the rewrite, whose
copy is a loop of every thread over the whole tile, drops the guard. The spellings differ
from the corpus's: ``#define`` tiles with A . W^T, a ReLU and leading dimensions as
arguments, the guard around a plain store; ``constexpr`` tiles with the guard on the rows
(``kDepth > ty`` through an alias, braced) and alpha / beta; a struct's members with the
guard (``<=``) inside a row loop over a padded W^T tile and a sigmoid; a 1-D block split
into rows and columns whose guards let every thread through; and, unguarded, a namespace's
``constexpr`` tile (read through the constants the caller reads). Each lift runs on the host
(g++, every thread a coroutine) at its default and, in turn, its all-ends corners and a
coarse BM != BN config, and prints the kernel as written's output bit for bit; guards the
analysis cannot follow are refused with their line.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import needs_nvcc
from helpers_templater import (
    COOPERATIVE_BLOCK,
    FULL_MATRIX,
    assert_rotation_covers,
    corner_configs,
    end_configs,
    lifted_template,
    rotating_sample,
    run_on_host,
)
from regtile_spellings import HOST_VECTOR
from test_corpus_unseen3 import _SPILLS, _ptxas_log

from workbench.templater import LiftedSource, lift_kernel


@dataclass(frozen=True)
class Gemm:
    """One author's kernel, its launch as written and its C++ call (arrays A, W, bias, C;
    sizes M, N, K; leading dimensions lda, ldw, ldc)."""

    source: str
    grid: tuple[str, ...]
    block: tuple[str, ...]
    call: str
    entry: str


SCALARS = {n: n for n in ("M", "N", "K", "lda", "ldw", "ldc")}
#: every size a multiple of no tile; the leading dimensions wider than the rows (a slice)
ENV = {"M": 37, "N": 45, "K": 29, "lda": 36, "ldw": 33, "ldc": 47}

SPELLINGS: dict[str, Gemm] = {
    # macros, A . W^T, a (32, 8) block whose first 8 columns of threads copy A's [8][8]
    # slice, a bias and a ReLU
    "define_bt_guard_x_relu": Gemm(r"""
#define TM_ROWS 8
#define TN_COLS 32
#define TK 8
extern "C" __global__ void fc_relu_bt(const float* A, const float* W, const float* bias,
                                      float* C, int M, int N, int K, int lda, int ldw,
                                      int ldc) {
  __shared__ float As[TM_ROWS][TK];
  __shared__ float Ws[TK][TN_COLS];
  int row = blockIdx.y * TM_ROWS + threadIdx.y;
  int col = blockIdx.x * TN_COLS + threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TK) {
    if (threadIdx.x < TK)
      As[threadIdx.y][threadIdx.x] =
          (row < M && k0 + threadIdx.x < K) ? A[(size_t)row * lda + k0 + threadIdx.x] : 0.0f;
    Ws[threadIdx.y][threadIdx.x] =
        (col < N && k0 + threadIdx.y < K) ? W[(size_t)col * ldw + k0 + threadIdx.y] : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < TK; ++kk) acc += As[threadIdx.y][kk] * Ws[kk][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * ldc + col] = fmaxf(acc + bias[col], 0.0f);
}
""", ("ceil_div(N, 32)", "ceil_div(M, 8)"), ("32", "8"),
        "fc_relu_bt(A, W, bias, C, M, N, K, lda, ldw, ldc)", "fc_relu_bt"),
    # constexpr, A . W (W [K, N]), a tall (16, 32) block whose first 16 rows of threads copy
    # W's [16][16] slice (`kDepth > ty`, braced, through an alias), alpha / beta
    "constexpr_nn_guard_y_alpha_beta": Gemm(r"""
constexpr int kRows = 32, kCols = 16;
constexpr int kDepth = 16;
__global__ void gemm_tall(int M, int N, int K, float alpha, const float* __restrict__ A,
                          int lda, const float* __restrict__ W, int ldw, float beta,
                          float* __restrict__ C, int ldc) {
  __shared__ float a_s[kRows][kDepth];
  __shared__ float w_s[kDepth][kCols];
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int r = blockIdx.y * kRows + ty;
  const int c = blockIdx.x * kCols + tx;
  float sum = 0.f;
  for (int t = 0; t < K; t += kDepth) {
    a_s[ty][tx] = (r < M && t + tx < K) ? A[r * lda + t + tx] : 0.f;
    if (kDepth > ty) {
      w_s[ty][tx] = (t + ty < K && c < N) ? W[(t + ty) * ldw + c] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < kDepth; q++) sum += a_s[ty][q] * w_s[q][tx];
    __syncthreads();
  }
  if (r < M && c < N) C[r * ldc + c] = alpha * sum + beta * C[r * ldc + c];
}
""", ("ceil_div(N, 16)", "ceil_div(M, 32)"), ("16", "32"),
        "gemm_tall(M, N, K, 1.25f, A, lda, W, ldw, -0.5f, C, ldc)", "gemm_tall"),
    # a struct's members (an enum and static constexpr), A . W^T with W's tile [32][16 + 1]
    # stored by a loop over its rows whose store only 16 columns of threads run (`<=`), a
    # (32, 8) block, a sigmoid of the biased sum
    "struct_bt_row_loop_guard_sigmoid": Gemm(r"""
struct Cfg {
  static constexpr int ROWS = 8;
  enum { COLS = 32, DEPTH = 16 };
};
extern "C" __global__ void fc_sigmoid(const float* A, const float* W, const float* bias,
                                      float* C, int M, int N, int K, int lda, int ldw,
                                      int ldc) {
  __shared__ float xa[Cfg::ROWS][Cfg::DEPTH];
  __shared__ float wt[Cfg::COLS][Cfg::DEPTH + 1];
  const int i = blockIdx.y * Cfg::ROWS + threadIdx.y;
  const int j = blockIdx.x * Cfg::COLS + threadIdx.x;
  const int n0 = blockIdx.x * Cfg::COLS;
  float s = 0.0f;
  for (int kb = 0; kb < K; kb += Cfg::DEPTH) {
    if (threadIdx.x < Cfg::DEPTH)
      xa[threadIdx.y][threadIdx.x] =
          (i < M && kb + (int)threadIdx.x < K) ? A[i * lda + kb + threadIdx.x] : 0.0f;
    for (int rr = threadIdx.y; rr < Cfg::COLS; rr += Cfg::ROWS) {
      if (threadIdx.x <= Cfg::DEPTH - 1)
        wt[rr][threadIdx.x] = (n0 + rr < N && kb + (int)threadIdx.x < K)
            ? W[(n0 + rr) * ldw + kb + threadIdx.x] : 0.0f;
    }
    __syncthreads();
    for (int e = 0; e < Cfg::DEPTH; ++e) s += xa[threadIdx.y][e] * wt[threadIdx.x][e];
    __syncthreads();
  }
  if (i < M && j < N) C[i * ldc + j] = 1.0f / (1.0f + expf(-(s + bias[j])));
}
""", ("ceil_div(N, 32)", "ceil_div(M, 8)"), ("32", "8"),
        "fc_sigmoid(A, W, bias, C, M, N, K, lda, ldw, ldc)", "fc_sigmoid"),
    # a 1-D block of 16 * 16 threads split by % and /, guards that let every thread
    # through (the author's bounds check), A . W, a bias
    "flat_block_split_guards_bias": Gemm(r"""
#ifndef TILE
#define TILE 16
#endif
__global__ void mm_bias(const float* A, const float* W, const float* bias, float* C,
                        int M, int N, int K, int lda, int ldw, int ldc) {
  __shared__ float sa[TILE][TILE];
  __shared__ float sw[TILE][TILE];
  const int lx = threadIdx.x % TILE, ly = threadIdx.x / TILE;
  const int gr = blockIdx.y * TILE + ly, gc = blockIdx.x * TILE + lx;
  float v = 0.0f;
  for (int k = 0; k < K; k += TILE) {
    if (lx < TILE && ly < TILE)
      sa[ly][lx] = (gr < M && k + lx < K) ? A[gr * lda + k + lx] : 0.0f;
    if (ly < TILE) {
      sw[ly][lx] = (k + ly < K && gc < N) ? W[(k + ly) * ldw + gc] : 0.0f;
    }
    __syncthreads();
    for (int q = 0; q < TILE; ++q) v += sa[ly][q] * sw[q][lx];
    __syncthreads();
  }
  if (gr < M && gc < N) C[gr * ldc + gc] = v + bias[gc];
}
""", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("256",),
        "mm_bias(A, W, bias, C, M, N, K, lda, ldw, ldc)", "mm_bias"),
    # a namespace's constexpr (read only through the caller's constants: the register tile
    # once replaced them with the file's macros), a square 2-D block, no guard, A . W with
    # a tanh of the biased sum
    "namespace_square_tanh": Gemm(r"""
namespace cfg { constexpr int TS = 16; }
extern "C" __global__ void mm_tanh(const float* A, const float* W, const float* bias,
                                   float* C, int M, int N, int K, int lda, int ldw, int ldc) {
  __shared__ float sa[cfg::TS][cfg::TS];
  __shared__ float sb[cfg::TS][cfg::TS];
  const int r = threadIdx.y, c = threadIdx.x;
  const int row = blockIdx.y * cfg::TS + r, col = blockIdx.x * cfg::TS + c;
  float acc = 0.0f;
  for (int t = 0; t < K; t += cfg::TS) {
    sa[r][c] = (row < M && t + c < K) ? A[row * lda + t + c] : 0.0f;
    sb[r][c] = (t + r < K && col < N) ? W[(t + r) * ldw + col] : 0.0f;
    __syncthreads();
    for (int e = 0; e < cfg::TS; ++e) acc += sa[r][e] * sb[e][c];
    __syncthreads();
  }
  if (row < M && col < N) C[row * ldc + col] = tanhf(acc + bias[col]);
}
""", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("16", "16"),
        "mm_tanh(A, W, bias, C, M, N, K, lda, ldw, ldc)", "mm_tanh"),
}

_INPUTS = r"""
static void wb_fill(float* A, float* W, float* C, float* bias, int M, int N, int K, int lda,
                    int ldw, int ldc) {
  const int rows_w = (K > N ? K : N);
  for (int i = 0; i < M * lda; ++i) A[i] = (float)((i * 37) % 17 - 8) / 8.0f;
  for (int i = 0; i < rows_w * ldw; ++i) W[i] = (float)((i * 29) % 13 - 6) / 4.0f;
  for (int i = 0; i < M * ldc; ++i) C[i] = (float)((i * 11) % 7 - 3) / 2.0f;
  for (int i = 0; i < N; ++i) bias[i] = (float)((i * 5) % 9 - 4) / 4.0f;
}
"""

#: One launch of a merged host program: every array filled afresh (C is read under beta),
#: the launch, every element of C (the ldc padding included) in hex floats, then a mark.
_LAUNCH = r"""  {
    const int M = %(M)d, N = %(N)d, K = %(K)d, lda = %(lda)d, ldw = %(ldw)d, ldc = %(ldc)d;
    std::vector<float> Av(M * lda), Wv((K > N ? K : N) * ldw), Cv(M * ldc), bv(N);
    float* A = Av.data(); float* W = Wv.data(); float* C = Cv.data(); float* bias = bv.data();
    wb_fill(A, W, C, bias, M, N, K, lda, ldw, ldc);
    wb_launch({%(gx)d, %(gy)d, 1}, {%(bx)d, %(by)d, 1}, [&] { %(ns)s::%(call)s; });
    for (int i = 0; i < M * ldc; ++i) std::printf("%%a\n", C[i]);
    std::printf("--\n");
  }
"""

_DEFINED = re.compile(r"^\s*#\s*define\s+(\w+)", re.MULTILINE)


def _isolated(source: str, ns: str) -> str:
    """``source`` in its own namespace (``extern "C"`` dropped: one C name each) with every
    macro it defines undefined after it, so the next kernel in the program sees none."""
    undefs = "".join(f"#undef {m}\n" for m in dict.fromkeys(_DEFINED.findall(source)))
    body = source.replace('extern "C" ', "")
    return f"namespace {ns} {{\n{body}\n}}\n{undefs}"


@dataclass(frozen=True)
class Launch:
    """One kernel source to run on the host with its grid and block."""

    source: str
    grid: tuple[int, ...]
    block: tuple[int, ...]


def lift(s: Gemm, source: str | None = None) -> LiftedSource:
    return lift_kernel(source if source is not None else s.source, entry=s.entry,
                       grid=list(s.grid), block=list(s.block), scalars=SCALARS)


def host_runs(s: Gemm, launches: list[Launch], work: Path) -> list[str]:
    """Every element of C after each launch, one host program compiling them all (each
    source isolated: :func:`_isolated`)."""
    kernels = [_isolated(run.source, f"wb_v{i}") for i, run in enumerate(launches)]
    body = [_LAUNCH % {**ENV, "gx": run.grid[0], "gy": run.grid[1], "bx": run.block[0],
                       "by": ([*run.block, 1])[1], "ns": f"wb_v{i}", "call": s.call}
            for i, run in enumerate(launches)]
    program = "".join([COOPERATIVE_BLOCK, HOST_VECTOR, *kernels, _INPUTS, "int main() {\n",
                       *body, "  return 0;\n}\n"])
    printed = run_on_host(work, "sim", program).split("--\n")
    assert printed[-1] == "" and len(printed) == len(launches) + 1, printed[-1][:200]
    return printed[:-1]


def written_launch(s: Gemm) -> Launch:
    """The kernel as written, launched as written."""
    tiles = {"fc_relu_bt": (32, 8), "gemm_tall": (16, 32), "fc_sigmoid": (32, 8),
             "mm_bias": (16, 16), "mm_tanh": (16, 16)}[s.entry]
    grid = (-(-ENV["N"] // tiles[0]), -(-ENV["M"] // tiles[1]))
    return Launch(s.source, grid, tuple(int(b) for b in s.block))


def lifted_launch(template: Any, config: dict[str, Any]) -> Launch:
    """``config`` of ``template`` rendered, launched as the template says at ENV."""
    launch = template.launch_for(config, {**ENV, "elem_bytes": 4})
    return Launch(template.render(config, "fp32").source, tuple(launch.grid),
                  tuple(launch.block))


def configs(s: Gemm) -> list[dict[str, Any]]:
    """The default, a coarse BM != BN config with float4 loads, the all-ends corners."""
    template = lifted_template(lift(s), s.entry)
    env = {**ENV, "elem_bytes": 4}
    default, *corners = corner_configs(template, env)
    coarse = {**default, "BM": 32, "BN": 64, "BK": 16, "TM": 4, "TN": 4,
              **({"VEC": 4} if "VEC" in template.param_names else {})}
    assert template.space(env).rejection(coarse) is None, template.space(env).rejection(coarse)
    return [default, coarse, *corners]


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_guarded_spelling_lifts_a_register_tile_launching_as_written(name: str) -> None:
    s = SPELLINGS[name]
    lifted = lift(s)
    assert any(f.transform == "REGISTER_TILE" and f.applied for f in lifted.findings), \
        lifted.notes
    template = lifted_template(lifted, s.entry)
    default = template.default_config()
    assert (default["TM"], default["TN"]) == (1, 1)
    launch = template.launch_for(default, {**ENV, "elem_bytes": 4})
    assert list(launch.block) == [int(b) for b in s.block] + [1] * (len(launch.block) -
                                                                    len(s.block))
    body = lifted.source[lifted.source.index(s.entry + "("):]
    # the guards went with the per-thread copies: every position of a tile is stored
    assert "threadIdx.x <" not in body and "> ty" not in body and "lx < " not in body, body


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_guarded_spelling_prints_what_the_kernel_as_written_prints(name: str) -> None:
    """The default, then one of the coarse config and the corners in turn (every one of
    them on some spelling each run; all with ``WORKBENCH_FULL_MATRIX=1``)."""
    s = SPELLINGS[name]
    template = lifted_template(lift(s), s.entry)
    listed = configs(s)
    assert_rotation_covers(len(SPELLINGS), listed)
    picked = rotating_sample(listed, sorted(SPELLINGS).index(name))
    with tempfile.TemporaryDirectory() as tmp:
        want, *got = host_runs(s, [written_launch(s),
                                   *(lifted_launch(template, c) for c in picked)], Path(tmp))
    assert len(want.split()) == ENV["M"] * ENV["ldc"]
    for config, printed in zip(picked, got, strict=True):
        assert printed == want, config


def test_the_host_check_can_fail() -> None:
    """A guard that lets half the threads through leaves half of A's slice stale: the kernel
    as written, so edited, prints something else, both run in one merged program (each
    kernel's macros undefined after it, so the edit is not masked by the other's)."""
    s = SPELLINGS["define_bt_guard_x_relu"]
    broken = Gemm(s.source.replace("if (threadIdx.x < TK)", "if (threadIdx.x < TK / 2)"),
                  s.grid, s.block, s.call, s.entry)
    with tempfile.TemporaryDirectory() as tmp:
        fine, edited = host_runs(s, [written_launch(s), written_launch(broken)], Path(tmp))
    assert fine != edited


_ROW_LOOP = """    for (int rr = threadIdx.y; rr < Cfg::COLS; rr += Cfg::ROWS) {
      if (threadIdx.x <= Cfg::DEPTH - 1)
"""


def test_a_guard_around_the_loop_storing_a_tile_is_read_as_one_inside_it() -> None:
    """The struct spelling with its guard moved around the row loop (``if (tx < 16) for
    (rr = ty; ...)``) computes as written at a coarse config."""
    s = SPELLINGS["struct_bt_row_loop_guard_sigmoid"]
    assert _ROW_LOOP in s.source
    moved = Gemm(s.source.replace(_ROW_LOOP, """    if (threadIdx.x < Cfg::DEPTH)
    for (int rr = threadIdx.y; rr < Cfg::COLS; rr += Cfg::ROWS) {
"""), s.grid, s.block, s.call, s.entry)
    template = lifted_template(lift(moved), moved.entry)
    config = configs(moved)[1]
    with tempfile.TemporaryDirectory() as tmp:
        want, got = host_runs(moved, [written_launch(moved), lifted_launch(template, config)],
                              Path(tmp))
    assert got == want, config


# -- refusals ------------------------------------------------------------------------------

BASE = SPELLINGS["define_bt_guard_x_relu"]
LOOP = SPELLINGS["struct_bt_row_loop_guard_sigmoid"]


@pytest.mark.parametrize("base,edit,reason,line", [
    # half of A's slice stored: 4 positions along k where the tile has 8
    (BASE, ("if (threadIdx.x < TK)", "if (threadIdx.x < TK / 2)"),
     "the store to As covers 4 positions along its index `threadIdx.x`, but the tile's "
     "extent there is 8", 14),
    # the guard reads the data's edge too: a thread past M leaves its element stale
    (BASE, ("if (threadIdx.x < TK)", "if (threadIdx.x < TK && row < M)"),
     "the guard `threadIdx.x < TK && row < M` of a tile store is not bounds on thread "
     "indices", 14),
    # the upper threads copy, shifted: a thread numbering the rewrite does not model
    (BASE, ("if (threadIdx.x < TK)\n      As[threadIdx.y][threadIdx.x] =\n          "
            "(row < M && k0 + threadIdx.x < K) ? A[(size_t)row * lda + k0 + threadIdx.x]",
            "if (threadIdx.x >= 24)\n      As[threadIdx.y][threadIdx.x - 24] =\n          "
            "(row < M && k0 + threadIdx.x - 24 < K) ? A[(size_t)row * lda + k0 + "
            "threadIdx.x - 24]"),
     "`threadIdx.x >= 24` says which threads store", 14),
    # a guard around the row loop and another around its store
    (LOOP, ("    for (int rr = threadIdx.y;", "    if (threadIdx.x < 20)\n    for (int rr = "
                                             "threadIdx.y;"),
     "a guard around the loop storing a tile and another around its store", 19),
    # the guard bounds the rows the loop walks: rows 0..3 and 8..11 of each 8, stored
    (LOOP, ("if (threadIdx.x <= Cfg::DEPTH - 1)", "if (threadIdx.y < 4)"),
     "the guard of the store to wt bounds the thread index along y, which the loop storing "
     "it also walks", 20),
])
def test_guards_the_analysis_cannot_follow_are_refused_with_the_line(
        base: Gemm, edit: tuple[str, str], reason: str, line: int) -> None:
    assert edit[0] in base.source
    lifted = lift(base, base.source.replace(edit[0], edit[1], 1))
    found = [f for f in lifted.findings if f.transform == "REGISTER_TILE"]
    assert found and not any(f.applied for f in found), lifted.notes
    assert reason in found[0].reason, found[0].reason
    assert found[0].line == line, found[0]


@needs_nvcc
@pytest.mark.timeout(300)
def test_the_corners_compile_for_sm90_without_spilling(tmp_path: Path) -> None:
    """The last all-ends corner (the largest tiles, 8 x 8 a thread) of the struct spelling
    (W's padded tile, the sigmoid) on every run; every corner of every spelling under
    ``WORKBENCH_FULL_MATRIX=1``."""
    for name in sorted(SPELLINGS) if FULL_MATRIX else ["struct_bt_row_loop_guard_sigmoid"]:
        s = SPELLINGS[name]
        template = lifted_template(lift(s), s.entry)
        corners = end_configs(template, {**ENV, "elem_bytes": 4})
        for i, config in enumerate(corners if FULL_MATRIX else corners[-1:]):
            log = _ptxas_log(template.render(config, "fp32").source, tmp_path,
                             f"{s.entry}{i}")
            spills = _SPILLS.findall(log)
            assert spills and all(x == ("0", "0") for x in spills), f"{config} spills:\n{log}"
