"""ANY_BRANCH (workbench/templater/ilp_any_branch.py): a loop's per-item ``if`` tested for all
the thread's items first, its item loop skipped when it holds for none.

Held-back set 18's besselj0_miller_f64 rescales its recurrence (``if (fabs(j) > 1e60) { j *=
1e-60; jp *= 1e-60; even *= 1e-60; }``) a few trips of sixty. nvcc if-converts the items' loop
of that ``if``: at the expert's pick (sm_90, four items) every trip has three double
multiplies and six selects an item for it beside the step's one multiply and one fma (the
expert's PAIR checks the rescale once every two orders instead, which is not the code's
rounding). With the knob the four tests are OR-ed and one branch skips the rescale's item
loop; the loop itself is the one as written, so every value is the code's bit for bit. Checked here: the folder's lift and another hand's (a float
recurrence counting up, the test negated, the ``if`` in one run with the step before it);
refusals with the line (an ``else``, a load in the condition); the host simulation bit for
bit at the default and the knob's mixes (the all-ends corners too under
WORKBENCH_FULL_MATRIX=1).
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen18
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template

BESSEL = held_back_unseen18.SET.root / "besselj0_miller_f64"


#: A two-term float recurrence by another hand: counting up, the rescale's test negated, the
#: ``if`` right after the step (one run of item statements with it), a helper for the start.
SPELLING = """#define STEPS 48
#define BIG 1.0e30f

__device__ __forceinline__ float start_of(float v) { return 0.5f + 0.25f * v; }

extern "C" __global__ void besselj0_miller_f64(float* __restrict__ out,
                                               const float* __restrict__ x, int n) {
  int e = blockDim.x * blockIdx.x + threadIdx.x;
  if (e >= n) return;
  const float a = x[e];
  float g = 1.0f, h = start_of(a), total = 0.0f;
  for (int s = 0; s < STEPS; s += 1) {
    const float nh = h * (a + 0.125f * (float)s) - g;
    g = h;
    h = nh;
    total = total + h;
    if (!(fabsf(h) <= BIG)) {
      g = g * 1.0e-30f;
      h = h * 1.0e-30f;
      total = total * 1.0e-30f;
    }
  }
  out[e] = h / (h + total);
}
"""

#: The expert's pick in the lift's knobs (128 threads, four items, the reciprocal) with the
#: rescale tested once; two items over 96 threads with the knob and the selects (3001 over
#: 192: sixteen blocks, the last partly); eight over 64 (3001 over 512: six, the last partly).
BESSEL_MIXES = [{"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "DIV_RCP": 1, "ANY_BRANCH": 1},
                {"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 2, "ANY_BRANCH": 1, "BRANCHLESS": 1}]
SPELLING_MIXES = [{"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 8, "ANY_BRANCH": 1}]


def _else(source: str) -> str:
    return source.replace("      total = total * 1.0e-30f;\n    }\n",
                          "      total = total * 1.0e-30f;\n    } else {\n      total += 1.0f;\n"
                          "    }\n")


def _loaded(source: str) -> str:
    return source.replace("if (!(fabsf(h) <= BIG))", "if (!(fabsf(h) <= x[e] * BIG))")


def _lift(kf: KernelFolder) -> tuple[list[str], tuple[str, ...], tuple[str, ...], str]:
    lifted = offline_template(kf).lifted
    return [p.name for p in lifted.params], lifted.notes, lifted.constraints, lifted.source


def test_the_bessel_rescale_is_tested_once_for_the_items() -> None:
    names, notes, constraints, source = _lift(load_kernel_folder(BESSEL))
    assert {"ITEMS_PER_THREAD", "ANY_BRANCH", "DIV_RCP"} <= set(names), notes
    assert "ITEMS_PER_THREAD > 1 or ANY_BRANCH == 0" in constraints
    assert "ANY_BRANCH: applied: `if (fabs(j) > 1.0e60)` tested for every item before its " \
        "item loop, which runs only when one holds (bit for bit: the loop as written) " \
        "(line 19)" in notes
    assert "wb_any = wb_any | (bool)(fabs(j[wb_it]) > 1.0e60);" in source
    # the parity test stays where it was: it is the same for every item
    assert "if (k % 2 == 0 && k > 0) {" in source


def test_another_hand_tests_its_rescale_once(tmp_path: Path) -> None:
    names, notes, constraints, source = _lift(respelled(BESSEL, tmp_path, SPELLING))
    assert {"ITEMS_PER_THREAD", "ANY_BRANCH"} <= set(names), notes
    assert "ITEMS_PER_THREAD > 1 or ANY_BRANCH == 0" in constraints
    assert "(bool)(!(fabsf(h[wb_it]) <= BIG));" in source
    # the step before the `if` keeps an item loop of its own, ahead of the flag's test
    step = source.index("total[wb_it] = total[wb_it] + h[wb_it];")
    assert step < source.index("bool wb_any = false;") < \
        source.index("if (!(fabsf(h[wb_it]) <= BIG)) {")


@pytest.mark.parametrize("edit, why", [
    (_else, "ANY_BRANCH: not applied: the items' `if` tested once: it has an `else` (the flag "
            "false would skip it) (line 17)"),
    (_loaded, "ANY_BRANCH: not applied: the items' `if` tested once: the condition loads "
              "`x[e]` (tested for an item that is done, it could fault) (line 17)"),
])
def test_what_the_flag_cannot_skip_is_refused(edit: object, why: str, tmp_path: Path) -> None:
    assert callable(edit)
    names, notes, _, source = _lift(respelled(BESSEL, tmp_path, edit(SPELLING)))
    assert "ITEMS_PER_THREAD" in names and "ANY_BRANCH" not in names, notes
    assert why in notes, notes
    assert "wb_any" not in source


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("which", ["folder", "spelling"])
def test_the_flag_computes_as_written(which: str, tmp_path: Path,
                                      host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(BESSEL) if which == "folder" else \
        respelled(BESSEL, tmp_path / "folders", SPELLING)
    mixes = BESSEL_MIXES if which == "folder" else SPELLING_MIXES
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), mixes)
    if not FULL_MATRIX:  # the default and the mixes (the all-ends corners: slow)
        configs = configs[:1 + len(mixes)]
    assert all(c["ANY_BRANCH"] == 1 for c in configs[1:1 + len(mixes)])
    assert same_as_written(kf, template, configs, lambda s: s, tmp_path, host_flags) == \
        len(configs)
