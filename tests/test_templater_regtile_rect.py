"""Register tiling of GEMMs with rectangular block tiles (issue 28, the dense_relu family).

A block of ``(Bx, By)`` threads with ``Bx != By`` computing a ``By x Bx`` tile of the output,
one output per thread, over shared tiles of three sizes (rows ``By``, columns ``Bx``, depth
``BK`` along k, read from the tiles' extents), each tile stored either one element per thread
(``S[ty][tx]``, ``S[tx][ty]``) or in a loop of each thread over several rows or columns
(``for (j = ty; j < E; j += By) S[j][tx] = ...``, or over flat positions
``for (e = tid; e < R * C; e += Bx * By) S[e / C][e % C] = ...``), with an epilogue kept per output (alpha /
beta, a bias per column and a ReLU). The spellings below are written differently from the
corpus's dense_relu (names, literals / macros / ``#ifndef`` defaults / ``constexpr``, a loop
along rows or along columns, A . B and A . B^T, batched or not); each lift's default, corner
and a coarse BM != BN config compute on the host (g++) what the kernel as written computes.
Spellings the analysis cannot prove are refused with the line and what is missing.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import (
    COOPERATIVE_BLOCK,
    assert_rotation_covers,
    corner_configs,
    lifted_template,
    rotating_sample,
    run_on_host,
)
from regtile_spellings import HOST_VECTOR

from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel

ROOT = Path(__file__).resolve().parents[1]
DENSE_RELU = ROOT / "benchmarks" / "corpus_compute_unseen3" / "dense_relu" / "baseline.cu"


@dataclass(frozen=True)
class Rect:
    """One author's GEMM with its launch as written and what each output must equal
    (``want``: C++ over ``ref`` = sum_k A(b, r, k) * B(b, k, c), ``C0`` (the output before
    the launch) and ``bias``)."""

    source: str
    grid: tuple[str, ...]
    block: tuple[str, str]
    scalars: Mapping[str, str]
    call: str
    a_index: str
    b_index: str
    c_index: str
    want: str
    entry: str


MNK = {"M": "M", "N": "N", "K": "K"}
A_RM = "(size_t)bt * M * K + (size_t)r * K + k"
B_NN = "(size_t)bt * K * N + (size_t)k * N + c"
B_NT = "(size_t)bt * N * K + (size_t)c * K + k"
C_RM = "(size_t)bt * M * N + (size_t)r * N + c"

SPELLINGS: dict[str, Rect] = {
    # the corpus kernel (A . W^T, bias and ReLU, a loop of each thread over W's rows)
    "corpus_dense_relu": Rect(DENSE_RELU.read_text(), ("ceil_div(N, 32)", "ceil_div(M, 8)"),
                              ("32", "8"), MNK, "dense_relu(C, A, B, bias, M, N, K)", A_RM,
                              B_NT, C_RM, "std::max(ref + bias[c], 0.0)", "dense_relu"),
    # literals, A . B, a 16 x 8 block: A's [8][16] tile one element per thread, B's [16][16]
    # tile a loop over its rows without braces, alpha / beta epilogue, flat indices
    "literal_nn_row_loop_alpha_beta": Rect("""
