"""Register tiling of products written without shared memory (issue 28, first contact).

Six authors' naive products, none of them the corpus's spelling: ``blockDim`` offsets and
an early return with alpha / beta; a batch on ``blockIdx.z`` with A stored K x M, ``size_t``
offsets, ``__ldg``, unsigned thread aliases, a 32 x 8 block and the rest inside an if; a
double-precision linear layer with two early returns, pointers walked along k, a count-down
loop and a bias + ReLU; a squared distance through a ``sq()`` helper with a negated guard
and ``blockDim.x * blockIdx.x``; an int8 L1 distance to int32 with a 32 x 4 block; an 8 x 8
block launched 3-D with ``#pragma unroll 4`` on the loop. Each lifts a TM x TN register tile
(workbench/templater/regtile_naive.py) whose default launches the kernel as written, and on
the host its default, its corners and a tiled mid-space config write the bits the kernel as
written writes. Spellings whose legality the analysis cannot show are refused with the
reason and the line; a tile side the block's size ties (``blockIdx.y * blockDim.x``) is
never lifted as a free range.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import NVCC, needs_nvcc
from helpers_templater import corner_configs, host_sample, needs_gxx
from regtile_first_contact import Product, host_outputs

from workbench.core.template import KernelTemplate

KNOBS = {"THREADS_X", "THREADS_Y", "TM", "TN"}
ENV = {"M": 37, "N": 45, "K": 29, "batch": 2}
MNK = {"M": "M", "N": "N", "K": "K"}
#: a tiled mid-space config: a 2 x 4 register tile over a block of 32 x 4 threads
SAMPLED = {"THREADS_X": 32, "THREADS_Y": 4, "TM": 2, "TN": 4}

PRODUCTS: dict[str, Product] = {
    "blockdim_return_alpha_beta": Product(r"""
extern "C" __global__ void gemm_naive(int M, int N, int K, float alpha,
                                      const float* __restrict__ A,
                                      const float* __restrict__ B, float beta,
                                      float* __restrict__ C) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float sum = 0.0f;
  for (int k = 0; k < K; ++k)
    sum += A[row * K + k] * B[k * N + col];
  C[row * N + col] = alpha * sum + beta * C[row * N + col];
}
""", "gemm_naive", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("16", "16"),
        {**MNK, "alpha": "1", "beta": "1"},
        (("A", "float", "M * K"), ("B", "float", "K * N"), ("C", "float", "M * N")),
        "gemm_naive(M, N, K, 1.5f, A, B, -0.5f, C)", "C"),
    "batched_tn_ldg_if": Product(r"""
__global__ void bgemm_tn_naive(const float* __restrict__ a, const float* __restrict__ b,
                               float* __restrict__ c, int m, int n, int kdim) {
  const unsigned tx = threadIdx.x, ty = threadIdx.y;
  const size_t batch = blockIdx.z;
  const int j = blockIdx.x * 32 + tx;
  const int i = blockIdx.y * 8 + ty;
  const float* A = a + batch * (size_t)m * kdim;   // K x M: element (i, q) at A[q * m + i]
  const float* B = b + batch * (size_t)kdim * n;
  if (i < m && j < n) {
    float acc = 0.f;
    for (int q = 0; q < kdim; q++) {
      acc += __ldg(A + (size_t)q * m + i) * __ldg(&B[(size_t)q * n + j]);
    }
    c[batch * (size_t)m * n + (size_t)i * n + j] = acc;
  }
}
""", "bgemm_tn_naive", ("ceil_div(N, 32)", "ceil_div(M, 8)", "batch"), ("32", "8"),
        {"m": "M", "n": "N", "kdim": "K"},
        (("a", "float", "batch * M * K"), ("b", "float", "batch * K * N"),
         ("c", "float", "batch * M * N")), "bgemm_tn_naive(a, b, c, M, N, K)", "c"),
    "double_walk_two_returns_relu": Product(r"""
