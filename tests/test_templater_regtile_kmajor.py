"""Register tiling: a shared tile read along k stored k-major, decided by the analysis
(issue 28).

A tile the product reads as ``S[row][k]`` (A's rows, or B's columns in ``A . B^T``) is stored
transposed while it is loaded, ``[BK][BM + 1]``: with a thread's outputs strided by the
block's threads, each k then reads consecutive words across a warp, and the odd row length
puts a warp's transposing stores on distinct banks. Every access swaps its two indices, so
the loads stay the ones the kernel as written does, guards included, and the VEC path
stores its four lanes transposed. No layout, mapping or register-cap knob is searched.
Checked on the host for every GEMM spelling of the register-tile tests, the two corpus
GEMMs and an ``A . B^T`` spelling (both tiles read along k), at the default, the corners
and a register-tiled float4 config; and with nvcc at the expert's config.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_nvcc import NVCC, needs_nvcc
from helpers_templater import corner_configs, host_sample, lifted_template
from regtile_spellings import Spelling, lift, simulate
from test_templater_regtile_batch import BATCHED
from test_templater_regtile_spellings import SPELLINGS

ROOT = Path(__file__).resolve().parents[1]
GEMM_SMEM = ROOT / "benchmarks" / "corpus_compute" / "gemm_smem" / "baseline.cu"

# C = A . B^T with B stored N x K: both tiles are read along k in their inner index
A_BT = Spelling("""
#ifndef T
#define T 16
#endif
extern "C" __global__ void nt(const float* __restrict__ A, const float* __restrict__ Bt,
                              float* __restrict__ C, int M, int N, int K) {
  __shared__ float sa[T][T + 1];
  __shared__ float sb[T][T + 1];
  const int r = blockIdx.y * T + threadIdx.y;
  const int cb = blockIdx.x * T;
  float sum = 0.0f;
  for (int k0 = 0; k0 < K; k0 += T) {
    sa[threadIdx.y][threadIdx.x] = (r < M && k0 + threadIdx.x < K) ? A[r * K + k0 + threadIdx.x] : 0.0f;
    // row threadIdx.y of the B^T tile: column cb + threadIdx.y of C
    sb[threadIdx.y][threadIdx.x] =
        (cb + threadIdx.y < N && k0 + threadIdx.x < K) ? Bt[(cb + threadIdx.y) * K + k0 + threadIdx.x] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < T; ++kk) { sum += sa[threadIdx.y][kk] * sb[threadIdx.x][kk]; }
    __syncthreads();
  }
  if (r < M && cb + threadIdx.x < N) C[r * N + cb + threadIdx.x] = sum;
}
""", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("16", "16"), {"M": "M", "N": "N", "K": "K"},
    "nt(A, B, C, M, N, K)", b_index="(size_t)bt * K * N + (size_t)c * K + k", entry="nt")

ALL: dict[str, Spelling] = {
    **SPELLINGS, **BATCHED, "a_bt_both_tiles_along_k": A_BT,
    "corpus_gemm_smem": Spelling(GEMM_SMEM.read_text(), ("ceil_div(N, 16)", "ceil_div(M, 16)"),
                                 ("16", "16"), {"M": "M", "N": "N", "K": "K"},
                                 "gemm_smem(C, A, B, M, N, K)", entry="gemm_smem"),
}
ENV = {"batch": 2, "M": 37, "N": 44, "K": 28}  # rows of A and B start 16-byte aligned
#: knobs a register-tiled GEMM's space no longer searches (the analysis decides them)
DECIDED = {"A_KMAJOR", "B_KMAJOR", "CONTIG_TILE", "PAD", "MIN_BLOCKS_PER_SM"}


def _env(s: Spelling) -> dict[str, int]:
    return {**ENV, "batch": ENV["batch"] if len(s.grid) == 3 else 1}


@pytest.mark.parametrize("name", sorted(ALL))
def test_the_tile_read_along_k_is_stored_k_major(name: str) -> None:
    s = ALL[name]
    lifted = lift(s)
    assert not DECIDED & {p.name for p in lifted.params}, lifted.notes
    template = lifted_template(lifted, s.entry)
    source = template.render(template.default_config(), "fp32").source
    declared = re.findall(r"__shared__\s+float\s+(\w+)\[(\w+)\]\[([^\]]+)\]", source)
    kmajor = {t for t, outer, inner in declared if outer == "BK" and inner.endswith("+ 1")}
    assert len(kmajor) == (2 if s is A_BT else 1), declared
    assert sum(f"{t} is read along k in its inner index: stored k-major" in note
               for note in lifted.notes for t in kmajor) == len(kmajor)
    # the block's threads bound the registers; no minimum of blocks per SM
    assert re.search(r"__launch_bounds__\(\(BN / TN\) \* \(BM / TM\)\)", source), source


def _configs(s: Spelling) -> list[dict[str, Any]]:
    """Default, corners and a register-tiled VEC = 4 config: the valid ones at the
    spelling's env."""
    template = lifted_template(lift(s), s.entry)
    env = {**_env(s), "elem_bytes": 4}
    space = template.space(env)
    out = [*corner_configs(template, env),
           {**template.default_config(), "BM": 32, "BN": 32, "TM": 2, "TN": 4, "VEC": 4}]
    valid = [c for c in out if space.rejection(c) is None]
    assert valid[-1]["VEC"] == 4 and valid[-1]["TM"] == 2
    return valid


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
@pytest.mark.parametrize("name", sorted(ALL))
def test_k_major_tiles_compute_the_product_as_written(name: str) -> None:
    s = ALL[name]
    template = lifted_template(lift(s), s.entry)
    with tempfile.TemporaryDirectory() as tmp:
        for config in host_sample(_configs(s)):
            worst, loads = simulate(s, template, config, _env(s), Path(tmp))
            assert worst < 1e-3, config
            if config["VEC"] == 4:
                assert loads > 0, config  # the vector path is taken with the tile transposed


