"""Register tiling of batched / strided GEMMs (issue 28, part A.1).

A batch (or any outer, block-uniform) index read from ``blockIdx.z`` -- directly, through a
local, as a pointer offset or inside the flat index -- stays as written and the grid's z
stays as written; the x / y tiling is lifted as for the 2-D GEMM. Four authors' spellings
(the corpus's square ``TW`` tile, strided batches with the index in the flat offset, a
reassigned base pointer with a ``(K + TILE - 1) / TILE`` count and ``#pragma unroll``, a
``blockDim`` spelling with a ``size_t`` batch stride), each checked on the host at its
default and corner configs against the product; uses of the batch index the rewrite cannot
keep are refused with their line.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from helpers_templater import corner_configs, host_sample, lifted_template
from regtile_spellings import Spelling, lift, worst_error

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "benchmarks" / "corpus_compute_unseen" / "batched_matmul" / "baseline.cu"

GRID3 = ("ceil_div(N, 16)", "ceil_div(M, 16)", "batch")
BATCHED: dict[str, Spelling] = {
    "corpus_tw_pointer_locals": Spelling(
        CORPUS.read_text(), GRID3, ("16", "16"),
        {"batch": "batch", "rows": "M", "inner": "K", "cols": "N"},
        "batched_matmul(C, A, B, batch, M, K, N)", entry="batched_matmul"),
    "strided_flat_index_literals": Spelling("""
// cuBLAS-like strided batch: the batch index in the flat offsets, explicit strides
extern "C" __global__ void k(const float* A, const float* B, float* C, int M, int N, int K,
                             long long strideA, long long strideB, long long strideC) {
  __shared__ float tA[16][16];
  __shared__ float tB[16][16];
  int y = blockIdx.y * 16 + threadIdx.y;
  int x = blockIdx.x * 16 + threadIdx.x;
  float s = 0.f;
  for (int k0 = 0; k0 < K; k0 += 16) {
    if (y < M && k0 + threadIdx.x < K)
      tA[threadIdx.y][threadIdx.x] = A[blockIdx.z * strideA + y * K + k0 + threadIdx.x];
    else
      tA[threadIdx.y][threadIdx.x] = 0.f;
    if (k0 + threadIdx.y < K && x < N)
      tB[threadIdx.y][threadIdx.x] = B[blockIdx.z * strideB + (k0 + threadIdx.y) * N + x];
    else
      tB[threadIdx.y][threadIdx.x] = 0.f;
    __syncthreads();
    for (int kk = 0; kk < 16; ++kk)
      s += tA[threadIdx.y][kk] * tB[kk][threadIdx.x];
    __syncthreads();
  }
  if (y < M && x < N) C[blockIdx.z * strideC + y * N + x] = s;
}
""", GRID3, ("16", "16"), {"M": "M", "N": "N", "K": "K", "strideA": "M * K",
                            "strideB": "K * N", "strideC": "M * N"},
        "k(A, B, C, M, N, K, (long long)M * K, (long long)K * N, (long long)M * N)"),
    "reassigned_bases_tile_count_unroll": Spelling("""#ifndef TILE
