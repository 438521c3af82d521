"""FAST_DIV: the fp32 divisions of a compute-bound per-element kernel's repeated work as
``__fdividef``, one knob apart from FAST_MATH; only divisions the parse proves fp32 (not a
double, an integer, a comparison's value, a cast of such a value, a memory access or an
unknown name; an int or float value cast to float is a float), in a
loop of the kernel or in a function the kernel calls in a loop. Lift-level checks; the host
runs of these templates are in test_templater_ilp_exits.py (the host's ``__fdividef`` is the
division: the gate checks the GPU's within the tolerance).
"""

from __future__ import annotations

import pytest

from workbench.templater import LiftedSource, lift_kernel

_KERNEL = """
#define SCALE 3
#define DT 0.01f
static constexpr float kHalf = 0.5f;
__device__ float ratio(float a, float b) {{ return a / b; }}
extern "C" __global__ void k(float* out, const float* x, int n) {{
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  float v = x[i], acc = 0.0f;
  double w = 1.0;
  int q = i & 7;
  const float once = 1.0f / (v + 2.0f);
  for (int t = 1; t < 16; ++t) {{
{line}
  }}
  out[i] = acc * once;
}}
"""


def _lift(line: str) -> LiftedSource:
    return lift_kernel(_KERNEL.format(line=line), entry="k", grid=["ceil_div(n, 128)"],
                       block=["128"], scalars={"n": "n"})


def _divisions(lifted: LiftedSource) -> int:
    return lifted.source.count("WB_DIV(") - 2  # the two macro definitions


REWRITTEN = {
    "float_by_float": ("    acc += v / (acc + 1.0f);", "WB_DIV(v[wb_it], (acc[wb_it] + 1.0f))"),
    "float_by_int": ("    acc += v / t;", "WB_DIV(v[wb_it], t)"),
    "file_constant": ("    acc += kHalf / (v * v + 1.0f);", "WB_DIV(kHalf, "),
    "int_over_float": ("    acc += q / (v + 3.0f);", "WB_DIV(q[wb_it], "),
    "fp32_call": ("    acc += sinf(v) / (2.0f + cosf(v));", "WB_DIV("),
    "int_cast_to_float": ("    acc += v / (float)t;", "WB_DIV(v[wb_it], (float)t)"),
    "cast_over_float": ("    acc += (float)q / (v + 1.0f) + v;", "WB_DIV((float)q[wb_it], "),
    "in_a_function_called_in_the_loop": ("    acc += ratio(v, acc + 1.0f);",
                                         "return WB_DIV(a, b);"),
}


@pytest.mark.parametrize("name", sorted(REWRITTEN))
def test_fp32_divisions_in_the_repeated_work_get_the_knob(name: str) -> None:
    line, shown = REWRITTEN[name]
    lifted = _lift(line)
    knob = {p.name: dict(p.spec) for p in lifted.params}.get("FAST_DIV")
    assert knob is not None and knob["values"] == [0, 1] and knob["default"] == 0, \
        lifted.notes
    assert "__fdividef" in str(knob["description"])
    assert _divisions(lifted) == 1, lifted.source
    assert shown in lifted.source, lifted.source
    assert "1.0f / (v[wb_it] + 2.0f)" in lifted.source  # once per item: not the loop's work


LEFT = {
    "double": "    acc += (float)(w / (double)t);",
    "integer": "    acc += (float)(q / t) * v;",
    "comparison_value": "    acc += v * (float)((v > 0.0f) / t);",
    "cast_of_a_double": "    acc += (float)w / (v + 1.0f) + v;",
    "memory": "    acc += v / x[t];",
    "unknown_macro": "    acc += v / SCALE;",
    "double_literal": "    acc += v / 2.0;",
}


@pytest.mark.parametrize("name", sorted(LEFT))
def test_divisions_not_proven_fp32_are_left_as_written(name: str) -> None:
    lifted = _lift(LEFT[name])
    assert "FAST_DIV" not in {p.name for p in lifted.params}, lifted.source
    assert "WB_DIV" not in lifted.source


FOLDED = {
    "literals": "    acc += v * (1.0f / 16777216.0f);",
    "literal_macro_over_literal": "    acc += v * (DT / 6.0f);",
    "file_constant_over_literal": "    acc += v * (kHalf / 3.0f);",
}


@pytest.mark.parametrize("name", sorted(FOLDED))
def test_a_division_of_constants_is_no_knob(name: str) -> None:
    """The compiler divides constants at build time: __fdividef there changes no run, so
    a knob would only spend the search's budget; the note says why it is not one."""
    lifted = _lift(FOLDED[name])
    assert "FAST_DIV" not in {p.name for p in lifted.params}, lifted.source
    assert "WB_DIV" not in lifted.source
    assert any("divides constants: the compiler folds it" in n for n in lifted.notes), \
        lifted.notes


def test_a_constant_numerator_over_a_value_keeps_the_knob() -> None:
    lifted = _lift("    acc += v * (DT / (v + 6.0f));")
    assert "FAST_DIV" in {p.name for p in lifted.params}, lifted.notes
    assert "WB_DIV(DT, (v[wb_it] + 6.0f))" in lifted.source, lifted.source