EXPERT_CONFIG = {"BM": 128, "BN": 128, "BK": 32, "TM": 8, "TN": 8, "VEC": 4}


def _ptx_and_ptxas(config: dict[str, Any]) -> tuple[str, str]:
    """The PTX of the corpus GEMM's lift at ``config`` (sm_90, -O3) and ptxas -v's report."""
    s = ALL["corpus_gemm_smem"]
    template = lifted_template(lift(s), s.entry)
    config = {**template.default_config(), **config}
    assert template.space({**_env(s), "elem_bytes": 4}).rejection(config) is None
    assert NVCC is not None
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.cu"
        src.write_text(template.render(config, "fp32").source)
        done = subprocess.run([NVCC, "-ptx", "-arch=sm_90", "-O3", "-o", str(Path(tmp) / "k.ptx"),
                               str(src)], capture_output=True, text=True, timeout=300,
                              check=False)
        assert done.returncode == 0, done.stderr
        ptx = (Path(tmp) / "k.ptx").read_text()
        done = subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-O3", "-Xptxas", "-v",
                               "-o", str(Path(tmp) / "k.cubin"), str(src)],
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
    return ptx, done.stderr


@needs_nvcc
def test_k_major_gemm_compiles_without_spills_reading_each_shared_value_once() -> None:
    ptx, report = _ptx_and_ptxas(EXPERT_CONFIG)
    assert re.search(r"0 bytes spill stores, 0 bytes spill loads", report), report
    # the k loop reads TM values of A and TN of B per k, each once: BK * (TM + TN) loads;
    # a thread's strided rows are not adjacent: scalar loads, as in the expert's PTX
    assert ptx.count("ld.shared.f32") == 32 * (8 + 8)
    assert "ld.shared.v4" not in ptx
