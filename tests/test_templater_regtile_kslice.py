"""Shared-memory k slices for the naive product's register tile (issue 28,
:mod:`workbench.templater.regtile_kslice`).

Set 19's column-major GEMM (gemm_cm_bt_rowscale: 1-based accessor macros, B transposed, a
row scale) lifted only a register tile over global memory: 1.05x at the expert's pick on
the H200 where the expert's shared k slices reach 2.66x. The lift now offers ``BK`` (k per
shared slice, 0 = the register tile from global memory as before, the default) and ``PAD``
(tied to ``BK > 0``). Pure: the knobs, their constraints, the expert's pick (BM 32, BN 128,
BK 32, TM 4, TN 4) inside the space, each read's load order, and the refusals (a read of
both coordinates at k, an address not affine in k, a gather). Host (g++, the cooperative
simulation: barriers and shared memory as on the GPU): the folder and a second hand's
spelling (row-major, 0-based, a bounds ``if`` block, the operands through local pointers,
another accumulator's name), bit for bit against the kernel as written at the default and a
staged mix; under ``WORKBENCH_FULL_MATRIX=1`` at the expert's pick with ``BK`` 0 and 32,
``BK`` and ``PAD`` at both ends, and every all-ends config. The check shape (70 x 45 over 37)
is a multiple of no tile and of no slice.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen19
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, end_configs, host_sample
from regtile_first_contact import host_outputs
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)
from test_templater_regtile_first_contact_naive import ENV, PRODUCTS, SAMPLED

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template

FOLDER = held_back_unseen19.SET.root / "gemm_cm_bt_rowscale"
#: The expert's H200 pick (BM 32, BN 128, BK 32, TM 4, TN 4, PAD 0) in the lift's knobs: x
#: runs over C's rows, 8 threads of TN 4 along x, 32 of TM 4 along y.
EXPERT_PICK = {"THREADS_X": 8, "THREADS_Y": 32, "TM": 4, "TN": 4, "BK": 32, "PAD": 0}
#: a 32 x 64 tile of 4 x 2 over slices of 8, padded: 37 = four slices and a partial one;
#: 70 rows over three tiles and 45 columns over one, the last of each partly
MIX = {"THREADS_X": 16, "THREADS_Y": 16, "TM": 4, "TN": 2, "BK": 8, "PAD": 1}

#: Another hand: row-major (A is M x K, B transposed N x K, C M x N), 0-based, the operands
#: through local pointers, a bounds ``if`` block around the rest, ``sum_`` accumulating.
SECOND = """extern "C" __global__ void gemm_cm_bt_rowscale(float* c, const float* a,
                                               const float* b, const float* s, int M,
                                               int N, int K) {
  const float* A = a;
  const float* Bt = b;
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  int col = threadIdx.y + blockDim.y * blockIdx.y;
  if (r < M && col < N) {
    float sum_ = 0.f;
    for (int kk = 0; kk < K; kk++) {
      sum_ += A[r * K + kk] * Bt[col * K + kk];
    }
    c[r * N + col] = s[r] * sum_;
  }
}
"""


def _folder(spelling: str, root: Path) -> KernelFolder:
    return load_kernel_folder(FOLDER) if spelling == "folder" else \
        respelled(FOLDER, root, SECOND)


@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_slices_lifted_with_the_register_tile(spelling: str, tmp_path: Path) -> None:
    kf = _folder(spelling, tmp_path)
    result = offline_template(kf)
    specs = {p.name: dict(p.spec) for p in result.lifted.params}
    assert specs["BK"]["default"] == 0 and specs["BK"]["values"] == [0, 8, 16, 32]
    assert specs["PAD"]["default"] == 0 and specs["PAD"]["values"] == [0, 1]
    assert any(n.startswith("K_SLICE: applied") for n in result.notes), result.notes
    space = result.template.space(kf.env(kf.check_shape, "fp32"))
    default = dict(result.template.default_config())
    for config in (EXPERT_PICK, MIX):
        assert space.rejection({**default, **config}) is None, config
    assert space.rejection({**default, "PAD": 1}) is not None  # PAD only with slices
    # 64 x 512 outputs over slices of 32 floats: 73.7 KB of shared memory, over 48 KB
    big = {**default, "THREADS_X": 64, "THREADS_Y": 64, "TM": 8, "TN": 1, "BK": 32}
    assert space.rejection(big) is not None
    source = result.lifted.source
    # column-major operands load along the tile's coordinate; row-major ones along k
    order = "wb_e % BK" if spelling == "second" else "wb_e / BK"
    assert order in source.replace("(THREADS_X * TN)", "BK").replace("(THREADS_Y * TM)",
                                                                    "BK")
    assert source.count("__syncthreads()") == 4  # two a round: the full ones and the last


def _configs(kf: KernelFolder) -> list[dict[str, int]]:
    template = offline_template(kf).template
    default = dict(template.default_config())
    picked = [default, {**default, **MIX}]
    if FULL_MATRIX:
        picked += [{**default, **EXPERT_PICK}, {**default, **EXPERT_PICK, "BK": 0},
                   {**default, **EXPERT_PICK, "BK": 8, "PAD": 1},
                   *end_configs(template, kf.env(kf.check_shape, "fp32"))]
    return picked


@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_host_bit_for_bit(spelling: str, tmp_path: Path,
                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _folder(spelling, tmp_path / "src")
    template = offline_template(kf).template
    configs = _configs(kf)
    ran = same_as_written(kf, template, configs, held_back_unseen19.host_source, tmp_path,
                          host_flags)
    assert ran == len(configs)


@pytest.mark.parametrize(("loop", "reason"), [
    # a read of both output coordinates at k (no slice of one operand holds it)
    ("sum_ += A[r * K + kk] * Bt[col * K + kk] * c[(r + col) % 3 + kk];",
     "reads both output coordinates"),
    # k squared in the address
    ("sum_ += A[r * K + kk * kk % K] * Bt[col * K + kk];", "not affine"),
    # a gather: the address reads memory at k
    ("sum_ += A[r * K + (int)s[kk]] * Bt[col * K + kk];", "not affine"),
])
def test_refused_with_the_reason(loop: str, reason: str, tmp_path: Path) -> None:
    """Each refusal leaves the register tile from global memory (no BK, no PAD) and says
    why, at the loop's line."""
    source = SECOND.replace("sum_ += A[r * K + kk] * Bt[col * K + kk];", loop)
    assert source != SECOND
    result = offline_template(respelled(FOLDER, tmp_path, source))
    names = {p.name for p in result.lifted.params}
    assert {"TM", "TN"} <= names and not {"BK", "PAD"} & names, result.notes
    refused = [n for n in result.notes if n.startswith("K_SLICE: not applied")]
    assert refused and reason in refused[0], result.notes


