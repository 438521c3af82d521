"""First contact with held-back set 17's cube roots (issue 28):
benchmarks/corpus_compute_unseen17/cbrt_newton_f64 steps ``y = NEWTON_STEP(y, x);`` 40 times,
the step a function-like macro whose body writes each parameter in parentheses, so its
expansion opens ``((y) - (...) / (...))``. tree-sitter reads ``(y) - d`` as a cast of ``-d`` to
a type ``y``, so the items' rewrite gave every read of ``y`` its item but that one and the
lift did not compile (nvcc: syntax). workbench/templater/value_casts.py writes such a cast
as the variable (the file declares ``y`` a variable and never a type) before the analysis.
The expert's RCP (one reciprocal of ``3 y^2`` and a multiply) is
workbench/templater/ilp_div_rcp.py's DIV_RCP: a double division in a loop by a value the
loop recomputes, where every store is a float.
Pure: the folder's lift and a second spelling (another macro, its parameters named
otherwise, no outer parentheses, a ``for`` with an int counter, the work under ``if (t <
n)``, the zero selected at the store) read every ``y`` per item and gain DIV_RCP; a
typedef'd or struct-named name keeps its cast; a double store refuses DIV_RCP with its
line. nvcc: the lift compiles at its default and at the expert's pick spelled in its knobs.
Host (g++): both lifts at the default and the expert's pick (DIV_RCP 1) bit for bit
against the kernel as written (a mix and the all-ends corners too under
WORKBENCH_FULL_MATRIX=1).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import held_back_unseen17
import pytest
from held_back_harness import respelled, same_as_written
from helpers_nvcc import needs_nvcc
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.semantic import lift_kernel
from workbench.templater.value_casts import value_casts

FOLDER = held_back_unseen17.SET.root / "cbrt_newton_f64"
KNOBS = ("BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "DIV_RCP", "MIN_BLOCKS_PER_SM")
#: The expert's H200 pick spelled in the lift's knobs (512 threads, one item, 8 steps a
#: trip, the reciprocal), then two items over 192 threads (8 blocks at the check shape's
#: 3001, the last partly), the whole 40 steps unrolled, dividing, a minimum of 2 blocks.
MIXES = [{"BLOCK_THREADS": 512, "ITEMS_PER_THREAD": 1, "UNROLL": 8, "DIV_RCP": 1},
         {"BLOCK_THREADS": 192, "ITEMS_PER_THREAD": 2, "UNROLL": 40, "DIV_RCP": 0,
          "MIN_BLOCKS_PER_SM": 2}]


#: The same root by another hand: a macro whose parameters are named otherwise and whose
#: body has no outer parentheses (``(g) - ...`` at the start of the assignment's value), a
#: ``for`` with an int counter, the work under ``if (t < n)``, the sign by a multiply and the
#: zero by a select at the store (its steps run, their NaN unread).
SPELLING = """#define ITERS 40
#define CUBE_NEWTON(g, a) (g) - ((g) * (g) * (g) - (a)) / (3.0 * (g) * (g))
extern "C" __global__ void cbrt_newton_f64(float* out, const float* in, unsigned n) {
  unsigned t = threadIdx.x + blockIdx.x * blockDim.x;
  if (t < n) {
    double v = (double)in[t];
    double s = v < 0.0 ? -1.0 : 1.0;
    double a = v * s;
    double r = 1.0 + a / 3.0;
    for (int k = 0; k < ITERS; k++) {
      r = CUBE_NEWTON(r, a);
    }
    out[t] = a == 0.0 ? 0.0f : (float)(s * r);
  }
}
"""


def _lift(source: str) -> tuple[list[str], tuple[str, ...], str]:
    lifted = lift_kernel(source, entry="cbrt_newton_f64", grid=["ceil_div(n, 256)"],
                         block=["256"], scalars={"n": "n"})
    return [p.name for p in lifted.params], lifted.notes, lifted.source


def test_the_folder_lift_reads_every_y_per_item() -> None:
    lifted = offline_template(load_kernel_folder(FOLDER)).lifted
    assert tuple(p.name for p in lifted.params) == KNOBS, lifted.notes
    assert "y[wb_it] = (y[wb_it] - WB_DRCP(((y[wb_it]) * (y[wb_it]) * (y[wb_it]) - " \
        "(x[wb_it])), (3.0 * (y[wb_it]) * (y[wb_it]))));" in lifted.source
    assert "(y)" not in lifted.source.split("extern", 1)[1]


def test_the_spelling_reads_every_r_per_item() -> None:
    names, notes, source = _lift(SPELLING)
    assert {"ITEMS_PER_THREAD", "UNROLL", "DIV_RCP"} <= set(names), notes
    assert "r[wb_it] = r[wb_it] - WB_DRCP(((r[wb_it]) * (r[wb_it]) * (r[wb_it]) - " \
        "(a[wb_it])), (3.0 * (r[wb_it]) * (r[wb_it])));" in source


def test_a_reciprocal_as_written_gets_no_knob() -> None:
    """``* (1.0 / d)`` is the reciprocal already: DIV_RCP would multiply it by one."""
    names, notes, _ = _lift(SPELLING.replace(
        "(g) - ((g) * (g) * (g) - (a)) / (3.0 * (g) * (g))",
        "(g) - ((g) * (g) * (g) - (a)) * (1.0 / (3.0 * (g) * (g)))"))
    assert "ITEMS_PER_THREAD" in names and "DIV_RCP" not in names, notes


def test_a_double_store_keeps_the_division() -> None:
    """Stored as double, the reciprocal's extra rounding is not hidden by a float's:
    refused with the line of the store."""
    source = SPELLING.replace("float* out", "double* out").replace(
        "0.0f : (float)(s * r)", "0.0 : s * r")
    names, notes, text = _lift(source)
    assert "ITEMS_PER_THREAD" in names and "DIV_RCP" not in names, notes
    assert "WB_DRCP" not in text
    assert [n for n in notes if n.startswith("DIV_RCP")] == [
        "DIV_RCP: not applied: a double division by a value the loop recomputes as a "
        "reciprocal: `out[t] = a == 0.0 ? 0.0 : s * r` stores other than a float (the rule "
        "covers a double series rounded to float) (line 13)"]


def _rewritten(source: str) -> str:
    return value_casts(InlinedSource(source, "k.cu"), "k").text


def test_a_cast_to_a_type_stays_a_cast() -> None:
    """``real`` is a typedef: ``(real) - ((x) * (x))`` is a cast, as the compiler reads it;
    the same with ``x`` (tree-sitter reads a cast to a type ``x`` there too) reads the
    variable ``x`` and loses its parentheses."""
    source = ("typedef double real;\n"
              "extern \"C\" __global__ void k(double* o, double x) {\n"
              "  o[0] = ((real) - ((x) * (x)) / (3.0 * (x)));\n"
              "  o[1] = ((x) - ((x) * (x)) / (3.0 * (x)));\n"
              "}\n")
    assert _rewritten(source) == source.replace("((x) - ((x) * (x))", "(x - ((x) * (x))")


def test_a_name_used_as_a_type_somewhere_stays_a_cast() -> None:
    """A parameter ``T`` beside a struct ``T`` elsewhere in the file: the name is not only
    a variable, so nothing is rewritten."""
    source = ("struct T { double v; };\n"
              "extern \"C\" __global__ void k(double* o, double T) {\n"
              "  o[0] = ((T) - ((T) * (T)) / 3.0);\n"
              "}\n")
    assert _rewritten(source) == source


@needs_nvcc
@pytest.mark.parametrize("config", [{}, MIXES[0]], ids=["default", "expert_pick"])
def test_the_folder_lift_compiles(tmp_path: Path, config: dict[str, int]) -> None:
    template = offline_template(load_kernel_folder(FOLDER)).template
    cu = tmp_path / "k.cu"
    cu.write_text(template.render({**template.default_config(), **config}, "fp32").source)
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(tmp_path / "k.cubin"), str(cu)],
                   check=True, capture_output=True)


def _same_outputs(kf: KernelFolder, tmp_path: Path, flags: tuple[str, ...]) -> int:
    template = offline_template(kf).template
    assert "ITEMS_PER_THREAD" in template.param_names
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, MIXES)
    if not FULL_MATRIX:  # the default and the expert's pick (the all-ends corners: slow)
        configs = configs[:2]
    return same_as_written(kf, template, configs, held_back_unseen17.SET.host_source,
                           tmp_path, flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    assert _same_outputs(load_kernel_folder(FOLDER), tmp_path, host_flags) >= 2


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_spelling_computes_as_written(tmp_path: Path,
                                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", SPELLING)
    assert _same_outputs(kf, tmp_path, host_flags) >= 2
