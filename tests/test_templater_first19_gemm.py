"""First contact with held-back set 19's column-major GEMM (issue 28):
benchmarks/corpus_compute_unseen19/gemm_cm_bt_rowscale, ported from Fortran, computes
``C(i, j) = s(i) * sum_k A(i, k) * B(j, k)`` one element a thread of a 16 x 16 block, its
coordinates 1-based (``blockIdx.x * 16 + threadIdx.x + 1``) and every access through a
column-major accessor macro. The register-tile family of products without shared memory
(:mod:`workbench.templater.regtile_naive`) read a coordinate only as exactly
``blockIdx.d * S + threadIdx.d``, so the ``+ 1`` hid the product: it stayed silent and only
BLOCK_X / BLOCK_Y / ITEMS_X / ITEMS_Y were lifted (templater 1.16x, expert 2.66x on the
H200). A coordinate shifted by terms the same for every thread (literals, kernel scalars) is
the same thread mapping: the family now lifts THREADS_X, THREADS_Y, TM, TN.

Host (g++): the folder and a second hand's spelling (no macros, ``blockDim``, the shift
written first, a guard around the rest, a 0-based loop reading ``i1 - 1``), each at the
default, the expert's H200 pick spelled in the lift's knobs (BM 32, BN 128, TM 4, TN 4:
8 x 32 threads of 4 x 4) and a mix, bit for bit against the kernel as written; under
WORKBENCH_FULL_MATRIX=1 at every all-ends config too.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen19
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, end_configs
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.errors import TemplateError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

FOLDER = held_back_unseen19.SET.root / "gemm_cm_bt_rowscale"
KNOBS = {"THREADS_X", "THREADS_Y", "TM", "TN"}
#: The expert's H200 pick (BM 32, BN 128, TM 4, TN 4) in the lift's knobs: x runs over
#: C's rows (the expert's M), so 32 / 4 = 8 threads of TN = 4 along x, 128 / 4 = 32 of TM = 4
#: along y.
EXPERT_PICK = {"THREADS_X": 8, "THREADS_Y": 32, "TM": 4, "TN": 4}
#: 32 rows a block over 70 (the last block partly past), 64 columns over 45 (one block, past)
MIX = {"THREADS_X": 16, "THREADS_Y": 8, "TM": 8, "TN": 4}

#: Another hand: no accessor macros, blockDim, the 1-based shift written first, the rest
#: inside the guard, a 0-based loop over k reading the shifted index back.
SECOND = """extern "C" __global__ void gemm_cm_bt_rowscale(float* c, const float* a,
                                               const float* b, const float* s, int M,
                                               int N, int K) {
  int i1 = 1 + threadIdx.x + blockIdx.x * blockDim.x;
  int j1 = 1 + threadIdx.y + blockIdx.y * blockDim.y;
  if (i1 <= M && j1 <= N) {
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
      acc += a[(size_t)k * M + (i1 - 1)] * b[(size_t)k * N + (j1 - 1)];
    c[(size_t)(j1 - 1) * M + (i1 - 1)] = s[i1 - 1] * acc;
  }
}
"""


def _configs(kf: KernelFolder) -> list[dict[str, int]]:
    template = offline_template(kf).template
    default = dict(template.default_config())
    picked = [default, {**default, **EXPERT_PICK}, {**default, **MIX}]
    if FULL_MATRIX:
        picked += end_configs(template, kf.env(kf.check_shape, "fp32"))
    return picked


@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_register_tile_lifted_through_the_shift(spelling: str, tmp_path: Path) -> None:
    kf = load_kernel_folder(FOLDER) if spelling == "folder" else \
        respelled(FOLDER, tmp_path, SECOND)
    result = offline_template(kf)
    names = {p.name for p in result.lifted.params}
    assert names >= KNOBS, result.notes
    assert any(n.startswith("REGISTER_TILE: applied") for n in result.notes), result.notes
    env = kf.env(kf.check_shape, "fp32")
    space = result.template.space(env)
    for config in (EXPERT_PICK, MIX):
        full = {**dict(result.template.default_config()), **config}
        assert space.rejection(full) is None, (config, space.rejection(full))


@pytest.mark.parametrize("spelling", ["folder", "second"])
def test_host_bit_for_bit(spelling: str, tmp_path: Path,
                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER) if spelling == "folder" else \
        respelled(FOLDER, tmp_path / "src", SECOND)
    template = offline_template(kf).template
    configs = _configs(kf)
    ran = same_as_written(kf, template, configs, held_back_unseen19.host_source, tmp_path,
                          host_flags)
    assert ran == len(configs)


def test_a_shift_by_a_thread_dependent_term_is_not_a_shift(tmp_path: Path) -> None:
    """``+ threadIdx.y`` on the row's coordinate is no shift: the coordinate reads two
    thread indices and the family leaves the kernel (no register tile)."""
    source = SECOND.replace("int i1 = 1 + threadIdx.x", "int i1 = threadIdx.y % 2 + threadIdx.x")
    kf = respelled(FOLDER, tmp_path, source)
    try:
        result = offline_template(kf)
    except TemplateError:  # nothing lifted at all is also "no register tile"
        return
    assert not {p.name for p in result.lifted.params} >= KNOBS, result.notes


#: A 0-based product whose row is shifted by a kernel scalar (``row0``): the same mapping.
SHIFTED_BY_SCALAR = """
__global__ void mm_window(const float* A, const float* B, float* C, int M, int N, int K,
                          int row0) {
  int col = threadIdx.x + blockIdx.x * 16;
  int row = blockIdx.y * 16 + threadIdx.y - row0;
  if (col >= N || row >= M) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = acc;
}
"""


def _lift_window(source: str) -> set[str]:
    lifted = lift_kernel(source, entry="mm_window", grid=["ceil_div(N, 16)", "ceil_div(M, 16)"],
                         block=["16", "16"],
                         scalars={"M": "M", "N": "N", "K": "K", "row0": "0"})
    return {p.name for p in lifted.params}


def test_a_shift_by_a_scalar_is_read_and_one_the_kernel_writes_is_not() -> None:
    """``- row0`` is the same for every thread: the register tile is lifted. With ``row0``
    reassigned in the loop (each virtual thread's coordinate is recomputed where it is used,
    and would read the new value) the coordinate is not read as a shift."""
    assert _lift_window(SHIFTED_BY_SCALAR) >= KNOBS
    written = SHIFTED_BY_SCALAR.replace("B[k * N + col];", "B[k * N + col], row0 = 0;")
    assert not _lift_window(written) >= KNOBS
