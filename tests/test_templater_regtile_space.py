"""What a register-tiled GEMM's space searches and what the lift decides (issue 28).

The space searches BM, BN, BK, a near-square TM x TN and VEC; the thread mapping, the
k-major layout of a tile read along k and the register cap are decided (see
workbench/templater/regtile_space.py). ``__launch_bounds__`` names the block's threads:
an author's first argument is replaced and a minimum of blocks they wrote is kept, none is
added. Checked on two spellings written with ``__launch_bounds__`` (a 2-D block with a
``constexpr`` tile, A . B; a 1-D block split by ``/`` and ``%`` with macros, A . B^T and
padded tiles), each computing on the host as written at its default and a tiled config; and
on the three corpus GEMMs, whose spaces hold every near-square register tile at a 128 x 128
block tile and a few hundred configs in all.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from helpers_templater import lifted_template
from regtile_spellings import Spelling, lift, simulate

from workbench.core.kernel_folder.load import load_kernel_folder
from workbench.templater.offline import offline_template

ROOT = Path(__file__).resolve().parents[1]
MNK = {"m": "M", "n": "N", "k": "K"}

BOUNDS_2D = Spelling("""
constexpr int TS = 16;
extern "C" __global__ void __launch_bounds__(256) mm_lb(const float* __restrict__ a,
                                                        const float* __restrict__ b,
                                                        float* __restrict__ c,
                                                        int m, int n, int k) {
  __shared__ float ta[TS][TS];
  __shared__ float tb[TS][TS];
  const int row = blockIdx.y * TS + threadIdx.y;
  const int col = blockIdx.x * TS + threadIdx.x;
  float s = 0.f;
  for (int p = 0; p < k; p += TS) {
    ta[threadIdx.y][threadIdx.x] = (row < m && p + threadIdx.x < k) ? a[row * k + p + threadIdx.x] : 0.f;
    tb[threadIdx.y][threadIdx.x] = (p + threadIdx.y < k && col < n) ? b[(p + threadIdx.y) * n + col] : 0.f;
    __syncthreads();
    for (int q = 0; q < TS; ++q) s += ta[threadIdx.y][q] * tb[q][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = s;
}
""", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("16", "16"), MNK, "mm_lb(A, B, C, M, N, K)",
    entry="mm_lb")

BOUNDS_1D_NT = Spelling("""
#define TILE 16
#define THREADS 256
extern "C" __global__ void __launch_bounds__(THREADS, 2) nt_lb(float* out, const float* x,
                                                             const float* w, int rows,
                                                             int cols, int depth) {
  __shared__ float xs[TILE][TILE + 1];
  __shared__ float ws[TILE][TILE + 1];
  const int t = threadIdx.x;
  const int ty = t / TILE, tx = t % TILE;
  const int r = blockIdx.y * TILE + ty;
  const int c0 = blockIdx.x * TILE;
  float acc = 0.0f;
  for (int d = 0; d < depth; d += TILE) {
    xs[ty][tx] = (r < rows && d + tx < depth) ? x[(size_t)r * depth + d + tx] : 0.0f;
    ws[ty][tx] = (c0 + ty < cols && d + tx < depth) ? w[(size_t)(c0 + ty) * depth + d + tx] : 0.0f;
    __syncthreads();
    for (int e = 0; e < TILE; ++e) acc += xs[ty][e] * ws[tx][e];
    __syncthreads();
  }
  if (r < rows && c0 + tx < cols) out[(size_t)r * cols + c0 + tx] = acc;
}
""", ("ceil_div(N, 16)", "ceil_div(M, 16)"), ("256",),
    {"rows": "M", "cols": "N", "depth": "K"}, "nt_lb(C, A, B, M, N, K)",
    b_index="(size_t)bt * N * K + (size_t)c * K + k", entry="nt_lb")

BOUNDS = {"2d_constexpr_nn": BOUNDS_2D, "1d_macro_nt_min_blocks": BOUNDS_1D_NT}
SEARCHED = {"BM", "BN", "BK", "TM", "TN", "VEC"}
ENV = {"batch": 1, "M": 37, "N": 44, "K": 28}


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_the_launch_bound_is_the_block_and_no_minimum_is_added(name: str) -> None:
    lifted = lift(BOUNDS[name])
    assert {p.name for p in lifted.params} == SEARCHED, lifted.notes
    want = "(BN / TN) * (BM / TM)" + (", 2" if name.endswith("min_blocks") else "")
    assert lifted.source.count("__launch_bounds__(") == 1
    assert f"__launch_bounds__({want}) " in lifted.source, lifted.source
    said = [n for n in lifted.notes if "__launch_bounds__ names the block's threads" in n]
    assert len(said) == 1 and ("minimum of blocks as written, 2, kept" in said[0]) == \
        name.endswith("min_blocks"), said


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_the_spellings_with_launch_bounds_compute_as_written(name: str) -> None:
    s = BOUNDS[name]
    template = lifted_template(lift(s), s.entry)
    space = template.space({**ENV, "elem_bytes": 4})
    tiled = {**template.default_config(), "BM": 32, "BN": 64, "BK": 8, "TM": 4, "TN": 4,
             "VEC": 4}
    assert space.rejection(tiled) is None, space.rejection(tiled)
    with tempfile.TemporaryDirectory() as tmp:
        for config in (template.default_config(), tiled):
            worst, _ = simulate(s, template, config, ENV, Path(tmp))
            assert worst < 1e-3, config


CORPUS = {"gemm_smem": ROOT / "benchmarks" / "corpus_compute" / "gemm_smem",
          "sgemm_nt": ROOT / "benchmarks" / "corpus_compute_unseen2" / "sgemm_nt",
          "dense_relu": ROOT / "benchmarks" / "corpus_compute_unseen3" / "dense_relu"}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_each_corpus_gemm_space_holds_every_near_square_tile_in_a_few_hundred(
        name: str) -> None:
    folder = load_kernel_folder(CORPUS[name])
    template = offline_template(folder).template
    assert set(template.param_names) == SEARCHED
    space = template.space({**folder.shapes["large"], "elem_bytes": 4})
    configs = list(space)
    # before the knobs were decided: 15,840 (gemm_smem), 24,264 and 30,888 configs
    assert 200 <= len(configs) <= 400, len(configs)
    assert space.rejection(template.default_config()) is None
    big = {(c["TM"], c["TN"]) for c in configs if (c["BM"], c["BN"]) == (128, 128)}
    assert big == {(4, 4), (4, 8), (8, 4), (8, 8)}
    assert all(c["VEC"] == 4 for c in configs if (c["TM"], c["TN"]) != (1, 1))
