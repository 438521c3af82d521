"""The readers written for the 1-D GEMM spelling, on 2-D launches (issue 28): flat shared
tiles ``[T * T]`` read ``S[r * T + c]`` and the output's rows offset by ``blockIdx.x``.

Each spelling lifts to a register tile with a 2-D block ``(BN / TN, BM / TM)``; its default,
corners and a config with BM != BN (the all-ends corners have BM == BN) compute on the host
the product the kernel as written computes.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_templater import corner_configs, lifted_template
from regtile_spellings import Spelling, lift, worst_error

MNK = {"M": "M", "N": "N", "K": "K"}

SPELLINGS: dict[str, Spelling] = {
    # rows from blockIdx.x with a 2-D block, flat tiles, A . B
    "rows_from_x_flat_tiles": Spelling("""
#define TILE 16
__global__ void gemm(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float sA[TILE * TILE];
  __shared__ float sB[TILE * TILE];
  int row = blockIdx.x * TILE + threadIdx.y;
  int col = blockIdx.y * TILE + threadIdx.x;
  float acc = 0;
  for (int t = 0; t < K; t += TILE) {
    sA[threadIdx.y * TILE + threadIdx.x] = (row < M && t + threadIdx.x < K) ? A[row * K + t + threadIdx.x] : 0;
    sB[threadIdx.y * TILE + threadIdx.x] = (t + threadIdx.y < K && col < N) ? B[(t + threadIdx.y) * N + col] : 0;
    __syncthreads();
    for (int k = 0; k < TILE; k++) acc += sA[threadIdx.y * TILE + k] * sB[k * TILE + threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
""", ("ceil_div(M, 16)", "ceil_div(N, 16)"), ("16", "16"), MNK, "gemm(A, B, C, M, N, K)",
        entry="gemm"),
    # rows from blockIdx.y, flat tiles written column term first, B^T, #ifndef
    "flat_tiles_bt_ifndef": Spelling("""#ifndef BS
#define BS 8
#endif
extern "C" __global__ void nt(float* out, const float* a, const float* bt, int M, int N, int K) {
  __shared__ float ta[BS * BS];
  __shared__ float tb[BS * BS];
  const int ty = threadIdx.y, tx = threadIdx.x;
  const int m = blockIdx.y * BS + ty;
  float s = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BS) {
    ta[tx + ty * BS] = (m < M && k0 + tx < K) ? a[m * K + k0 + tx] : 0.0f;
    tb[tx + BS * ty] = (blockIdx.x * BS + ty < N && k0 + tx < K) ? bt[(blockIdx.x * BS + ty) * K + k0 + tx] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int q = 0; q < BS; ++q) { s += ta[q + ty * BS] * tb[q + tx * BS]; }
    __syncthreads();
  }
  if (m < M && blockIdx.x * BS + tx < N) out[m * N + blockIdx.x * BS + tx] = s;
}
""", ("ceil_div(N, 8)", "ceil_div(M, 8)"), ("8", "8"), MNK, "nt(C, A, B, M, N, K)",
        b_index="(size_t)bt * N * K + (size_t)c * K + k", entry="nt"),
}

ENV = {"batch": 1, "M": 37, "N": 44, "K": 28}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_flat_tiles_in_2d_blocks_lift_a_register_tile(name: str) -> None:
    s = SPELLINGS[name]
    lifted = lift(s)
    assert any(f.transform == "REGISTER_TILE" and f.applied for f in lifted.findings), \
        lifted.notes
    assert lifted.block == ("BN // TN", "BM // TM")
    rows_first = s.grid[0].startswith("ceil_div(M")
    assert lifted.grid[:2] == (("ceil_div(M, BM)", "ceil_div(N, BN)") if rows_first else
                               ("ceil_div(N, BN)", "ceil_div(M, BM)"))


def _configs(s: Spelling) -> list[dict[str, Any]]:
    template = lifted_template(lift(s), s.entry)
    env = {**ENV, "elem_bytes": 4}
    space = template.space(env)
    out = corner_configs(template, env)
    out.append({**template.default_config(), "BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 4,
                "VEC": 4})
    valid = [c for c in out if space.rejection(c) is None]
    assert any(c["BM"] != c["BN"] for c in valid)
    return valid


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_flat_tiles_in_2d_blocks_compute_the_product(name: str) -> None:
    s = SPELLINGS[name]
    template = lifted_template(lift(s), s.entry)
    with tempfile.TemporaryDirectory() as tmp:
        for config in _configs(s):
            assert worst_error(s, template, config, ENV, Path(tmp)) < 1e-3, config


def test_an_output_address_the_analysis_cannot_evaluate_is_refused() -> None:
    """A masked output index is not evaluated, so the register tile is refused naming the
    store's line. (An index through a one-line integer helper, this test's earlier case, is
    expanded at its call since d1958a4 and lifts.)"""
    s = SPELLINGS["rows_from_x_flat_tiles"]
    source = s.source.replace("C[row * N + col] = acc;", "C[(row * N + col) & 0x7fffffff] = acc;")
    assert source != s.source
    lifted = lift(Spelling(source, s.grid, s.block, s.scalars, s.call, entry=s.entry))
    found = [f for f in lifted.findings if f.transform == "REGISTER_TILE"]
    assert found and not any(f.applied for f in found), lifted.notes
    assert "could not be evaluated" in found[0].reason and found[0].line == 16, found[0]