#define TILE 32
#endif
extern "C" __global__ void k(float* C, const float* A, const float* B, int n_batch,
                             int M, int N, int K) {
  const int batch = blockIdx.z;
  A += batch * M * K;
  B += batch * K * N;
  C += batch * M * N;
  __shared__ float a_s[TILE][TILE];
  __shared__ float b_s[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < (K + TILE - 1) / TILE; t++) {
    const int ak = t * TILE + threadIdx.x;
    const int bk = t * TILE + threadIdx.y;
    a_s[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
    b_s[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < TILE; ++i) {
      acc += a_s[threadIdx.y][i] * b_s[i][threadIdx.x];
    }
    __syncthreads();
  }
  if (row < M && col < N) {
    C[row * N + col] = acc;
  }
}
""", ("ceil_div(N, 32)", "ceil_div(M, 32)", "batch"), ("32", "32", "1"),
        {"n_batch": "batch", "M": "M", "N": "N", "K": "K"}, "k(C, A, B, batch, M, N, K)"),
    "blockdim_size_t_stride_alpha": Spelling("""#define BS 16
extern "C" __global__ void k(float* out, const float* a, const float* b, float alpha,
                             int m, int n, int kdim) {
  __shared__ float As[BS][BS + 1];
  __shared__ float Bs[BS][BS];
  size_t z = blockIdx.z;
  const float* ab = a + z * (size_t)m * kdim;
  const float* bb = b + z * (size_t)kdim * n;
  float* ob = out + z * (size_t)m * n;
  int ty = threadIdx.y, tx = threadIdx.x;
  int r = blockIdx.y * blockDim.y + ty;
  int c = blockIdx.x * blockDim.x + tx;
  float v = 0;
  for (int p = 0; p < kdim; p += BS) {
    As[ty][tx] = (r < m && p + tx < kdim) ? ab[(size_t)r * kdim + p + tx] : 0;
    Bs[ty][tx] = (p + ty < kdim && c < n) ? bb[(size_t)(p + ty) * n + c] : 0;
    __syncthreads();
    for (int q = 0; q < BS; q++) v = fmaf(As[ty][q], Bs[q][tx], v);
    __syncthreads();
  }
  if (r < m && c < n) ob[(size_t)r * n + c] = alpha * v;
}
""", GRID3, ("16", "16"), {"alpha": "1", "m": "M", "n": "N", "kdim": "K"},
        "k(C, A, B, 0.5f, M, N, K)", alpha="0.5"),
}

ENV = {"batch": 3, "M": 37, "N": 45, "K": 29}


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_a_batch_index_keeps_the_grid_z_and_lifts_the_tiles(name: str) -> None:
    s = BATCHED[name]
    lifted = lift(s)
    assert any(f.transform == "REGISTER_TILE" and f.applied for f in lifted.findings), \
        lifted.notes
    assert {"BM", "BN", "BK", "TM", "TN"} <= {p.name for p in lifted.params}
    assert lifted.grid[2] == "batch"  # z as written
    assert lifted.block[:2] == ("BN // TN", "BM // TM")
    assert "blockIdx.z" in lifted.source  # every use of the batch index kept
    template = lifted_template(lifted, s.entry)
    launch = template.launch_for(template.default_config(), {**ENV, "elem_bytes": 4})
    tile = int(s.block[0])
    assert list(launch.block[:2]) == [tile, tile]  # the defaults launch as written
    assert launch.grid[2] == ENV["batch"]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the host simulation")
@pytest.mark.parametrize("name", sorted(BATCHED))
def test_batched_corners_compute_every_product(name: str) -> None:
    s = BATCHED[name]
    template = lifted_template(lift(s), s.entry)
    with tempfile.TemporaryDirectory() as tmp:
        for config in host_sample(corner_configs(template, {**ENV, "elem_bytes": 4})):
            assert worst_error(s, template, config, ENV, Path(tmp)) < 1e-3, config


# -- refusals ------------------------------------------------------------------------------

BASE = BATCHED["reassigned_bases_tile_count_unroll"]


@pytest.mark.parametrize("edit,reason,line", [
    (("  A += batch * M * K;\n", "  A += batch * TILE * K;\n"),
     "multiplies the batch index (blockIdx.z) by the tile size", 7),
    (("  const int batch = blockIdx.z;\n  A += batch * M * K;\n",
      "  const int batch = blockIdx.z + 1;\n  A += (batch - 1) * TILE * K;\n"),
     "uses the tile size with a block index other than as the block offset", 7),
    (("  const int col = blockIdx.x * TILE + threadIdx.x;\n",
      "  const int col = blockIdx.x * TILE + threadIdx.x + threadIdx.z;\n"),
     "`threadIdx.z` is read", 13),
    (("  if (row < M && col < N) {\n", "  if (row < M && col < N && gridDim.x > 0) {\n"),
     "`gridDim.x` is read", 27),
])
def test_batch_uses_the_rewrite_cannot_keep_are_refused_with_the_line(
        edit: tuple[str, str], reason: str, line: int) -> None:
    assert edit[0] in BASE.source
    s = Spelling(BASE.source.replace(edit[0], edit[1], 1), BASE.grid, BASE.block, BASE.scalars,
                 BASE.call)
    lifted = lift(s)
    found = [f for f in lifted.findings if f.transform == "REGISTER_TILE"]
    assert found and not any(f.applied for f in found), lifted.notes
    assert reason in found[0].reason
    assert found[0].line == line


# -- the corpus folders through the offline templater ------------------------------------

@pytest.mark.parametrize("folder", ["corpus_compute/gemm_smem",
                                    "corpus_compute_unseen/batched_matmul"])
def test_corpus_gemms_lift_the_expert_knobs(folder: str) -> None:
    from workbench.core.kernel_folder import load_kernel_folder
    from workbench.templater.offline import offline_template

    result = offline_template(load_kernel_folder(ROOT / "benchmarks" / folder))
    names = set(result.template.param_names)
    assert {"BM", "BN", "BK", "TM", "TN", "VEC"} <= names, result.notes
    launch = result.template.launch.to_dict()
    assert launch["block"][:2] == ["BN // TN", "BM // TM"]
    assert launch["grid"][2:] == (["batch"] if "batched" in folder else [])
