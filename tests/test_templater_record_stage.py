"""STAGE (workbench/templater/record_stage.py): a block's per-thread records moved through
shared memory with coalesced copies, loads at the top and stores after a barrier at the end
(issue 28; the winning knob of the experts of set 12's expm4_taylor and set 11's
sym3_jacobi, each thread's 16 or 6 floats read R apart across a warp as written).

Pure: the knob, its constraint and the rewritten accesses of the folders' kernels and of
other spellings (direct subscripts ``A[16 * b + 4 * r + c]`` under ``if (b < nb) {..}``; a
local pointer ``p = m + 6 * i`` under ``if (i >= n) return;`` read into doubles); refusals
with their reasons: a column that is not inside the record for every value (a
thread-dependent offset), another thread's record, a record width that is no compile-time
constant, an output written under a condition, one whose stores leave columns unwritten, an
exit before an output's stores, an output read as well as written (``+=``). Host (g++, the
cooperative runtime: shared memory and barriers as on the GPU): each lift at its default,
its all-ends configs and mixes (STAGE with 1, 2 and 8 items, a block partly past the end)
against the kernel as written, bit for bit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen11
import held_back_unseen12
import numpy as np
import pytest
from held_back_harness import prepended, respelled
from helpers_templater import end_configs, host_sample, needs_gxx
from test_corpus_unseen3 import (
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.cuda_source import parse_cuda
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.analysis import integer_macros
from workbench.templater.plan import Plan
from workbench.templater.record_stage import apply_record_stage
from workbench.templater.semantic import lift_kernel

EXPM4 = held_back_unseen12.ROOT / "expm4_taylor"
SYM3 = held_back_unseen11.ROOT / "sym3_jacobi"
#: The host forms of the CUDA built-ins the lifts use beyond the sets' prelude (FAST_DIV's
#: __fdividef the exact division, so a config's outputs match bit for bit).
HOST = prepended("#define __fdividef(a, b) ((a) / (b))\n")

#: The sym3 folder's shapes (m [n, 6] in, w [n, 3] out) in another spelling: the guard an
#: early return on ``i``, the record read through a local pointer in a loop, the arithmetic
#: in double (the eigenvalues of the symmetric matrix by the trigonometric closed form).
SYM3_DOUBLE = """extern "C" __global__ void sym3_jacobi(float* w, const float* m, int n) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i >= n) return;
  const float* p = m + 6 * i;
  double d[6];
  for (int c = 0; c < 6; ++c) d[c] = (double)p[c];
  const double q = (d[0] + d[3] + d[5]) / 3.0;
  const double off = d[1] * d[1] + d[2] * d[2] + d[4] * d[4];
  const double a = d[0] - q, b = d[3] - q, c = d[5] - q;
  const double s = sqrt((a * a + b * b + c * c + 2.0 * off) / 6.0);
  double l0 = q, l1 = q, l2 = q;
  if (s > 0.0) {
    const double det = (a * (b * c - d[4] * d[4]) - d[1] * (d[1] * c - d[4] * d[2]) +
                        d[2] * (d[1] * d[4] - b * d[2])) / (s * s * s);
    const double r = fmin(1.0, fmax(-1.0, det / 2.0));
    const double phi = acos(r) / 3.0;
    l2 = q + 2.0 * s * cos(phi);
    l0 = q + 2.0 * s * cos(phi + 2.0943951023931953);
    l1 = 3.0 * q - l0 - l2;
  }
  w[3 * i] = (float)l0;
  w[3 * i + 1] = (float)l1;
  w[3 * i + 2] = (float)l2;
}
"""

#: expm4's folder spelt with direct subscripts of the record and a wrapping guard.
EXPM4_DIRECT = """extern "C" __global__ void expm4_taylor(float* E, const float* A, int nb) {
  int b = threadIdx.x + blockDim.x * blockIdx.x;
  if (b < nb) {
    float x[4][4], t[4][4], acc[4][4];
    for (int r = 0; r < 4; r++)
      for (int c = 0; c < 4; c++) {
        x[r][c] = A[16 * b + 4 * r + c];
        t[r][c] = r == c ? 1.0f : 0.0f;
        acc[r][c] = t[r][c];
      }
    for (int k = 1; k <= 12; k++) {
      float p[4][4];
      for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
          p[r][c] = (t[r][0] * x[0][c] + t[r][1] * x[1][c] + t[r][2] * x[2][c] +
                     t[r][3] * x[3][c]) / k;
      for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) {
          t[r][c] = p[r][c];
          acc[r][c] += p[r][c];
        }
    }
    for (int r = 0; r < 4; r++)
      for (int c = 0; c < 4; c++) E[16 * b + 4 * r + c] = acc[r][c];
  }
}
"""


#: The direct spelling reading its input again, transposed, in the loop of its stores: the
#: output gets rows of its own (in the input's, element (c, r) would be read after the store
#: of (r, c) overwrote it, for c < r).
EXPM4_REREAD = EXPM4_DIRECT.replace("E[16 * b + 4 * r + c] = acc[r][c];",
                                    "E[16 * b + 4 * r + c] = acc[r][c] - A[16 * b + 4 * c + r];")


def test_an_input_read_after_the_outputs_first_store_keeps_its_own_rows() -> None:
    lifted = _lift(EXPM4_REREAD)
    assert "__shared__ float wb_st_A[" in lifted.source
    assert "__shared__ float wb_st_E[" in lifted.source
    assert "STAGE == 0 or (BLOCK_THREADS * ITEMS_PER_THREAD) * (68 + 68) <= 49152" in \
        lifted.constraints


def _lift(source: str, entry: str = "expm4_taylor", bound: str = "nb") -> Any:
    return lift_kernel(source, entry=entry, grid=[f"ceil_div({bound}, 128)"], block=["128"],
                       scalars={bound: bound})


def _stage_notes(notes: Any) -> list[str]:
    return [n for n in notes if n.startswith("STAGE: ")]


def test_expm4_taylor_stages_its_matrices() -> None:
    lifted = offline_template(load_kernel_folder(EXPM4)).lifted
    assert "STAGE" in {p.name for p in lifted.params}, lifted.notes
    body = lifted.source.split("expm4_taylor(float* E", 1)[1]
    assert "__shared__ float wb_st_A[BLOCK_THREADS * ITEMS_PER_THREAD][17];" in body
    # the staging comes before the first exit; each item's pointer reads the staged row
    assert body.index("__syncthreads();") < body.index("continue; }  // this item is done")
    assert "src[wb_it] = WB_RECORD(wb_st_A, A + (size_t)b[wb_it] * 16, b[wb_it]);" in body
    # the output's records too: written into the staged rows, stored after a barrier
    # in the input's rows (one buffer, as the expert's): each thread has read its matrix
    # whole before it writes its exponential
    assert "dst[wb_it] = WB_RECORD(wb_st_A, E + (size_t)b[wb_it] * 16, b[wb_it]);" in body
    assert body.index("for (int e = 0; e < 16; ++e) dst[wb_it][e]") < \
        body.rindex("__syncthreads();") < body.index("E[wb_g] = wb_st_A[wb_f / 16][wb_f % 16];")
    assert "STAGE == 0 or (BLOCK_THREADS * ITEMS_PER_THREAD) * (68) <= 49152" in \
        lifted.constraints
    assert "wb_st_E" not in body


def test_sym3_jacobi_stages_its_upper_triangles() -> None:
    lifted = offline_template(load_kernel_folder(SYM3)).lifted
    assert "STAGE == 0 or (BLOCK_THREADS * ITEMS_PER_THREAD) * (12 + 28) <= 49152" in \
        lifted.constraints, lifted.notes
    assert "__shared__ float wb_st_m[BLOCK_THREADS * ITEMS_PER_THREAD][7];" in lifted.source
    # its three eigenvalues by direct subscripts, column 0 spelt 3 * e
    assert "WB_RECORD_AT(wb_st_w, w[3 * e[wb_it]], e[wb_it], 3, 3 * e[wb_it]) = l0[wb_it];" \
        in lifted.source


def test_direct_subscripts_and_a_local_pointer_in_double_spellings() -> None:
    direct = _lift(EXPM4_DIRECT)
    assert "x[wb_it][r][c] = WB_RECORD_AT(wb_st_A, A[16 * b[wb_it] + 4 * r + c], b[wb_it], " \
        "16, 16 * b[wb_it] + 4 * r + c);" in direct.source, direct.notes
    pointer = _lift(SYM3_DOUBLE, "sym3_jacobi", "n")
    assert "__shared__ float wb_st_m[" in pointer.source, pointer.notes
    assert "WB_RECORD(wb_st_m, m + 6 * i" in pointer.source


#: (old text, new text, the reason noted, the pointers still staged)
REFUSALS = {
    "thread_offset": ("A[16 * b + 4 * r + c]", "A[16 * b + (4 * r + c + threadIdx.x) % 16]",
                      "is not inside [0, 16) for every value (a thread-dependent offset other "
                      "than the index's)", {"E"}),
    "other_record": ("A[16 * b + 4 * r + c]", "A[16 * (b + 1) + 4 * r + c]",
                     "is not b * R plus a column", {"E"}),
    "runtime_width": ("A[16 * b + 4 * r + c]", "A[nb * b + 4 * r + c]",
                      "R = `nb` is not a compile-time constant", {"E"}),
    "conditional_output": ("E[16 * b + 4 * r + c] = acc[r][c];",
                           "if (acc[r][c] > 0.0f) E[16 * b + 4 * r + c] = acc[r][c];",
                           "E (line 24) is written conditionally", {"A"}),
    "uncovered_output": ("for (int r = 0; r < 4; r++)\n      for (int c = 0; c < 4; c++) E[",
                         "for (int r = 0; r < 4; r++)\n      for (int c = 0; c < 2; c++) E[",
                         "E: its stores leave columns [2, 3, 6, 7, 10, 11, 14, 15] of the 16 "
                         "unwritten", {"A"}),
    "exit_before_stores": ("    for (int r = 0; r < 4; r++)\n      for (int c = 0; c < 4; c++) E[",
                           "    if (acc[0][0] != acc[0][0]) return;\n"
                           "    for (int r = 0; r < 4; r++)\n      for (int c = 0; c < 4; c++) E[",
                           "E: the exit at line 23 may leave its stores undone", {"A"}),
    "output_read": ("E[16 * b + 4 * r + c] = acc[r][c];", "E[16 * b + 4 * r + c] += acc[r][c];",
                    "is not assigned alone", {"A"}),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refusals_carry_their_line_and_reason(case: str) -> None:
    old, new, reason, staged = REFUSALS[case]
    source = EXPM4_DIRECT.replace(old, new)
    assert source != EXPM4_DIRECT
    lifted = _lift(source)
    notes = _stage_notes(lifted.notes)
    assert any(reason in n for n in notes), notes
    assert {p for p in "AE" if f"__shared__ float wb_st_{p}[" in lifted.source} == staged, \
        notes


#: Mixes over the default: STAGE with 32 threads of 2 items, 96 of 2 with a register cap
#: (the check shape's 301 records in two blocks, the second partly past the end), 32 of 8.
MIXES = [{"BLOCK_THREADS": 32, "ITEMS_PER_THREAD": 2, "STAGE": 1, "MIN_BLOCKS_PER_SM": 1},
         {"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 2, "STAGE": 1, "MIN_BLOCKS_PER_SM": 4},
         {"BLOCK_THREADS": 32, "ITEMS_PER_THREAD": 8, "STAGE": 1}]


def _checked(template: Any, env: dict[str, Any]) -> list[dict[str, Any]]:
    """The default, every all-ends config and the mixes (those the space has), each once:
    all under ``WORKBENCH_FULL_MATRIX=1``, else the first and the last (a staged mix)."""
    space = template.space(env)
    default = dict(template.default_config())
    mixes = [{**default, **{k: v for k, v in m.items() if k in default}} for m in MIXES]
    out: list[dict[str, Any]] = []
    for config in [default, *end_configs(template, env), *mixes]:
        assert space.rejection(config) is None, (config, space.rejection(config))
        if config not in out:
            out.append(config)
    assert any(c.get("STAGE") == 1 for c in out)
    return host_sample(out)


def _same_results(kf: KernelFolder, source: str, output: str, tmp_path: Path) -> None:
    template = offline_template(kf).template
    assert "STAGE" in template.param_names
    env = kf.env(kf.check_shape, "fp32")
    configs = _checked(template, env)
    inputs = _inputs(kf)
    want = _run(kf, HOST(source), kf.baseline.launch_for({}, env), inputs, tmp_path / "plain")[output]
    assert np.isfinite(want).all()  # every record written
    runs = [(HOST(template.render(c, "fp32").source), template.launch_for(c, env)) for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        assert np.array_equal(got[output], want), config


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("spelling", ["expm4_folder", "expm4_direct", "expm4_reread",
                                      "sym3_double"])
def test_staged_lifts_compute_what_the_kernel_as_written_does(
        spelling: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    if spelling == "expm4_folder":
        kf = load_kernel_folder(EXPM4)
        _same_results(kf, kf.baseline.render({}, "fp32").source, "E", tmp_path)
    elif spelling in ("expm4_direct", "expm4_reread"):
        source = EXPM4_DIRECT if spelling == "expm4_direct" else EXPM4_REREAD
        kf = respelled(EXPM4, tmp_path / "spelling", source)
        _same_results(kf, source, "E", tmp_path / "runs")
    else:
        kf = respelled(SYM3, tmp_path / "spelling", SYM3_DOUBLE)
        _same_results(kf, SYM3_DOUBLE, "w", tmp_path / "runs")


#: A record width named by a constexpr, the output's columns through a loop.
CONSTEXPR_WIDTH = """constexpr int REC = 6;
extern "C" __global__ void k(float* w, const float* m, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float* p = m + REC * i;
  float s = 0.0f;
  for (int c = 0; c < REC; ++c) s += p[c] * p[c];
  for (int c = 0; c < 3; ++c) w[3 * i + c] = s * c;
}
"""


def test_a_constexpr_width_stages_and_a_return_left_keeps_the_stores_direct() -> None:
    lifted = lift_kernel(CONSTEXPR_WIDTH, entry="k", grid=["ceil_div(n, 128)"],
                         block=["128"], scalars={"n": "n"})
    assert "__shared__ float wb_st_m[BLOCK_THREADS * ITEMS_PER_THREAD][7];" in lifted.source
    assert "__shared__ float wb_st_w[BLOCK_THREADS * ITEMS_PER_THREAD][3];" in lifted.source
    # STAGE alone on the kernel as written (no items: the guard's return is still there)
    source = parse_cuda(CONSTEXPR_WIDTH, "k.cu")
    plan = Plan(source, source.kernel("k"), grid=["ceil_div(n, BLOCK)"], block=["BLOCK"],
                scalars={"n": "n"})
    plan.add_param("BLOCK", {"kind": "choice", "values": [128], "default": 128}, "test")
    with integer_macros({"REC": 6}):
        assert apply_record_stage(plan)
    notes = [str(f) for f in plan.findings]
    assert any("outputs not staged: a return is left in the body" in n for n in notes), notes
    rendered = plan.rw.render()
    assert "__shared__ float wb_st_m[BLOCK][7];" in rendered
    assert "wb_st_w" not in rendered and "w[3 * i + c] = s * c;" in rendered