extern "C" __global__ void sgemm_rect(int M, int N, int K, float alpha, const float* A,
                                      const float* B, float beta, float* C) {
  __shared__ float sA[8][16];
  __shared__ float sB[16][16];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * 8 + ty;
  int col = blockIdx.x * 16 + tx;
  float acc = 0.0f;
  for (int t = 0; t < K; t += 16) {
    sA[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
    for (int kr = ty; kr < 16; kr += 8)
      sB[kr][tx] = (t + kr < K && col < N) ? B[(t + kr) * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int e = 0; e < 16; ++e) acc += sA[ty][e] * sB[e][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = alpha * acc + beta * C[row * N + col];
}
""", ("ceil_div(N, 16)", "ceil_div(M, 8)"), ("16", "8"), MNK,
        "sgemm_rect(M, N, K, 1.5f, A, B, -0.5f, C)", A_RM, B_NN, C_RM,
        "1.5 * ref - 0.5 * C0[" + C_RM + "]", "sgemm_rect"),
    # #ifndef defaults, A . W^T with W's tile stored transposed by thread (Ws[tx][ty]), A's
    # tile a braced loop over its columns (k), the bias and an activation macro, a (16, 32)
    # block (more rows than columns), pointer offsets into the rows
    "ifndef_bt_column_loop_bias_act": Rect("""
#ifndef ROWS
#define ROWS 32
#endif
#ifndef COLS
#define COLS 16
#endif
#ifndef DEPTH
#define DEPTH 32
#endif
#define ACT(v) fmaxf((v), 0.0f)
__global__ void linear_act(const float* __restrict__ x, const float* __restrict__ w,
                           const float* __restrict__ bias, float* __restrict__ y,
                           int M, int N, int K) {
  __shared__ float a_tile[ROWS][DEPTH];
  __shared__ float w_tile[COLS][DEPTH + 1];
  const int c_local = threadIdx.x;
  const int r_local = threadIdx.y;
  const int out_r = blockIdx.y * ROWS + r_local;
  const int out_c = blockIdx.x * COLS + c_local;
  const float* xrow = x + (size_t)out_r * K;
  float total = 0.0f;
  for (int base = 0; base < K; base += DEPTH) {
    for (int kc = c_local; kc < DEPTH; kc += COLS) {
      a_tile[r_local][kc] = (out_r < M && base + kc < K) ? xrow[base + kc] : 0.0f;
    }
    if (out_c < N && base + r_local < K) {
      w_tile[c_local][r_local] = w[(size_t)out_c * K + base + r_local];
    } else {
      w_tile[c_local][r_local] = 0.0f;
    }
    __syncthreads();
    for (int q = 0; q < DEPTH; q++) {
      total += a_tile[r_local][q] * w_tile[c_local][q];
    }
    __syncthreads();
  }
  if (out_r < M && out_c < N) {
    y[(size_t)out_r * N + out_c] = ACT(total + bias[out_c]);
  }
}
""", ("ceil_div(N, 16)", "ceil_div(M, 32)"), ("16", "32"), MNK,
        "linear_act(A, B, bias, C, M, N, K)", A_RM, B_NT, C_RM,
        "std::max(ref + bias[c], 0.0)", "linear_act"),
    # constexpr sizes, a batch from blockIdx.z through a `batch` local and strides, A . B,
    # a wide (64, 8) block: A's [8][64] tile one element per thread, B's [64][64] tile a
    # loop over its k rows written `kr = kr + kRows` under `#pragma unroll 4`, no epilogue
    # beyond the store
    "constexpr_batched_wide": Rect("""
constexpr int kRows = 8;
constexpr int kCols = 64;
constexpr int kDepth = 64;
extern "C" __global__ void bmm_wide(float* out, const float* lhs, const float* rhs,
                                    int M, int N, int K) {
  __shared__ float L[kRows][kDepth];
  __shared__ float R[kDepth][kCols];
  const int batch = blockIdx.z;
  const size_t sl = (size_t)M * K, sr = (size_t)K * N, so = (size_t)M * N;
  int y = blockIdx.y * kRows + threadIdx.y;
  int x = blockIdx.x * kCols + threadIdx.x;
  float s = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kDepth) {
    L[threadIdx.y][threadIdx.x] = (y < M && k0 + threadIdx.x < K)
        ? lhs[batch * sl + (size_t)y * K + k0 + threadIdx.x] : 0.0f;
#pragma unroll 4
    for (int kr = threadIdx.y; kr < kDepth; kr = kr + kRows) {
      R[kr][threadIdx.x] = (k0 + kr < K && x < N)
          ? rhs[batch * sr + (size_t)(k0 + kr) * N + x] : 0.0f;
    }
    __syncthreads();
    for (int i = 0; i < kDepth; ++i) s += L[threadIdx.y][i] * R[i][threadIdx.x];
    __syncthreads();
  }
  if (y < M && x < N) out[batch * so + (size_t)y * N + x] = s;
}
""", ("ceil_div(N, 64)", "ceil_div(M, 8)", "batch"), ("64", "8"), MNK,
        "bmm_wide(C, A, B, M, N, K)", A_RM, B_NN, C_RM, "ref", "bmm_wide"),
    # macros, a flat thread index `tid` and loops of each thread over flat
    # positions of both tiles (`i / BLK_K`, `i % BLK_K` through locals in one, inline in the
    # other, a literal step in one), A . W^T with W's tile padded, no epilogue
    "macro_flat_index_loops_bt": Rect("""
#define BLK_M 8
#define BLK_N 16
#define BLK_K 32
extern "C" __global__ void fc_flat(const float* in, const float* weight, float* out,
                                   int M, int N, int K) {
  __shared__ float in_s[BLK_M][BLK_K];
  __shared__ float w_s[BLK_N][BLK_K + 1];
  const int tid = threadIdx.y * BLK_N + threadIdx.x;
  const int m0 = blockIdx.y * BLK_M, n0 = blockIdx.x * BLK_N;
  float acc = 0.f;
  for (int kt = 0; kt < K; kt += BLK_K) {
    for (int i = tid; i < BLK_M * BLK_K; i += BLK_M * BLK_N) {
      int rr = i / BLK_K;
      int cc = i % BLK_K;
      in_s[rr][cc] = (m0 + rr < M && kt + cc < K) ? in[(m0 + rr) * K + kt + cc] : 0.f;
    }
    for (int i2 = tid; i2 < BLK_N * BLK_K; i2 += 128)
      w_s[i2 / BLK_K][i2 % BLK_K] = (n0 + i2 / BLK_K < N && kt + i2 % BLK_K < K)
          ? weight[(n0 + i2 / BLK_K) * K + kt + i2 % BLK_K] : 0.f;
    __syncthreads();
    for (int kk = 0; kk < BLK_K; ++kk)
      acc += in_s[threadIdx.y][kk] * w_s[threadIdx.x][kk];
    __syncthreads();
  }
  const int m = m0 + threadIdx.y, n = n0 + threadIdx.x;
  if (m < M && n < N) out[m * N + n] = acc;
}
""", ("ceil_div(N, 16)", "ceil_div(M, 8)"), ("16", "8"), MNK,
        "fc_flat(A, B, C, M, N, K)", A_RM, B_NT, C_RM, "ref", "fc_flat"),
    # blockDim in the flat thread index and the loops' step (`e += blockDim.x * blockDim.y`),
    # flat loops over both tiles with the row / column as locals, A . B, a (32, 8) block with
    # a 16-deep k, camelCase names
    "blockdim_flat_loops_nn": Rect("""
#define TM_ 8
#define TN_ 32
#define TK_ 16
__global__ void gemm_bd(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[TM_][TK_];
  __shared__ float Bs[TK_][TN_];
  int t = threadIdx.y * blockDim.x + threadIdx.x;
  int rowBase = blockIdx.y * TM_;
  int colBase = blockIdx.x * TN_;
  float c = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TK_) {
    for (int e = t; e < TM_ * TK_; e += blockDim.x * blockDim.y) {
      int ar = e / TK_, ak = e % TK_;
      As[ar][ak] = (rowBase + ar < M && k0 + ak < K) ? A[(rowBase + ar) * K + k0 + ak] : 0.0f;
    }
    for (int e2 = t; e2 < TK_ * TN_; e2 += blockDim.x * blockDim.y) {
      int bk = e2 / TN_, bc = e2 % TN_;
      Bs[bk][bc] = (k0 + bk < K && colBase + bc < N) ? B[(k0 + bk) * N + colBase + bc] : 0.0f;
    }
    __syncthreads();
    for (int q = 0; q < TK_; ++q) c += As[threadIdx.y][q] * Bs[q][threadIdx.x];
    __syncthreads();
  }
  int row = rowBase + threadIdx.y, col = colBase + threadIdx.x;
  if (row < M && col < N) C[row * N + col] = c;
}
""", ("ceil_div(N, 32)", "ceil_div(M, 8)"), ("32", "8"), MNK,
        "gemm_bd(A, B, C, M, N, K)", A_RM, B_NN, C_RM, "ref", "gemm_bd"),
}

ENV = {"batch": 2, "M": 37, "N": 45, "K": 44}

_MAIN = r"""
int main() {
  const int batch = %(batch)d, M = %(M)d, N = %(N)d, K = %(K)d;
  std::vector<float> Av(batch * M * K), Bv(batch * K * N), Cv(batch * M * N), bv(N);
  float* A = Av.data(); float* B = Bv.data(); float* C = Cv.data(); float* bias = bv.data();
  for (int i = 0; i < batch * M * K; ++i) A[i] = (float)((i * 37) %% 17 - 8) / 8.0f;
  for (int i = 0; i < batch * K * N; ++i) B[i] = (float)((i * 29) %% 13 - 6) / 4.0f;
  for (int i = 0; i < batch * M * N; ++i) C[i] = (float)((i * 11) %% 7 - 3) / 2.0f;
  for (int i = 0; i < N; ++i) bias[i] = (float)((i * 5) %% 9 - 4);
  std::vector<float> C0(C, C + batch * M * N);
  wb_launch({%(gx)d, %(gy)d, %(gz)d}, {%(bx)d, %(by)d, 1}, [&] { %(call)s; });
  double worst = 0.0;
  for (int bt = 0; bt < batch; ++bt)
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c) {
        double ref = 0.0;
        for (int k = 0; k < K; ++k) ref += (double)A[%(a_index)s] * B[%(b_index)s];
        const double want = %(want)s;
        worst = std::max(worst, std::fabs(want - C[%(c_index)s]));
      }
  std::printf("%%.9g\n", worst);
  return 0;
}
"""


def _lift(s: Rect, source: str | None = None) -> LiftedSource:
    return lift_kernel(source if source is not None else s.source, entry=s.entry,
                       grid=list(s.grid), block=list(s.block), scalars=dict(s.scalars))


def _env(s: Rect) -> dict[str, int]:
    return {**ENV, "batch": ENV["batch"] if len(s.grid) == 3 else 1}


def worst_error(s: Rect, template: KernelTemplate, config: Mapping[str, Any],
                work: Path) -> float:
    """Worst absolute error of one config of ``s``'s lifted template, run on the host."""
    env = _env(s)
    launch = template.launch_for(dict(config), {**env, "elem_bytes": 4})
    grid = [*launch.grid, 1, 1][:3]
    source = template.render(dict(config), "fp32").source
    main = _MAIN % {**env, "gx": grid[0], "gy": grid[1], "gz": grid[2], "bx": launch.block[0],
                    "by": launch.block[1], "call": s.call, "a_index": s.a_index,
                    "b_index": s.b_index, "c_index": s.c_index, "want": s.want}
    return float(run_on_host(work, "sim", COOPERATIVE_BLOCK + HOST_VECTOR + source + main))


