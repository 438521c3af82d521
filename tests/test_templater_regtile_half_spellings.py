"""Register tiling of half-precision GEMMs as other people write them (issue 28): two
spellings of hgemm_scaled's family (tests/test_templater_regtile_half.py checks the corpus
folder itself).

``half_alpha_beta``: halves kept in shared memory and converted in the product,
``alpha * sum + beta * C``, integer indices that walk along k (``ia += TS``,
``ib = ib + TS * n``), if/else stores, a count of tiles and ``blockDim`` offsets.
``half_bias_relu``: a linear layer with a bias + ReLU epilogue and a half output, a
``constexpr`` tile, a padded tile and walking pointers read as ``p[0]`` and ``*p``; the
same with the pointers stepped in the loop header (``k0 += T, xp += T, ...``).

Each lifts BM / BN / BK / TM / TN; on the host its default, its all-ends corners (first and
last; every one under ``WORKBENCH_FULL_MATRIX=1``) and a sampled mid-space config write the
same bits as the kernel as written (each output's sum runs over k in the order written),
and the kernel as written matches a float64 reference. A walking local stepped per thread,
reset, or stepped before the product is refused with the line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_templater import COOPERATIVE_BLOCK, lifted_template, needs_gxx, run_on_host
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)
from test_templater_regtile_half import SAMPLED, TILE_KNOBS, _configs, _reasons, host_half

from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel


@dataclass(frozen=True)
class HalfGemm:
    """A half-input GEMM as written: source, entry, launch as written, the lift's scalar
    arguments, the C++ call of it from the host program (buffers ``a``, ``b``, ``c``,
    ``bias``; sizes ``M``, ``N``, ``K``) and the output it writes (``c`` float, or ``o``
    half)."""

    source: str
    entry: str
    scalars: Mapping[str, str]
    call: str
    output: str  # "c" or "o"
    grid: tuple[str, ...] = ("ceil_div(N, 16)", "ceil_div(M, 16)")
    block: tuple[str, ...] = ("16", "16")

    def lift(self) -> LiftedSource:
        return lift_kernel(self.source, entry=self.entry, grid=list(self.grid),
                           block=list(self.block), scalars=dict(self.scalars))


HALF_ALPHA_BETA = HalfGemm("""#ifndef TS
#define TS 16
#endif
#include <cuda_fp16.h>
__global__ void hgemm_ab(const __half* __restrict__ a, const __half* __restrict__ b, float* c,
                         int m, int n, int k, float alpha, float beta) {
  __shared__ __half as[TS][TS];
  __shared__ __half bs[TS][TS];
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int ia = row * k + threadIdx.x;  // walks along row `row` of a
  int ib = threadIdx.y * n + col;  // walks down column `col` of b
  float sum = 0.0f;
  int tiles = (k + TS - 1) / TS;
  for (int t = 0; t < tiles; ++t) {
    if (row < m && t * TS + threadIdx.x < k) as[threadIdx.y][threadIdx.x] = a[ia];
    else as[threadIdx.y][threadIdx.x] = __float2half(0.0f);
    if (col < n && t * TS + threadIdx.y < k) bs[threadIdx.y][threadIdx.x] = b[ib];
    else bs[threadIdx.y][threadIdx.x] = __float2half(0.0f);
    __syncthreads();
    for (int q = 0; q < TS; ++q)
      sum += __half2float(as[threadIdx.y][q]) * __half2float(bs[q][threadIdx.x]);
    __syncthreads();
    ia += TS;
    ib = ib + TS * n;
  }
  if (row < m && col < n) c[row * n + col] = alpha * sum + beta * c[row * n + col];
}
""", "hgemm_ab", {"m": "M", "n": "N", "k": "K", "alpha": "1", "beta": "1"},
    "hgemm_ab(a, b, c, M, N, K, 1.25f, -0.5f)", "c")

HALF_BIAS_RELU = HalfGemm("""#include <cuda_fp16.h>
constexpr int kTile = 16;
extern "C" __global__ void linear_relu(__half* out, const __half* x, const __half* w,
                                       const __half* bias, int rows, int cols, int depth) {
  __shared__ float xs[kTile][kTile + 1];
  __shared__ float ws[kTile][kTile];
  const int lr = threadIdx.y;
  const int lc = threadIdx.x;
  const int r = kTile * blockIdx.y + lr;
  const int cidx = kTile * blockIdx.x + lc;
  const __half* xp = x + (long long)r * depth + lc;
  const __half* wp = w + (long long)lr * cols + cidx;
  float total = 0.f;
  for (int k0 = 0; k0 < depth; k0 += kTile) {
    xs[lr][lc] = (r < rows && k0 + lc < depth) ? __half2float(xp[0]) : 0.f;
    ws[lr][lc] = (k0 + lr < depth && cidx < cols) ? __half2float(*wp) : 0.f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTile; ++kk) total += xs[lr][kk] * ws[kk][lc];
    __syncthreads();
    xp += kTile;
    wp += (long long)kTile * cols;
  }
  if (r < rows && cidx < cols) {
    const float v = total + __half2float(bias[cidx]);
    out[(long long)r * cols + cidx] = __float2half(v > 0.f ? v : 0.f);
  }
}
""", "linear_relu", {"rows": "M", "cols": "N", "depth": "K"},
    "linear_relu(o, a, b, bias, M, N, K)", "o")

#: the same layer with its pointers stepped in the loop header (a comma expression)
HALF_BIAS_RELU_HEADER_STEPS = HalfGemm(
    HALF_BIAS_RELU.source.replace(
        "k0 += kTile) {", "k0 += kTile, xp += kTile, wp += (long long)kTile * cols) {").replace(
        "    xp += kTile;\n    wp += (long long)kTile * cols;\n", ""),
    HALF_BIAS_RELU.entry, HALF_BIAS_RELU.scalars, HALF_BIAS_RELU.call, HALF_BIAS_RELU.output)
assert "wp += (long long)kTile * cols;" not in HALF_BIAS_RELU_HEADER_STEPS.source

SPELLINGS = {"half_alpha_beta": HALF_ALPHA_BETA, "half_bias_relu": HALF_BIAS_RELU,
             "half_bias_relu_header_steps": HALF_BIAS_RELU_HEADER_STEPS}
#: M, N, K that divide into no tile (every row misaligned for 16-byte loads but some); and
#: rows of whole 16-byte runs (N and K multiples of 8) with a ragged M
ENV = {"M": 37, "N": 45, "K": 29}
ALIGNED = {"M": 37, "N": 48, "K": 40}

_MAIN = r"""
int main() {
  const int M = %(M)d, N = %(N)d, K = %(K)d;
  std::vector<__half> av(M * K), bv(K * N), biasv(N), ov(M * N);
  std::vector<float> cv(M * N);
  __half *a = av.data(), *b = bv.data(), *bias = biasv.data(), *o = ov.data();
  float* c = cv.data();
  // halves that are multiples of 1/8 in [-2, 2]: every product is exact in float
  for (int i = 0; i < M * K; ++i) a[i] = (__half)((float)((i * 37) %% 33 - 16) / 8.0f);
  for (int i = 0; i < K * N; ++i) b[i] = (__half)((float)((i * 29) %% 31 - 15) / 8.0f);
  for (int i = 0; i < N; ++i) bias[i] = (__half)((float)((i * 7) %% 9 - 4) / 4.0f);
  for (int i = 0; i < M * N; ++i) c[i] = (float)((i * 11) %% 7 - 3) / 2.0f;
  wb_launch({%(gx)d, %(gy)d, 1}, {%(bx)d, %(by)d, 1}, [&] { %(call)s; });
  for (int i = 0; i < M * N; ++i) std::printf("%%a\n", (double)%(output)s[i]);
  std::printf("%%ld\n", wb_vector_loads);
  return 0;
}
"""


def _host_run(s: HalfGemm, source: str, launch: tuple[list[int], list[int]],
              env: Mapping[str, int], work: Path,
              flags: tuple[str, ...]) -> tuple[np.ndarray, int]:
    """The output of one host run of ``source`` (``s``'s kernel or a config of its lift)
    at ``env``, and the 16-byte half loads it took."""
    grid, block = launch
    main = _MAIN % {**env, "gx": grid[0], "gy": grid[1], "bx": block[0], "by": block[1],
                    "call": s.call, "output": s.output}
    work.mkdir(parents=True, exist_ok=True)
    printed = run_on_host(work, "half_gemm", COOPERATIVE_BLOCK + host_half(source) + main,
                          flags=flags).split()
    out = np.array([float.fromhex(v) for v in printed[:-1]]).reshape(env["M"], env["N"])
    return out, int(printed[-1])


def _reference(s: HalfGemm, env: Mapping[str, int]) -> np.ndarray:
    """What ``s`` computes, in float64, on _MAIN's inputs."""
    m, n, k = env["M"], env["N"], env["K"]
    a = np.array([((i * 37) % 33 - 16) / 8.0 for i in range(m * k)]).reshape(m, k)
    b = np.array([((i * 29) % 31 - 15) / 8.0 for i in range(k * n)]).reshape(k, n)
    if s.output == "c":
        c = np.array([((i * 11) % 7 - 3) / 2.0 for i in range(m * n)]).reshape(m, n)
        return 1.25 * (a @ b) - 0.5 * c
    bias = np.array([((i * 7) % 9 - 4) / 4.0 for i in range(n)])
    return np.maximum(a @ b + bias, 0.0)


def _written(s: HalfGemm, env: Mapping[str, int], work: Path,
             flags: tuple[str, ...]) -> np.ndarray:
    """The kernel as written at ``env`` (its launch: 16 x 16 blocks), checked against the
    float64 reference (half-rounded output: a half's relative step)."""
    grid = [-(-env["N"] // 16), -(-env["M"] // 16)]
    written, _ = _host_run(s, s.source, (grid, [16, 16]), env, work, flags)
    assert np.allclose(written, _reference(s, env), rtol=1e-3, atol=1e-3)
    return written


def _lifted_run(s: HalfGemm, template: KernelTemplate, config: Mapping[str, Any],
                env: Mapping[str, int], work: Path,
                flags: tuple[str, ...]) -> tuple[np.ndarray, int]:
    launch = template.launch_for(dict(config), {**env, "elem_bytes": 4})
    return _host_run(s, template.render(dict(config), "fp32").source,
                     (list(launch.grid), list(launch.block)), env, work, flags)


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_half_spelling_lifts_the_register_tile(name: str) -> None:
    s = SPELLINGS[name]
    lifted = s.lift()
    assert {p.name for p in lifted.params} == {*TILE_KNOBS, "VEC"}, lifted.notes
    assert lifted.block == ("BN // TN", "BM // TM")
    walks = [r for r in _reasons(lifted, "REGISTER_TILE") if "stepped along k" in r]
    assert len(walks) == 2, lifted.notes
    assert next(p for p in lifted.params if p.name == "VEC").spec["values"] == [1, 8]
    template = lifted_template(lifted, s.entry)
    default = template.default_config()
    assert (default["BM"], default["BN"], default["BK"], default["TM"], default["TN"],
            default["VEC"]) == (16, 16, 16, 1, 1, 1)


@needs_gxx
@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_half_spelling_writes_the_bits_of_the_kernel_as_written(
        name: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    s = SPELLINGS[name]
    template = lifted_template(s.lift(), s.entry)
    written = _written(s, ENV, tmp_path / "written", host_flags)
    for i, config in enumerate(_configs(template, {**ENV, "elem_bytes": 4})):
        got, _ = _lifted_run(s, template, config, ENV, tmp_path / f"c{i}", host_flags)
        assert np.array_equal(got, written), config


@needs_gxx
@pytest.mark.timeout(180)
def test_aligned_rows_take_the_16_byte_half_loads_and_write_the_same_bits(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """Rows of whole 16-byte runs: the VEC = 8 config loads most of both tiles eight halves
    at a time (the ragged last rows of A as written), and writes the kernel's bits."""
    s = SPELLINGS["half_alpha_beta"]
    template = lifted_template(s.lift(), s.entry)
    written = _written(s, ALIGNED, tmp_path / "written", host_flags)
    config = {**template.default_config(), **SAMPLED}
    got, loads = _lifted_run(s, template, config, ALIGNED, tmp_path / "vec", host_flags)
    assert np.array_equal(got, written)
    # A: 37 rows of 40 halves, B: 40 rows of 48, in runs of 8 (a tile past M or K is
    # zero-filled as written, never loaded)
    assert loads >= (32 * 40 + 40 * 48) // 8, loads


# -- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize("edits,reason,line", [
    # a step that differs per thread: the virtual threads of one real thread would share it
    ([("    ia += TS;\n", "    ia += TS + threadIdx.x;\n")],
     "by a value that depends on the thread or block", 24),
    # reset rather than stepped
    ([("    ia += TS;\n", "    ia = row * k + (t + 1) * TS + threadIdx.x;\n")],
     "otherwise than by a step along k", 24),
    # stepped before the product reads the tiles: the stores would read the next slice
    ([("    ia += TS;\n", ""), ("    __syncthreads();\n    for (int q",
                                "    ia += TS;\n    __syncthreads();\n    for (int q")],
     "other than after the product", 20),
    # set from a local that is stepped later: inlined in the loop it would read the new value
    ([("  int ia = row * k + threadIdx.x;", "  int kofs = 0;\n  int ia = row * k + kofs + threadIdx.x;"),
      ("    ia += TS;\n", "    ia += TS;\n    kofs += TS;\n")],
     "is set from `kofs`, which is written again", 12),
])
def test_walking_locals_the_analysis_cannot_follow_are_refused_with_the_line(
        edits: list[tuple[str, str]], reason: str, line: int) -> None:
    source = HALF_ALPHA_BETA.source
    for old, new in edits:
        assert old in source
        source = source.replace(old, new, 1)
    s = HalfGemm(source, HALF_ALPHA_BETA.entry, HALF_ALPHA_BETA.scalars,
                 HALF_ALPHA_BETA.call, HALF_ALPHA_BETA.output)
    lifted = s.lift()
    found = [f for f in lifted.findings if f.transform == "REGISTER_TILE"]
    assert found and not any(f.applied for f in found), lifted.notes
    assert reason in found[0].reason, found[0].reason
    assert found[0].line == line
