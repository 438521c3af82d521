"""Session 33: set 25's colebrook_newton_f64 takes a Newton step ``g / dg`` with ``dg = 1 + 2
b / (arg ln 10)``: two double divisions a step, where the expert's FAST takes one. DIV_FOLD
(:mod:`workbench.templater.ilp_div_fold`) folds a double ``p / (q ± r / s)`` (the sum
written in the divisor, or in a double local written once and read only there) into
``(p * s) / (q * s ± r)`` behind a knob whose default is the kernel as written.

Pure: which knobs lift for the corpus kernel and two respellings of the family
(tests/spellings_s33_newton/: Lambert W by Halley's method, the textbook step ``f / (f' - f
f'' / (2 f'))`` in the kernel's own loop, items interleaved; a smooth-pipe Newton solve in a
helper the lift inlines, its slope ``c / x + 1.0`` a local assigned once), the macro forms,
and the refusals with their lines. Host (g++): each kernel against its kernel as written
within the folder's tolerance at the default, mixes of DIV_FOLD with ITEMS_PER_THREAD (the
per-item exits) and DIV_RCP, and the all-ends configs' first and last.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen22
import held_back_unseen25
import pytest
from held_back_harness import same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

SPELLINGS = Path(__file__).resolve().parent / "spellings_s33_newton"
COMMON = {"BLOCK_THREADS", "ITEMS_PER_THREAD", "DIV_FOLD", "MIN_BLOCKS_PER_SM"}
KNOBS = {
    "colebrook_newton_f64": COMMON | {"DIV_RCP"},  # the solve in a helper's own loop
    "lambertw_halley_f64": COMMON | {"UNROLL", "DIV_RCP"},  # the kernel's own loop
    "prandtl_smooth_f64": COMMON | {"DIV_RCP"},  # the helper inlined into the kernel
}
#: the fold's macro call as each kernel renders (its dividend gets `WB_DFOLD_MUL(s)`)
FOLDED = {
    "colebrook_newton_f64": ("double dg = WB_DFOLD_DEN(1.0, +, 2.0 * b, (arg * LN10));",
                             "double dx = WB_DRCP(g WB_DFOLD_MUL((arg * LN10)), dg);"),
    "lambertw_halley_f64": ("WB_DRCP(f[wb_it] WB_DFOLD_MUL((2.0 * fp[wb_it])), "
                            "(WB_DFOLD_DEN(fp[wb_it], -, f[wb_it] * fpp[wb_it], "
                            "(2.0 * fp[wb_it]))))",),
    "prandtl_smooth_f64": ("double slope = WB_DFOLD_DEN_L(TWO_OVER_LN10, prandtl_x_x, +, 1.0);",
                           "step = WB_DRCP(resid WB_DFOLD_MUL(prandtl_x_x), slope);"),
}
MIXES = [{"DIV_FOLD": 1}, {"DIV_FOLD": 1, "ITEMS_PER_THREAD": 2, "BLOCK_THREADS": 64},
         {"DIV_FOLD": 1, "ITEMS_PER_THREAD": 4, "BLOCK_THREADS": 256, "MIN_BLOCKS_PER_SM": 2},
         {"DIV_FOLD": 0, "ITEMS_PER_THREAD": 8, "BLOCK_THREADS": 96}]


def _folder(name: str) -> KernelFolder:
    if name == "colebrook_newton_f64":
        return held_back_unseen25.SET.folder(name)
    return load_kernel_folder(SPELLINGS / name)


@pytest.mark.parametrize("name", sorted(KNOBS))
def test_the_nested_quotient_is_a_knob(name: str) -> None:
    lifted = offline_template(_folder(name)).lifted
    assert {p.name for p in lifted.params} == KNOBS[name], lifted.notes
    assert any(n.startswith("DIV_FOLD: applied: 1 double quotient(s)") for n in lifted.notes)
    for call in FOLDED[name]:
        assert call in lifted.source, lifted.source
    fold = next(p for p in lifted.params if p.name == "DIV_FOLD")
    assert fold.spec["values"] == [0, 1] and fold.spec["default"] == 0


_KERNEL = """extern "C" __global__ void k({out} *y, const float *x, int n{extra})
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i], a = 0.5 * v;
    for (int t = 0; t < 20; ++t) {{
{body}
    }}
    y[i] = ({out})v;
}}
"""


def _lift(body: str, out: str = "float", extra: str = "") -> tuple[set[str], str, tuple[str, ...]]:
    lifted = lift_kernel(_KERNEL.format(out=out, body=body, extra=extra), entry="k",
                         grid=["ceil_div(n, 128)"], block=["128"], scalars={"n": "n"})
    # (the items' copies renamed back: the shapes read as written)
    return {p.name for p in lifted.params}, lifted.source.replace("[wb_it]", ""), lifted.notes


@pytest.mark.parametrize(("body", "call"), [
    ("        v -= (v - a) / (v - a / (v + 1.0));",
     "WB_DFOLD_DEN(v, -, a, (v + 1.0))"),
    ("        v -= (v - a) / ((a / (v + 1.0)) + 2.0);",
     "WB_DFOLD_DEN_L(a, (v + 1.0), +, 2.0)"),
    ("        const double u = v * v + 1.0;\n        double d = 1.0 - a / u;\n"
     "        double s = (v - a) / d;\n        v -= s;",
     "d = WB_DFOLD_DEN(1.0, -, a, u);"),
])
def test_the_fold_takes_each_form(body: str, call: str) -> None:
    names, source, notes = _lift(body)
    assert "DIV_FOLD" in names, notes
    assert call in source, source
    assert "WB_DFOLD_MUL(" in source


@pytest.mark.parametrize(("body", "out", "why"), [
    # s written between the local's write and its division
    ("        double u = v + 1.0;\n        double d = 2.0 + a / u;\n        u = u * 2.0;\n"
     "        v -= (v - a) / d;", "float", "is written or declared again between"),
    # an fp32 quotient
    ("        float fv = (float)v;\n        v -= (fv - 1.0f) / (fv + 1.0f / (fv + 2.0f));",
     "float", "not a double quotient"),
    # an integer divisor: r / s an integer division, s * q an integer product
    ("        v -= (v - a) / (v + 3 / (t + 1));", "float", "not a double quotient"),
    # a double store: a few double ulps would reach the output
    ("        v -= (v - a) / (v + a / (v + 1.0));", "double", "stores other than a float"),
])
def test_the_fold_is_refused_with_the_line(body: str, out: str, why: str) -> None:
    names, _, notes = _lift(body, out)
    assert "DIV_FOLD" not in names, notes
    assert any(n.startswith("DIV_FOLD: not applied:") and why in n for n in notes), notes


@pytest.mark.parametrize("body", [
    # the local written twice
    "        double d = 1.0;\n        d = d + a / (v + 1.0);\n        v -= (v - a) / d;",
    # read twice
    "        double d = 1.0 + a / (v + 1.0);\n        v -= (v - a) / d + 0.0 * d;",
    # no quotient in the divisor
    "        v -= (v - a) / (v + a * (v + 1.0));",
])
def test_no_fold_without_the_shape(body: str) -> None:
    names, source, notes = _lift(body)
    assert "DIV_FOLD" not in names and "WB_DFOLD" not in source, notes


def test_a_loop_between_the_write_and_the_division_refuses() -> None:
    body = ("        double d = 1.0 + a / (v + 1.0);\n        for (int r = 0; r < 2; ++r)\n"
            "            v -= (v - a) / d;")
    names, _, notes = _lift(body)
    assert "DIV_FOLD" not in names, notes
    assert any("DIV_FOLD: not applied:" in n and "a loop lies between" in n and "(line 9)" in n
               for n in notes), notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(KNOBS))
def test_the_fold_computes_as_written(name: str, tmp_path: Path,
                                      host_flags: tuple[str, ...]  # noqa: F811
                                      ) -> None:
    kf = _folder(name)
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), MIXES)
    if not FULL_MATRIX:
        configs = configs[:5] + configs[-2:]
    assert sum(c["DIV_FOLD"] == 1 for c in configs) >= 3, configs
    if "DIV_RCP" in template.param_names:
        configs.append({**configs[1], "DIV_RCP": 1})  # the two knobs over one division
    assert same_as_written(kf, template, configs, held_back_unseen25.SET.host_source,
                           tmp_path / "run", host_flags, within_tolerance=True) == \
        len(configs)


_HELPERS = """__device__ double g_ticks;
__device__ double tick(double v) { g_ticks += 1.0; return v; }
"""


def test_s_read_twice_must_be_free_of_side_effects() -> None:
    body = "        v -= (v - a) / (v + a / tick(v + 1.0));"
    lifted = lift_kernel(_HELPERS + _KERNEL.format(out="float", body=body, extra=""),
                         entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                         scalars={"n": "n"})
    assert "DIV_FOLD" not in {p.name for p in lifted.params}, lifted.notes
    assert any(n.startswith("DIV_FOLD: not applied:") and "free of side effects" in n and
               "(line 9)" in n for n in lifted.notes), lifted.notes



@needs_gxx
@pytest.mark.timeout(1200)
def test_a_helpers_own_loop_takes_div_rcp(tmp_path: Path,
                                          host_flags: tuple[str, ...]  # noqa: F811
                                          ) -> None:
    """DIV_RCP reads the divisions of a loop in any helper the kernel reaches, by a local
    the loop assigns or declares (colebrook's ``g / dg`` above; set 22's
    student_t_cdf_f64, whose continued fraction runs in ``betacf``, called once an item
    through ``betai``): within the folder's tolerance at DIV_RCP 1, alone and with items."""
    kf = held_back_unseen22.SET.folder("student_t_cdf_f64")
    lifted = offline_template(kf)
    assert {p.name for p in lifted.lifted.params} == {
        "BLOCK_THREADS", "ITEMS_PER_THREAD", "DIV_RCP", "MIN_BLOCKS_PER_SM"}, lifted.lifted.notes
    assert any(n.startswith("DIV_RCP: applied: 4 double division(s)") and "`betacf` (line 47)"
               in n for n in lifted.lifted.notes), lifted.lifted.notes
    template = lifted.template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"),
                           [{"DIV_RCP": 1}, {"DIV_RCP": 1, "ITEMS_PER_THREAD": 4}])
    if not FULL_MATRIX:
        configs = configs[:3] + configs[-1:]
    assert same_as_written(kf, template, configs, held_back_unseen22.SET.host_source,
                           tmp_path / "run", host_flags, within_tolerance=True) == \
        len(configs)