#define BX 16
#define BY 16
extern "C" __global__ void linear_relu_f64(const double* x, const double* w, const double* bias,
                                           double* y, int rows, int outs, int ins) {
  int o = blockIdx.x * BX + threadIdx.x;
  int r = blockIdx.y * BY + threadIdx.y;
  if (r >= rows) return;
  if (o >= outs) return;
  const double* xp = x + (long)r * ins;
  const double* wp = w + (long)o * ins;   // w is outs x ins: y = x . w^T + bias
  double s = bias[o];
  for (int left = ins; left > 0; --left) {
    s += *xp++ * *wp++;
  }
  y[(long)r * outs + o] = s > 0.0 ? s : 0.0;
}
""", "linear_relu_f64", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("16", "16"),
        {"rows": "M", "outs": "N", "ins": "K"},
        (("x", "double", "M * K"), ("w", "double", "N * K"), ("bias", "double", "N"),
         ("y", "double", "M * N")), "linear_relu_f64(x, w, bias, y, M, N, K)", "y"),
    "sqdist_helper_negated_guard": Product(r"""
__device__ __forceinline__ float sq(float v) { return v * v; }
__global__ void sqdist(const float* P, const float* Q, float* D, int np, int nq, int dim) {
  int qi = threadIdx.x + blockDim.x * blockIdx.x;
  int pi = threadIdx.y + blockDim.y * blockIdx.y;
  if (!(pi < np && qi < nq)) return;
  float d2 = 0.0f;
  for (int t = 0; t < dim; t += 1) {
    const float diff = P[pi * dim + t] - Q[qi * dim + t];
    d2 += sq(diff);
  }
  D[pi * nq + qi] = d2;
}
""", "sqdist", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("16", "16"),
        {"np": "M", "nq": "N", "dim": "K"},
        (("P", "float", "M * K"), ("Q", "float", "N * K"), ("D", "float", "M * N")),
        "sqdist(P, Q, D, M, N, K)", "D"),
    "int8_l1_aliases_32x4": Product(r"""
#include <cstdint>
extern "C" __global__ void l1_i8(const int8_t* u, const int8_t* v, int32_t* out,
                                 int nu, int nv, int len) {
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int col = blockIdx.x * 32 + tx;
  const int row = blockIdx.y * 4 + ty;
  if (row < nu && col < nv) {
    int32_t dist = 0;
    for (int e = 0; e < len; ++e) {
      int d = (int)u[row * len + e] - (int)v[col * len + e];
      dist += d < 0 ? -d : d;
    }
    out[row * nv + col] = dist;
  }
}
""", "l1_i8", ("ceil_div(N, 32)", "ceil_div(M, 4)"), ("32", "4"),
        {"nu": "M", "nv": "N", "len": "K"},
        (("u", "int8_t", "M * K"), ("v", "int8_t", "N * K"), ("out", "int32_t", "M * N")),
        "l1_i8(u, v, out, M, N, K)", "out"),
    "pragma_unroll_3d_launch_8x8": Product(r"""