def _configs(s: Rect) -> list[dict[str, Any]]:
    """Default, coarse BM != BN configs (4 x 4 and 2 x 4 per thread) with float4 loads where
    the lift has them, and the valid corners."""
    template = lifted_template(_lift(s), s.entry)
    space = template.space({**_env(s), "elem_bytes": 4})
    default, *corners = corner_configs(template, {**_env(s), "elem_bytes": 4})
    vec = {"VEC": 4} if "VEC" in template.param_names else {}
    out = [default]
    for coarse in ({"BM": 64, "BN": 32, "BK": 16, "TM": 4, "TN": 4, **vec},
                   {"BM": 16, "BN": 64, "BK": 8, "TM": 2, "TN": 4, **vec}):
        config = {**template.default_config(), **coarse}
        assert space.rejection(config) is None, (config, space.rejection(config))
        out.append(config)
    return [*out, *corners]


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_rectangular_spelling_lifts_a_register_tile_launching_as_written(
        name: str) -> None:
    s = SPELLINGS[name]
    lifted = _lift(s)
    assert any(f.transform == "REGISTER_TILE" and f.applied for f in lifted.findings), \
        lifted.notes
    assert {"BM", "BN", "BK", "TM", "TN"} <= {p.name for p in lifted.params} <= \
        {"BM", "BN", "BK", "TM", "TN", "VEC"}
    template = lifted_template(lifted, s.entry)
    default = template.default_config()
    bx, by = int(s.block[0]), int(s.block[1])
    assert (default["BM"], default["BN"], default["TM"], default["TN"]) == (by, bx, 1, 1)
    launch = template.launch_for(default, {**_env(s), "elem_bytes": 4})
    assert list(launch.block)[:2] == [bx, by]
    # B read along k (A . B^T) is stored k-major, as A's tile always is
    kmajor = re.findall(r"__shared__ float (\w+)\[BK\]\[B[MN] \+ 1\]", lifted.source)
    assert len(kmajor) == (2 if s.b_index == B_NT else 1), lifted.source


