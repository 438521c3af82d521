"""The shared-tile product family on first contact (issue 28): kernels written the way
authors other than the corpus's would, each lifted and checked against itself as written.

A squared-distance matrix through a ``sq()`` helper over padded tiles that both read along k
(``X . Y^T`` shaped); an L1 distance with a ``constexpr`` tile on a 1-D block split by
``tid / kTile`` and ``tid % kTile``, ``fabsf`` and ``#pragma unroll``; an int8 x int8 -> int32
product with an ``#ifndef`` tile, unsigned indices, ``size_t`` offsets, int tiles and a
``kk != TILE_DIM`` inner loop; a batched ``A^T . B`` with strides as kernel arguments, a
count-down tile loop that steps k in its header and a leaky-ReLU epilogue; a loop over k
unrolled by hand by four (the depth stays a multiple of four); a half-input product with an
alpha over a rectangular 32 x 8 block whose deep tile is loaded by a loop of each thread over
rows. Each lifts the register tile (BM / BN / BK / TM / TN) with a derived launch whose
default is the kernel as written, and on the host (g++) its default, its corners and a tiled
config write the bits the kernel as written writes. Reads along k the analysis cannot pair
at every depth are refused with their reason and line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers_templater import corner_configs, host_sample, needs_gxx
from regtile_first_contact import Product, host_outputs

from workbench.core.template import KernelTemplate

TILE_KNOBS = {"BM", "BN", "BK", "TM", "TN"}
ENV = {"M": 37, "N": 45, "K": 29, "batch": 2}
#: a tiled mid-space config: 4 x 4 outputs per thread over a 32 x 64 block tile, 8 deep
SAMPLED = {"BM": 32, "BN": 64, "BK": 8, "TM": 4, "TN": 4}

PRODUCTS: dict[str, Product] = {
    "sqdist_helper_padded_both_along_k": Product(r"""
#define TS 16
__device__ __forceinline__ float sq(float v) { return v * v; }
extern "C" __global__ void pdist2(const float* X, const float* Y, float* D, int n, int m,
                                  int dim) {
  __shared__ float xs[TS][TS + 1];
  __shared__ float ys[TS][TS + 1];
  int i = blockIdx.y * TS + threadIdx.y;   // a row of X
  int j = blockIdx.x * TS + threadIdx.x;   // a row of Y
  float acc = 0.f;
  for (int d0 = 0; d0 < dim; d0 += TS) {
    int dx = d0 + threadIdx.x;
    xs[threadIdx.y][threadIdx.x] = (i < n && dx < dim) ? X[i * dim + dx] : 0.f;
    int yrow = blockIdx.x * TS + threadIdx.y;
    ys[threadIdx.y][threadIdx.x] = (yrow < m && dx < dim) ? Y[yrow * dim + dx] : 0.f;
    __syncthreads();
    for (int t = 0; t < TS; t++)
      acc += sq(xs[threadIdx.y][t] - ys[threadIdx.x][t]);
    __syncthreads();
  }
  if (i < n && j < m) D[i * m + j] = acc;
}
""", "pdist2", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("16", "16"),
        {"n": "M", "m": "N", "dim": "K"},
        (("X", "float", "M * K"), ("Y", "float", "N * K"), ("D", "float", "M * N")),
        "pdist2(X, Y, D, M, N, K)", "D"),
    "l1_constexpr_flat_block": Product(r"""
constexpr int kTile = 16;
__global__ void manhattan(const float* __restrict__ P, const float* __restrict__ Q,
                          float* __restrict__ out, int rowsP, int rowsQ, int feat) {
  __shared__ float ptile[kTile][kTile];
  __shared__ float qtile[kTile][kTile];
  const int tid = threadIdx.x;
  const int ty = tid / kTile;
  const int tx = tid % kTile;
  const int p = blockIdx.y * kTile + ty;
  const int q = blockIdx.x * kTile + tx;
  float dist = 0.0f;
  for (int base = 0; base < feat; base += kTile) {
    ptile[ty][tx] = (p < rowsP && base + tx < feat) ? P[p * feat + base + tx] : 0.0f;
    const int qr = blockIdx.x * kTile + ty;
    qtile[ty][tx] = (qr < rowsQ && base + tx < feat) ? Q[qr * feat + base + tx] : 0.0f;
    __syncthreads();
    #pragma unroll
    for (int f = 0; f < kTile; ++f) dist += fabsf(ptile[ty][f] - qtile[tx][f]);
    __syncthreads();
  }
  if (p < rowsP && q < rowsQ) out[p * rowsQ + q] = dist;
}
""", "manhattan", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("256",),
        {"rowsP": "M", "rowsQ": "N", "feat": "K"},
        (("P", "float", "M * K"), ("Q", "float", "N * K"), ("o", "float", "M * N")),
        "manhattan(P, Q, o, M, N, K)", "o"),
    "int8_ifndef_unsigned": Product(r"""
