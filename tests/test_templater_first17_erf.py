"""First contact with held-back set 17's erf series (issue 28):
benchmarks/corpus_compute_unseen17/erf_series_f64 sums 64 terms of erf's Maclaurin series in
double in a ``__device__`` helper (``while (k < TERMS) { sum += term / (2 * k + 1); ++k;
term *= -x2 / k; }``). The lift had BLOCK_THREADS, ITEMS_PER_THREAD and MIN_BLOCKS_PER_SM
(H200: 1.03x against the expert's 4.41x): FAST_DIV is fp32 only, and TABLE's reciprocal
table reads the kernel's body only and a series of terms >= 0 (this one alternates).
workbench/templater/ilp_rcp_counter.py: RCP, a double division by a function of its loop's
counter as a multiply by the reciprocal (a constant where the loop is unrolled whole), and
TERM_UNROLL on that loop where its trips are known.
Pure: the folder's lift and a second spelling (a counted ``for`` in the kernel's body, a cast
divisor, the dividend a product) gain RCP; the folder's TERM_UNROLL reaches the whole 64
trips; a division the rule must not touch (a float, a divisor reading data) stays. Host
(g++): the folder's lift and the spelling's at the default bit for bit, and at RCP = 1 (the
expert's pick in the lift's knobs, a mix, the all-ends corners under
WORKBENCH_FULL_MATRIX=1) within the folder's tolerance of the kernel as written.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen17
import numpy as np
import pytest
from held_back_harness import BENCHMARKS, respelled
from helpers_templater import FULL_MATRIX, end_configs, needs_gxx
from test_corpus_unseen3 import (
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen17.SET.root / "erf_series_f64"
KNOBS = ("BLOCK_THREADS", "ITEMS_PER_THREAD", "RCP", "TERM_UNROLL", "MIN_BLOCKS_PER_SM")
#: The expert's H200 pick in the lift's knobs (128 threads, 4 items, the term loop unrolled
#: by 2, reciprocals), then 2 items of 64 threads over the whole loop unrolled.
MIXES = [{"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "RCP": 1, "TERM_UNROLL": 2},
         {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2, "RCP": 1, "TERM_UNROLL": 64}]


#: The same series by another hand: a counted ``for`` from 1 to 64 in the kernel's body,
#: the odd divisor cast to double, the next term's dividend a product, an early return.
SPELLING = """#include <cstdint>
constexpr int NTERMS = 64;
extern "C" __global__ void erf_series_f64(float* out, const float* in, int64_t n) {
  int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= n) return;
  const float v = in[t];
  double xd = (double)v;
  double xx = xd * xd;
  double p = xd, acc = 0.0;
  for (int j = 1; j <= NTERMS; j++) {
    acc += p / (double)(2 * j - 1);
    p = p * (-xx) / j;
  }
  float r = (float)(1.1283791670955126 * acc);
  out[t] = v >= 3.5f ? 1.0f : (v <= -3.5f ? -1.0f : r);
}
"""


def _lift(source: str) -> tuple[list[str], tuple[str, ...], str]:
    lifted = lift_kernel(source, entry="erf_series_f64", grid=["ceil_div(n, 128)"],
                         block=["128"], scalars={"n": "n"})
    return [p.name for p in lifted.params], lifted.notes, lifted.source


def test_the_folder_lift_multiplies_by_reciprocals() -> None:
    lifted = offline_template(load_kernel_folder(FOLDER)).lifted
    assert tuple(p.name for p in lifted.params) == KNOBS, lifted.notes
    assert "sum += WB_RCP(term, (2 * k + 1));" in lifted.source
    assert "term *= WB_RCP(-x2, k);" in lifted.source
    unroll = lifted.source.index("#pragma unroll (wb_term_unroll)")
    assert unroll < lifted.source.index("while (k < TERMS)") < lifted.source.index("WB_RCP(term")
    spec = next(p.spec for p in lifted.params if p.name == "TERM_UNROLL")
    assert spec["values"] == [0, 1, 2, 4, 8, 64] and spec["default"] == 0
    assert any(n.startswith("RCP: applied: 2 double division(s) by a function of a loop "
                            "counter") and n.endswith("(line 17)") for n in lifted.notes)


def test_the_spelling_multiplies_by_reciprocals_the_items_share() -> None:
    names, notes, source = _lift(SPELLING)
    assert "RCP" in names and "UNROLL" in names, notes
    assert "TERM_UNROLL" not in names  # the items' shared loop has ILP's UNROLL already
    assert "acc[wb_it] += WB_RCP(p[wb_it], (double)(2 * j - 1));" in source
    assert "p[wb_it] = WB_RCP(p[wb_it] * (-xx[wb_it]), j);" in source
    assert any(n.startswith("TERM_UNROLL: not applied: ") and "(UNROLL)" in n for n in notes)


#: The series in float (FAST_DIV's divisions), and a divisor that reads memory.
OTHERS = {
    "float": [("double xx = xd * xd;", "float xx = v * v;"),
              ("double p = xd, acc = 0.0;", "float p = v; double acc = 0.0;"),
              ("acc += p / (double)(2 * j - 1);", "acc += p / (2 * j - 1);")],
    "data-divisor": [("acc += p / (double)(2 * j - 1);", "acc += p / (double)(j + in[j]);"),
                     ("p = p * (-xx) / j;", "p = p * (-xx) / (j + in[j]);")],
}


@pytest.mark.parametrize("other", sorted(OTHERS))
def test_other_divisions_stay(other: str) -> None:
    """A float division and a divisor reading memory are not a counter's double ones."""
    source = SPELLING
    for old, new in OTHERS[other]:
        assert old in source
        source = source.replace(old, new)
    names, notes, text = _lift(source)
    assert "WB_RCP" not in text and "RCP" not in names, notes
    assert "ITEMS_PER_THREAD" in names