def test_the_depth_along_k_is_read_from_the_tiles() -> None:
    depth = {name: lifted_template(_lift(s), s.entry).default_config()["BK"]
             for name, s in SPELLINGS.items()}
    assert depth == {"corpus_dense_relu": 32, "literal_nn_row_loop_alpha_beta": 16,
                     "ifndef_bt_column_loop_bias_act": 32, "constexpr_batched_wide": 64,
                     "macro_flat_index_loops_bt": 32, "blockdim_flat_loops_nn": 16}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_rectangular_spelling_computes_as_written_at_default_corners_and_bm_ne_bn(
        name: str) -> None:
    """Each spelling at its default and the first coarse BM != BN config (the corners have
    BM == BN) and, by default, one of the second coarse config and the corners in turn (the
    spellings cover them between them each run); all with ``WORKBENCH_FULL_MATRIX=1``."""
    s = SPELLINGS[name]
    template = lifted_template(_lift(s), s.entry)
    configs = _configs(s)
    assert configs[1]["BM"] != configs[1]["BN"] and configs[1]["TM"] * configs[1]["TN"] > 1
    assert_rotation_covers(len(SPELLINGS), configs, keep=2)
    with tempfile.TemporaryDirectory() as tmp:
        for config in rotating_sample(configs, sorted(SPELLINGS).index(name), keep=2):
            assert worst_error(s, template, config, Path(tmp)) < 1e-3, config