#include <cstdint>
#ifndef TILE_DIM
#define TILE_DIM 32
#endif
extern "C" __global__ void igemm(const int8_t* a, const int8_t* b, int32_t* c,
                                 unsigned M, unsigned N, unsigned K) {
  __shared__ int sa[TILE_DIM][TILE_DIM];
  __shared__ int sb[TILE_DIM][TILE_DIM];
  unsigned tx = threadIdx.x, ty = threadIdx.y;
  unsigned r = blockIdx.y * TILE_DIM + ty;
  unsigned cc = blockIdx.x * TILE_DIM + tx;
  int32_t total = 0;
  for (unsigned k0 = 0; k0 < K; k0 += TILE_DIM) {
    sa[ty][tx] = (r < M && k0 + tx < K) ? (int)a[(size_t)r * K + k0 + tx] : 0;
    sb[ty][tx] = (k0 + ty < K && cc < N) ? (int)b[(size_t)(k0 + ty) * N + cc] : 0;
    __syncthreads();
    for (unsigned kk = 0; kk != TILE_DIM; ++kk) total += sa[ty][kk] * sb[kk][tx];
    __syncthreads();
  }
  if (r < M && cc < N) c[(size_t)r * N + cc] = total;
}
""", "igemm", ("ceil_div(N, 32)", "ceil_div(M, 32)"), ("32", "32"),
        {"M": "M", "N": "N", "K": "K"},
        (("a", "int8_t", "M * K"), ("b", "int8_t", "K * N"), ("c", "int32_t", "M * N")),
        "igemm(a, b, c, M, N, K)", "c"),
    "batched_tn_strides_countdown_leaky": Product(r"""
#define T 16
extern "C" __global__ void bmm_tn(const float* A, const float* B, float* C, int M, int N,
                                  int K, long strideA, long strideB, long strideC,
                                  float slope) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  const float* a = A + blockIdx.z * strideA;
  const float* b = B + blockIdx.z * strideB;
  float* c = C + blockIdx.z * strideC;
  int row = blockIdx.y * T + threadIdx.y;
  int col = blockIdx.x * T + threadIdx.x;
  float acc = 0.0f;
  int k0 = 0;
  for (int left = (K + T - 1) / T; left > 0; --left, k0 += T) {
    // A is K x M: element (row, k) at a[k * M + row]
    As[threadIdx.y][threadIdx.x] =
        (row < M && k0 + threadIdx.x < K) ? a[(k0 + threadIdx.x) * M + row] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] =
        (k0 + threadIdx.y < K && col < N) ? b[(k0 + threadIdx.y) * N + col] : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < T; ++kk) acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) c[row * N + col] = acc > 0.0f ? acc : slope * acc;
}
""", "bmm_tn", ("ceil_div(N, 16)", "ceil_div(M, 16)", "batch"), ("16", "16"),
        {"M": "M", "N": "N", "K": "K", "strideA": "M * K", "strideB": "K * N",
         "strideC": "M * N", "slope": "1"},
        (("A", "float", "batch * M * K"), ("B", "float", "batch * K * N"),
         ("C", "float", "batch * M * N")),
        "bmm_tn(A, B, C, M, N, K, (long)M * K, (long)K * N, (long)M * N, 0.25f)", "C"),
    "half_rect_block_row_loop_loads": Product(r"""
#include <cuda_fp16.h>
#define TK 32
__global__ void hgemm_rect(const __half* __restrict__ A, const __half* __restrict__ B,
                           float* __restrict__ C, int M, int N, int K, float alpha) {
  __shared__ float As[8][TK];
  __shared__ float Bs[TK][32];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * 8 + ty;
  const int col = blockIdx.x * 32 + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += TK) {
    As[ty][tx] = (row < M && k0 + tx < K) ? __half2float(A[(size_t)row * K + k0 + tx]) : 0.f;
    for (int r = ty; r < TK; r += 8)
      Bs[r][tx] = (k0 + r < K && col < N) ? __half2float(B[(size_t)(k0 + r) * N + col]) : 0.f;
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < TK; ++kk) acc += As[ty][kk] * Bs[kk][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = alpha * acc;
}
""", "hgemm_rect", ("ceil_div(N, 32)", "ceil_div(M, 8)"), ("32", "8"),
        {"M": "M", "N": "N", "K": "K", "alpha": "1"},
        (("A", "__half", "M * K"), ("B", "__half", "K * N"), ("C", "float", "M * N")),
        "hgemm_rect(A, B, C, M, N, K, 0.75f)", "C"),
    "hand_unrolled_by_four_aliases": Product(r"""