def _checked(kf: KernelFolder, work: Path, flags: tuple[str, ...]) -> list[float]:
    """Runs the lift of ``kf`` at its default (bit for bit with the kernel as written) and at
    MIXES (and every all-ends config under WORKBENCH_FULL_MATRIX=1; the last otherwise),
    each within the folder's tolerance; the largest |lift - as written| at each."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    default = dict(template.default_config())
    ends = end_configs(template, env)
    mixes = [{**default, **{k: v for k, v in m.items() if k in template.param_names}}
             for m in MIXES]
    configs = [default, *mixes, *(ends if FULL_MATRIX else ends[-1:])]
    for config in configs:
        assert template.space(env).rejection(config) is None, config
    inputs = _inputs(kf)
    want = _run(kf, kf.baseline.render({}, "fp32").source, kf.baseline.launch_for({}, env),
                inputs, work / "plain", flags)["out"]
    runs = [(template.render(c, "fp32").source, template.launch_for(c, env)) for c in configs]
    tol = kf.tolerances["fp32"]
    moved = []
    for config, got in zip(configs, folder_runs(kf, runs, inputs, work / "lift"), strict=True):
        out = got["out"]
        assert not np.isnan(out).any(), f"{config}: an element no thread wrote"
        if not config.get("RCP"):
            assert (out == want).all(), f"{config}: differs from the kernel as written"
        assert np.allclose(out, want, rtol=tol.rtol, atol=tol.atol), \
            (config, float(np.abs(out - want).max()))
        moved.append(float(np.abs(out.astype(np.float64) - want).max()))
    return moved


@needs_gxx
def test_the_folder_lift_on_the_host(tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    moved = _checked(load_kernel_folder(FOLDER), tmp_path, host_flags)
    assert moved[0] == 0.0
    # RCP = 1 moves the float result by at most an ulp of float near 1 (~1.2e-7), the
    # tolerance's atol is 1e-6
    assert max(moved) <= 2.4e-7, moved


@needs_gxx
def test_the_spelling_on_the_host(tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelled", SPELLING)
    moved = _checked(kf, tmp_path, host_flags)
    assert max(moved) <= 2.4e-7, moved



def test_a_division_the_table_owns_stays_the_tables() -> None:
    """bessel_i0_series' ``term *= q / ((double)k * (double)k)`` of a do-while counter is
    TABLE's (a table entry of 1 / k^2): RCP leaves it."""
    kf = load_kernel_folder(BENCHMARKS / "corpus_compute_unseen13" / "bessel_i0_series")
    lifted = offline_template(kf).lifted
    names = [p.name for p in lifted.params]
    assert "TABLE" in names and "RCP" not in names, lifted.notes
    assert "WB_RCP" not in lifted.source