def test_the_kernel_as_written_passes_its_own_host_check() -> None:
    """The harness can fail: a wrong epilogue (the ReLU dropped) is caught."""
    s = SPELLINGS["corpus_dense_relu"]
    broken = Rect(s.source.replace("fmaxf(sum + b[n], 0.0f)", "sum + b[n]"), s.grid, s.block,
                  s.scalars, s.call, s.a_index, s.b_index, s.c_index, s.want, s.entry)
    template = lifted_template(_lift(broken), broken.entry)
    with tempfile.TemporaryDirectory() as tmp:
        assert worst_error(broken, template, template.default_config(), Path(tmp)) > 0.5


# -- refusals ------------------------------------------------------------------------------

BASE = SPELLINGS["literal_nn_row_loop_alpha_beta"]


@pytest.mark.parametrize("edit,reason,line", [
    # the row loop steps by half the block's rows: rows stored twice, by two threads
    (("kr < 16; kr += 8)", "kr < 16; kr += 4)"),
     "does not step by the block's 8 threads along y", 12),
    # B's tile stored one element per thread: only 8 of its 16 rows
    (("    for (int kr = ty; kr < 16; kr += 8)\n      sB[kr][tx] = (t + kr < K && col < N) "
      "? B[(t + kr) * N + col] : 0.0f;",
      "    sB[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;"),
     "the store to sB covers 8 positions along its index `ty`, but the tile's extent there "
     "is 16", 12),
    # the block's columns offset by the rows' count: the output's address does not move
    # with the block as its threads do
    (("int col = blockIdx.x * 16 + tx;", "int col = blockIdx.x * 8 + tx;"),
     "is not at (block row * 8 + thread row, block column * 16 + thread column)", 19),
    # the block size used as a value the rewrite does not model
    (("acc += sA[ty][e] * sB[e][tx];", "acc += sA[ty][e] * sB[e][tx] * (float)(tx % 8);"),
     "uses the block size 8 other than as a block offset", 16),
])
def test_rectangular_spellings_the_analysis_cannot_prove_are_refused_with_the_line(
        edit: tuple[str, str], reason: str, line: int) -> None:
    assert edit[0] in BASE.source
    lifted = _lift(BASE, BASE.source.replace(edit[0], edit[1], 1))
    found = [f for f in lifted.findings if f.transform == "REGISTER_TILE"]
    assert found and not any(f.applied for f in found), lifted.notes
    assert reason in found[0].reason, found[0].reason
    assert found[0].line == line, found[0]


FLAT = SPELLINGS["macro_flat_index_loops_bt"]


@pytest.mark.parametrize("edit,reason,line", [
    # half the block's threads per step: positions stored twice
    (("i < BLK_M * BLK_K; i += BLK_M * BLK_N)", "i < BLK_M * BLK_K; i += 64)"),
     "does not step by the block's 128 threads", 13),
    # the flat position read other than as its row and column
    (("? in[(m0 + rr) * K + kt + cc]", "? in[(m0 + rr) * K + kt + (i & 31)]"),
     "uses the flat position `i` other than as `i / C`", 16),
    # rows of 16 in a 32-deep tile: the positions do not cover the tile
    (("int rr = i / BLK_K;\n      int cc = i % BLK_K;",
      "int rr = i / 16;\n      int cc = i % 16;"),
     "the store to in_s covers 16 positions along its index `rr`", 13),
    # the flat index is not ty * 16 + tx (a thread numbering the rewrite does not model)
    (("const int tid = threadIdx.y * BLK_N + threadIdx.x;",
      "const int tid = threadIdx.x * BLK_M + threadIdx.y;"),
     "neither a thread index nor the block's flat thread index (ty * 16 + tx)", 13),
])
def test_flat_loop_stores_the_analysis_cannot_prove_are_refused_with_the_line(
        edit: tuple[str, str], reason: str, line: int) -> None:
    assert edit[0] in FLAT.source
    lifted = _lift(FLAT, FLAT.source.replace(edit[0], edit[1], 1))
    found = [f for f in lifted.findings if f.transform == "REGISTER_TILE"]
    assert found and not any(f.applied for f in found), lifted.notes
    assert reason in found[0].reason, found[0].reason
    assert found[0].line == line, found[0]