#define BLK 8
__global__ void mm3(const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C, int M, int N, int K) {
  int r = blockIdx.y * BLK + threadIdx.y;
  int c = blockIdx.x * BLK + threadIdx.x;
  if (r < M && c < N) {
    float acc = 0;
#pragma unroll 4
    for (int k = 0; k < K; k++) acc += A[r * K + k] * B[k * N + c];
    C[r * N + c] = acc;
  }
}
""", "mm3", ("ceil_div(N, 8)", "ceil_div(M, 8)", "1"), ("8", "8", "1"), MNK,
        (("A", "float", "M * K"), ("B", "float", "K * N"), ("C", "float", "M * N")),
        "mm3(A, B, C, M, N, K)", "C"),
}


def _configs(template: KernelTemplate) -> list[dict[str, Any]]:
    """The default and the corners (host_sample's pick), then SAMPLED."""
    sampled = {**template.default_config(), **SAMPLED}
    env = {**ENV, "elem_bytes": 4}
    assert template.space(env).rejection(sampled) is None, sampled
    return [*host_sample(corner_configs(template, env)), sampled]


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_each_naive_product_lifts_a_register_tile_launching_as_written(name: str) -> None:
    p = PRODUCTS[name]
    lifted = p.lift()
    applied = [f for f in lifted.findings if f.transform == "REGISTER_TILE" and f.applied]
    assert applied and "without shared memory" in applied[0].reason, lifted.notes
    assert {q.name for q in lifted.params} >= KNOBS
    assert lifted.block[:2] == ("THREADS_X", "THREADS_Y")
    template = p.template()
    default = template.default_config()
    assert (default["TM"], default["TN"]) == (1, 1)
    launch = template.launch_for(default, {**ENV, "elem_bytes": 4})
    assert [str(b) for b in launch.block[:2]] == list(p.block[:2])
    written = KernelTemplate.build(name=p.entry, source=p.source, entry=p.entry, params=[],
                                   constraints=[], grid=list(p.grid), block=list(p.block))
    assert launch.grid == written.launch_for({}, {**ENV, "elem_bytes": 4}).grid


@needs_gxx
@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_each_naive_product_writes_the_bits_of_the_kernel_as_written(
        name: str, tmp_path: Path) -> None:
    p = PRODUCTS[name]
    template = p.template()
    configs = _configs(template)
    written, outputs = host_outputs(p, template, configs, ENV, tmp_path)
    assert any(float.fromhex(v) != 0.0 for v in written)  # the check can fail
    for config, got in zip(configs, outputs, strict=True):
        assert got == written, config


def test_the_space_keeps_near_square_register_tiles() -> None:
    template = PRODUCTS["blockdim_return_alpha_beta"].template()
    space = template.space({**ENV, "elem_bytes": 4})
    base = dict(template.default_config())
    assert space.rejection({**base, "TM": 4, "TN": 4}) is None
    assert space.rejection({**base, "TM": 2, "TN": 4}) is None
    assert space.rejection({**base, "TM": 1, "TN": 8}) is not None  # 8:1
    assert space.rejection({**base, "THREADS_X": 64, "THREADS_Y": 32}) is not None  # 2048


_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


@needs_nvcc
@pytest.mark.timeout(180)
def test_the_largest_register_tiles_compile_without_spills(tmp_path: Path) -> None:
    """ptxas -v at sm_90 on the largest tiles the space holds (8 x 8; 4 x 4 for the layer
    whose three walked states per output cap it)."""
    assert NVCC is not None
    for name, tile in (("blockdim_return_alpha_beta", 8),
                       ("double_walk_two_returns_relu", 4)):
        template = PRODUCTS[name].template()
        config = {**template.default_config(), "TM": tile, "TN": tile}
        assert template.space({**ENV, "elem_bytes": 4}).rejection(config) is None
        src = tmp_path / f"{name}.cu"
        src.write_text(template.render(config, "fp32").source)
        done = subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-O3", "-Xptxas", "-v", "-o",
                               str(tmp_path / f"{name}.cubin"), str(src)],
                              capture_output=True, text=True, timeout=150, check=False)
        assert done.returncode == 0, done.stderr
        spills = _SPILLS.findall(done.stderr)
        assert spills and all(s == ("0", "0") for s in spills), done.stderr


# -- refusals ------------------------------------------------------------------------------

BASE = PRODUCTS["blockdim_return_alpha_beta"]