#define TS 16
extern "C" __global__ void mmu(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[TS][TS];
  __shared__ float Bs[TS][TS];
  int ty = threadIdx.y, tx = threadIdx.x;
  int row = blockIdx.y * TS + ty, col = blockIdx.x * TS + tx;
  float acc = 0.0f;
  for (int t = 0; t < K; t += TS) {
    As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
    Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TS; k += 4) {
      acc += As[ty][k] * Bs[k][tx];
      acc += As[ty][k + 1] * Bs[k + 1][tx];
      acc += As[ty][k + 2] * Bs[k + 2][tx];
      acc += As[ty][k + 3] * Bs[k + 3][tx];
    }
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
""", "mmu", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("16", "16"),
        {"M": "M", "N": "N", "K": "K"},
        (("A", "float", "M * K"), ("B", "float", "K * N"), ("C", "float", "M * N")),
        "mmu(A, B, C, M, N, K)", "C"),
}


def _configs(template: KernelTemplate) -> list[dict[str, Any]]:
    """The default and the corners (host_sample's pick), then SAMPLED."""
    env = {**ENV, "elem_bytes": 4}
    sampled = {**template.default_config(), **SAMPLED}
    vec = next((q for q in template.params if q.name == "VEC"), None)
    if vec is not None:  # a register tile loads its tiles as wide as the analysis offers
        sampled["VEC"] = vec.values()[-1]
    assert template.space(env).rejection(sampled) is None, template.space(env).rejection(
        sampled)
    return [*host_sample(corner_configs(template, env)), sampled]


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_each_product_lifts_the_register_tile_launching_as_written(name: str) -> None:
    p = PRODUCTS[name]
    lifted = p.lift()
    assert any(f.transform == "REGISTER_TILE" and f.applied for f in lifted.findings), \
        lifted.notes
    assert {q.name for q in lifted.params} >= TILE_KNOBS
    template = p.template()
    default = template.default_config()
    assert (default["TM"], default["TN"]) == (1, 1)
    env = {**ENV, "elem_bytes": 4}
    launch = template.launch_for(default, env)
    written = KernelTemplate.build(name=p.entry, source=p.source, entry=p.entry, params=[],
                                   constraints=[], grid=list(p.grid), block=list(p.block))
    as_written = written.launch_for({}, env)
    assert (launch.grid, launch.block) == (as_written.grid, as_written.block)


@needs_gxx
@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_each_product_writes_the_bits_of_the_kernel_as_written(name: str,
                                                               tmp_path: Path) -> None:
    p = PRODUCTS[name]
    template = p.template()
    configs = _configs(template)
    written, outputs = host_outputs(p, template, configs, ENV, tmp_path)
    assert any(float.fromhex(v) != 0.0 for v in written)  # the check can fail
    for config, got in zip(configs, outputs, strict=True):
        assert got == written, config


@pytest.mark.parametrize("index", ["(t + 1) % TS", "TS - 1 - t"])
def test_a_tile_read_along_k_other_than_by_the_loop_variable_is_refused(index: str) -> None:
    """Y's tile read at a rotated or reversed k pairs the tiles by the written depth: any
    other BK pairs other elements (the lift wrote wrong configs before the check)."""
    p = PRODUCTS["sqdist_helper_padded_both_along_k"]
    lifted = p.lift(p.source.replace("ys[threadIdx.x][t]", f"ys[threadIdx.x][{index}]"))
    found = [f for f in lifted.findings if f.transform == "REGISTER_TILE"]
    assert found and not any(f.applied for f in found), lifted.notes
    assert f"along k at `{index}`" in found[0].reason and found[0].line == 18, found[0]
    assert not {"BK", "TM"} & {q.name for q in lifted.params}


def test_a_hand_unrolled_loop_over_k_keeps_the_depth_a_multiple_of_its_step() -> None:
    """``for (k = 0; k < TS; k += 4)`` reading k .. k + 3: any depth that is a multiple of 4
    pairs the same elements; the space says so, and an offset past the step is refused."""
    p = PRODUCTS["hand_unrolled_by_four_aliases"]
    lifted = p.lift()
    assert "BK % 4 == 0" in lifted.constraints
    past = p.lift(p.source.replace("As[ty][k + 3] * Bs[k + 3][tx]",
                                   "As[ty][k + 4] * Bs[k + 4][tx]"))
    found = [f for f in past.findings if f.transform == "REGISTER_TILE"]
    assert found and not any(f.applied for f in found), past.notes
    assert "along k at `k + 4`" in found[0].reason and found[0].line == 17, found[0]