#: The naive products of tests/test_templater_regtile_first_contact_naive.py (other hands:
#: blockDim offsets and alpha / beta, a batch through local pointers and ``__ldg``, a
#: ``sq()`` helper, int8 to int32, a 3-D launch with ``#pragma unroll 4``) whose loop over k
#: is a counted ascending ``for``: each lifts the slices too.
STAGED = ["batched_tn_ldg_if", "blockdim_return_alpha_beta", "int8_l1_aliases_32x4",
          "pragma_unroll_3d_launch_8x8", "sqdist_helper_negated_guard"]


@pytest.mark.parametrize("name", STAGED)
def test_other_products_staged_bit_for_bit(name: str, tmp_path: Path) -> None:
    """A padded slice of 8 over the sampled 32 x 4 block of 2 x 4 tiles, and the all-ends
    configs with slices (their first and last without WORKBENCH_FULL_MATRIX=1), bit for bit
    against the kernel as written (37 x 45 over 29: a multiple of no tile or slice)."""
    p = PRODUCTS[name]
    template = p.template()
    env = {**ENV, "elem_bytes": 4}
    default = dict(template.default_config())
    staged = [c for c in end_configs(template, env) if c["BK"] > 0]
    configs = host_sample([{**default, **SAMPLED, "BK": 8, "PAD": 1}, *staged])
    assert all(template.space(env).rejection(c) is None for c in configs)
    written, outputs = host_outputs(p, template, configs, ENV, tmp_path)
    for config, got in zip(configs, outputs, strict=True):
        assert got == written, config


def test_a_count_down_loop_keeps_the_register_tile_alone() -> None:
    lifted = PRODUCTS["double_walk_two_returns_relu"].lift()
    assert not {"BK", "PAD"} & {q.name for q in lifted.params}
    assert any(f.transform == "K_SLICE" and not f.applied and "ascending" in f.reason
               for f in lifted.findings), lifted.notes
