"""BRANCHLESS (if-conversion) in the offline templater: an ``if`` inside a per-element
kernel's loop with side-effect-free sides gets a both-sides-then-select form; sides that
store, load without an earlier unconditional load, or call unknown functions are refused
with their line. Pure tests, plus nvcc at BRANCHLESS 0/1 and ITEMS_PER_THREAD corners
(skipped without nvcc).
"""

from __future__ import annotations

import pytest
from helpers_templater import lifted_template
from test_templater_flat import compiles, folder_lift, lift, params, reason

from workbench.engine.compiler import Compiler

pytestmark = pytest.mark.timeout(300)

HEAD = """__constant__ float coef[16];
extern "C" __global__ void k(float* out, const float* x, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float acc = 0.0f, alt = 1.0f;
  for (int t = 0; t < 16; ++t) {
    float c = coef[t];
    float s = v * c - 0.5f;
"""
TAIL = """  }
  out[i] = acc + alt;
}
"""

CONVERTS = {
    "if_else_plus_equals": """    if (s > 0.0f) {
      acc += c * __expf(-s * s);
    } else {
      acc += c * (1.0f + sinf(s) * cosf(c * s));
    }
""",
    "two_variables_assigned": """    if (s > 0.0f) { acc = acc + fabsf(s); alt = fmaxf(alt, s); }
    else { acc = acc - s * s; alt = fminf(alt, rsqrtf(c + 2.0f)); }
""",
    "if_without_else": """    if (s < 0.25f)
      acc += tanhf(s) * powf(c, 2.0f);
""",
    "branch_local_and_earlier_load": """    if (s > c) {
      float e = expf(-s) * coef[t];
      acc += e;
      ++alt;
    }
""",
}

REFUSED = {
    "load_not_made_before": ("""    if (s > 0.0f) acc += x[i + 1];
""", "not loaded unconditionally"),
    "store": ("""    if (s > 0.0f) { out[i] = s; acc += s; }
""", "writes memory"),
    "unknown_call": ("""    if (s > 0.0f) acc += my_helper(s);
""", "whose body is not pure: `++calls` writes outside its locals"),
}


def kernel(body: str) -> str:
    # writes a file-scope counter: not pure (a pure helper converts: test_templater_ilp2)
    helper = ("__device__ int calls; "
              "__device__ float my_helper(float s) { ++calls; return s * 2.0f; }\n")
    return helper + HEAD + body + TAIL


def lifted_of(body: str):  # type: ignore[no-untyped-def]
    return lift(kernel(body), "k", ["ceil_div(n, 256)"], ["256"], {"n": "n"})


@pytest.mark.parametrize("name", sorted(CONVERTS))
def test_pure_sides_get_a_branchless_knob(name: str, compiler: Compiler) -> None:
    lifted = lifted_of(CONVERTS[name])
    knobs = params(lifted)
    assert knobs["BRANCHLESS"] == {"kind": "choice", "values": [0, 1], "default": 0,
                                   "description": knobs["BRANCHLESS"]["description"]}
    assert "ITEMS_PER_THREAD" in knobs, lifted.notes  # composes with ilp's per-item arrays
    assert "#if BRANCHLESS" in lifted.source and "wb_c0 ?" in lifted.source
    template = lifted_template(lifted)
    compiles(compiler, template, {"BRANCHLESS": 1}, {"BRANCHLESS": 1, "ITEMS_PER_THREAD": 8},
             {"BRANCHLESS": 0, "ITEMS_PER_THREAD": 8}, {"BRANCHLESS": 1, "ITEMS_PER_THREAD": 2,
                                                        "UNROLL": 4})


def test_two_variables_are_each_selected() -> None:
    source = lifted_of(CONVERTS["two_variables_assigned"]).source
    assert "acc[wb_it] = wb_c0 ? wb_t0_acc : wb_e0_acc;" in source
    assert "alt = wb_c0 ? wb_t0_alt : wb_e0_alt;" in source or \
        "alt[wb_it] = wb_c0 ? wb_t0_alt : wb_e0_alt;" in source


def test_if_without_else_keeps_the_value_when_false() -> None:
    source = lifted_of(CONVERTS["if_without_else"]).source
    assert "acc[wb_it] = wb_c0 ? wb_t0_acc : acc[wb_it];" in source


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_unsafe_sides_are_refused_with_their_line(name: str) -> None:
    body, why = REFUSED[name]
    lifted = lifted_of(body)
    assert "BRANCHLESS" not in params(lifted)
    found = reason(lifted, "BRANCHLESS")
    assert why in found
    assert "(line 11)" in found, found  # the `if` line (helper + HEAD put it at line 11)


def test_percell_compute_gets_branchless_with_items(compiler: Compiler) -> None:
    lifted = folder_lift("percell_compute")
    knobs = params(lifted)
    assert {"ITEMS_PER_THREAD", "BRANCHLESS", "USE_FAST_MATH", "UNROLL"} <= set(knobs)
    template = lifted_template(lifted, "percell_compute")
    compiles(compiler, template, {"BRANCHLESS": 1, "ITEMS_PER_THREAD": 8},
             {"BRANCHLESS": 1, "ITEMS_PER_THREAD": 8, "USE_FAST_MATH": 1},
             {"BRANCHLESS": 1, "ITEMS_PER_THREAD": 1})
