"""First contact with held-back set 15's tiled A^T B (issue 28):
benchmarks/corpus_compute_unseen15/gemm_atb_tiled walks its K tiles with ``int t0 = 0; do {
...; t0 += TILE; } while (t0 < d.k);``. The register tile reads a ``for``/``while`` loop over
tiles and refused the do-while (its first pass runs before the test, line 24), so the lift
had only TUNED_TILE: 1.14x on the H100 against the expert's 2.89x (BM 64, BN 64, BK 32, TM
4, TN 4, PAD 1).

workbench/templater/loop_forms_open.py now reads a counted ``do`` loop whose first test is
not known (a bound that is a kernel argument) as ``for (int t0 = 0; t0 == 0 || (t0 < d.k);
t0 += TILE)``: the same program, the first pass kept whatever the bound (the variable starts
at a constant and moves by a nonzero constant, so it holds its start on the first pass only).
The register tile then reads the loop as any other loop over tiles.

Pure: the folder's lift and a second spelling (no struct, if/else stores, ``base = base +
BS``) gain BM, BN, BK, TM, TN with the first-pass test in the rewritten loop; do loops the
rule cannot read (a start that is not a constant, a step that is not a nonzero constant,
a test of a value the loop computes) stay refused with their line; tests/
test_templater_spellings_v1.py's do-while counting stages (``t * T < K``) lifts too. Host
(g++): the folder's lift and the spelling at the default, the expert's pick in the lift's
knobs and the all-ends configs against the kernel as written, bit for bit.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen15
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen15.SET.root / "gemm_atb_tiled"
KNOBS = ("BM", "BN", "BK", "TM", "TN", "VEC")
#: The expert's H100 pick (BM 64, BN 64, BK 32, TM 4, TN 4) in the lift's knobs, float4
#: loads on; the 37 x 29 x 45 check shape is a multiple of none of its tiles.
MIXES = [{"BM": 64, "BN": 64, "BK": 32, "TM": 4, "TN": 4, "VEC": 4}]


#: The same product by another hand: no struct, a macro BS, the thread indices spelled out,
#: if/else tile stores, the tile base stepped as ``base = base + BS``.
SPELLING = """#define BS 16

extern "C" __global__ void gemm_atb_tiled(float* c, const float* a, const float* b, int m,
                                          int n, int k) {
  __shared__ float sa[BS][BS + 1];
  __shared__ float sb[BS][BS + 1];
  int i = blockIdx.y * BS + threadIdx.y;
  int j = blockIdx.x * BS + threadIdx.x;
  float sum = 0.0f;
  int base = 0;
  do {
    int kk = base + threadIdx.y;
    int am = blockIdx.y * BS + threadIdx.x;
    if (kk < k && am < m) sa[threadIdx.y][threadIdx.x] = a[kk * m + am];
    else sa[threadIdx.y][threadIdx.x] = 0.0f;
    if (kk < k && j < n) sb[threadIdx.y][threadIdx.x] = b[kk * n + j];
    else sb[threadIdx.y][threadIdx.x] = 0.0f;
    __syncthreads();
    for (int s = 0; s < BS; s++) sum += sa[s][threadIdx.y] * sb[s][threadIdx.x];
    __syncthreads();
    base = base + BS;
  } while (base < k);
  if (i < m && j < n) c[i * n + j] = sum;
}
"""


def _lift(source: str) -> tuple[list[str], tuple[str, ...], str]:
    lifted = lift_kernel(source, entry="gemm_atb_tiled", grid=["ceil_div(n, 16)",
                         "ceil_div(m, 16)"], block=["16", "16"],
                         scalars={"m": "m", "n": "n", "k": "k"})
    return [p.name for p in lifted.params], lifted.notes, lifted.source


def test_the_folder_lift_gains_the_register_tile() -> None:
    lifted = offline_template(load_kernel_folder(FOLDER)).lifted
    assert tuple(p.name for p in lifted.params) == KNOBS, lifted.notes
    assert "for (int t0 = 0; t0 == 0 || (t0 < d.k); t0 += BK) {" in lifted.source
    assert "4 * BK * BM + 4 * BK * BN <= 49152" in lifted.constraints, lifted.constraints


def test_the_spelling_gains_the_register_tile() -> None:
    names, notes, source = _lift(SPELLING)
    assert tuple(names) == KNOBS, notes
    assert "for (int base = 0; base == 0 || (base < k); base = base + BK) {" in source


@pytest.mark.parametrize(("old", "new"), [
    ("int base = 0;", "int base = blockIdx.z * BS;"),  # a start that is not a constant
    ("base = base + BS;", "base = base + k / 4;"),  # a step that may be 0
    ("base = base + BS;", "base = base * 2 + BS;"),  # not a step
    ("while (base < k);", "while (base < k && sum < 1e30f);"),  # a value the loop computes
], ids=["start-not-constant", "step-not-constant", "not-a-step", "not-a-count"])
def test_do_loops_the_rule_cannot_read_stay_refused(old: str, new: str) -> None:
    assert old in SPELLING
    names, notes, _ = _lift(SPELLING.replace(old, new))
    assert "BM" not in names
    assert any(n.startswith("REGISTER_TILE: not applied: the walk over the shared tiles is a "
                            "do-while") and "(line 11)" in n for n in notes), notes


def _same_outputs(kf: KernelFolder, tmp_path: Path, flags: tuple[str, ...]) -> int:
    template = offline_template(kf).template
    assert tuple(template.param_names) == KNOBS
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), MIXES)
    return same_as_written(kf, template, configs, held_back_unseen15.SET.host_source, tmp_path,
                           flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    assert _same_outputs(load_kernel_folder(FOLDER), tmp_path, host_flags) >= 3


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_spelling_computes_as_written(tmp_path: Path,
                                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", SPELLING)
    assert _same_outputs(kf, tmp_path, host_flags) >= 3