@pytest.mark.parametrize("edit,reason,line", [
    # the thread index read outside the two coordinates
    (("  float sum = 0.0f;\n", "  float sum = threadIdx.x * 0.0f;\n"),
     "is used other than through the output's row and column", 9),
    # no bound on the columns: a wider block tile would write past the edge
    (("if (row >= M || col >= N) return;", "if (row >= M) return;"),
     "no bound on the output's x coordinate", 10),
    # the loop writes memory: the fused loops would reorder the writes
    (("    sum += A[row * K + k] * B[k * N + col];",
      "    C[row * N + col] += A[row * K + k] * B[k * N + col];"),
     "writes memory inside the loop over k", 11),
    # an early exit from the loop: fused, it would end every output's loop
    (("  for (int k = 0; k < K; ++k)\n    sum +=",
      "  for (int k = 0; k < K; ++k)\n    if (sum > 1e30f) break; else sum +="),
     "leaves the loop early", 11),
    # a return after the loop: inside the tile's loops it would end the other outputs
    (("  C[row * N + col] = alpha", "  if (sum == 0.0f) return;\n  C[row * N + col] = alpha"),
     "would end every output of the thread", 12),
    # a triangular loop: its trip count differs by output
    (("for (int k = 0; k < K; ++k)", "for (int k = 0; k <= row; ++k)"),
     "the loop's header", 10),
])
def test_naive_spellings_the_analysis_cannot_prove_are_refused_with_the_line(
        edit: tuple[str, str], reason: str, line: int) -> None:
    assert edit[0] in BASE.source
    lifted = BASE.lift(BASE.source.replace(edit[0], edit[1], 1))
    found = [f for f in lifted.findings if f.transform == "REGISTER_TILE"]
    assert found and not any(f.applied for f in found), lifted.notes
    assert reason in found[0].reason, found[0].reason
    assert found[0].line == line, found[0]


TIED = r"""
extern "C" __global__ void mm(const float* A, const float* B, float* C, int n) {
  const int side = blockDim.x;
  int row = blockIdx.y * side + threadIdx.y;
  int col = blockIdx.x * side + threadIdx.x;
  if (row < n && col < n) {
    float v = 0;
    for (int k = 0; k < n; ++k) v += A[row * n + k] * B[k * n + col];
    C[row * n + col] = v;
  }
}
"""


def test_a_square_tile_read_from_blockdim_keeps_the_block_as_written() -> None:
    """``blockIdx.y * side`` with ``side = blockDim.x``: the rows per block are the block's
    x size while threadIdx.y numbers them, so x and y are tied; an independent BLOCK_X
    range wrote wrong configs (rows past the y size never computed)."""
    p = Product(TIED, "mm", ("ceil_div(N, 16)", "ceil_div(N, 16)"), ("16", "16"), {"n": "N"},
                (), "", "")
    lifted = p.lift()
    assert not {"BLOCK_X", "BLOCK_Y", "THREADS_X"} & {q.name for q in lifted.params}
    tie = next(f for f in lifted.findings if f.transform == "BLOCK_X")
    assert not tie.applied and "are tied" in tie.reason and tie.line == 4, tie
    assert lifted.block == ("16", "16")


FLAT = Product(r"""
__global__ void abt_naive(const float* __restrict__ a, const float* __restrict__ bt,
                          float* __restrict__ out, int M, int N, int K) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= M * N) return;
  int i = idx / N, j = idx % N;
  const float* pa = a + (size_t)i * K;
  const float* pb = bt + (size_t)j * K;
  float s = 0.f;
  for (int k = 0; k < K; ++k) s += pa[k] * pb[k];
  out[idx] = s;
}
""", "abt_naive", ("ceil_div(M * N, 256)",), ("256",), MNK,
    (("a", "float", "M * K"), ("bt", "float", "N * K"), ("o", "float", "M * N")),
    "abt_naive(a, bt, o, M, N, K)", "o")


@needs_gxx
@pytest.mark.timeout(180)
def test_a_flat_naive_product_on_a_1d_block_runs_as_written_at_its_default(
        tmp_path: Path) -> None:
    """A product on a 1-D block (``idx / N``, ``idx % N``) is not the register tile's 2-D
    shape; what the other families lift must still run as written at its default (items
    per thread's shared k loop reads ``pa[k]`` only for a live item: an item that returned
    holds a null ``pa``)."""
    template = FLAT.template()
    written, outputs = host_outputs(FLAT, template, [dict(template.default_config())], ENV,
                                    tmp_path)
    assert outputs[0] == written
