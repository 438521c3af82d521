"""A named member function called on a local object whose members are set once, read as the
lambda it is (:mod:`workbench.templater.functor_objects`; issue 28, round 31c's
crspline_rotmean_method: ``Spline sp; sp.k = knots; .. sp.at(wrap(u[i] + offset))``).

The object's class defines the function (``const`` or not) and its members are set once: by
a braced or parenthesised initializer, or by plain assignments beside the declaration
before any call. Each function the kernel calls is written as ``auto sp_at = [&](..) ->
R {..};`` where the last member is set, its members (``m`` and ``this->m`` alike) read as
the values set (a name the kernel never writes, else a copy taken where it was set), and
each call ``sp.at(..)`` as ``sp_at(..)``: the later passes write it into its calls, as they
do for ``operator()``. Two spellings lift the items (ITEMS_PER_THREAD, UNROLL) and print on
the host (g++) exactly what the kernel as written prints at the default and a mix. A
method writing a member, the object escaping (its address taken, passed to a function), a
member set twice or after a call, a recursive, virtual or overloaded method stay as
written, each with its reason and line.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from helpers_templater import host_configs, lifted_template, needs_gxx
from test_templater_first20_crspline import run
from test_templater_ilp_spellings import ENV, N

from workbench.core.template import KernelTemplate
from workbench.templater import LiftedSource, lift_kernel
from workbench.templater.functor_objects import functor_objects_as_lambdas
from workbench.templater.inline_calls import InlinedSource

pytestmark = [pytest.mark.timeout(600)]


#: k(out, values, table, n): a table lookup a method of a struct whose members are set by
#: assignment after its declaration, called in a 24-trip loop once a thread.
ASSIGNED = """
#define KN 32
struct Table {
  const float* tab;
  float scale;
  __device__ float at(float x) const {
    const float pos = x * scale;  // the cell's place
    const int below = (int)pos;
    const int cell = below > KN - 2 ? KN - 2 : below;
    const float w = pos - cell;
    return tab[cell] + w * (tab[cell + 1] - tab[cell]);
  }
};

extern "C" __global__ void k(float* out, const float* v, const float* table, int n) {
  __shared__ float cells[KN];
  for (int j = threadIdx.x; j < KN; j += blockDim.x) cells[j] = table[j];
  __syncthreads();
  Table t;
  t.tab = cells;
  t.scale = KN - 1.0f;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float acc = 0.0f;
    float x = fabsf(v[i]) - floorf(fabsf(v[i]));
    for (int s = 0; s < 24; ++s) {
      acc = 0.5f * acc + t.at(x);
      x = x * 0.75f + 0.125f;
    }
    out[i] = acc;
  }
}
"""

#: The same built by a braced initializer, the members read through ``this->``, two methods.
BRACED = ASSIGNED.replace("""    const float pos = x * scale;  // the cell's place""",
                          """    const float pos = x * this->scale;""").replace(
    """    return tab[cell] + w * (tab[cell + 1] - tab[cell]);
  }
""", """    return this->tab[cell] + w * (tab[cell + 1] - this->tab[cell]);
  }
  __device__ float damp(float a) const { return 0.5f * a; }
""").replace("""  Table t;
  t.tab = cells;
  t.scale = KN - 1.0f;
""", """  const Table t{cells, KN - 1.0f};
""").replace("acc = 0.5f * acc + t.at(x);", "acc = t.damp(acc) + t.at(x);")


def lift(source: str) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=["ceil_div(n, 128)"], block=["128"],
                       scalars={"n": "n"})


def _functor_notes(lifted: LiftedSource, applied: bool) -> list[str]:
    return [f.reason for f in lifted.findings
            if f.transform == "INLINE_FUNCTOR" and f.applied == applied]


@needs_gxx
@pytest.mark.parametrize("spelling", ["assigned", "braced"])
def test_a_method_of_an_object_set_once_lifts_the_items(spelling: str) -> None:
    source = {"assigned": ASSIGNED, "braced": BRACED}[spelling]
    assert source.count("t.at(x)") == 1 and (spelling == "assigned" or "this->" in source)
    lifted = lift(source)
    names = [p.name for p in lifted.params]
    assert "ITEMS_PER_THREAD" in names and "UNROLL" in names, lifted.notes
    assert _functor_notes(lifted, True) == [
        "t (an object of Table) read as the lambdas its member functions called are, its "
        "members as the values set"], lifted.notes
    kernel = lifted.source.split("__global__")[1]
    # the pointer member reads the cells (never written), the scale a copy where it was set
    assert "cells[" in kernel and " tab[" not in kernel and "this->" not in kernel
    assert "const float t_scale = KN - 1.0f;" in lifted.source
    template = lifted_template(lifted)
    written = KernelTemplate.build(name="k", source=source, entry="k",
                                   grid=["ceil_div(n, 128)"], block=["128"])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        want = run(written, {}, work, "written")
        assert len(want) == N and "-7" not in want and len(set(want)) > N // 5
        mix = {"ITEMS_PER_THREAD": 4, "UNROLL": 8, "BLOCK_THREADS": 64}
        for k, config in enumerate(host_configs(template, ENV, [mix])):
            assert run(template, config, work, f"c{k}") == want, config


def test_the_assignments_become_the_copies_and_the_calls_the_lambda() -> None:
    out = functor_objects_as_lambdas(InlinedSource(ASSIGNED, "k.cu"), "k")
    kernel = out.text.split("__global__")[1]
    assert "Table t;" not in kernel and "t.tab = cells;" not in kernel and "t_at(x)" in kernel
    assert "t.at(" not in kernel
    lines = out.text.split("\n")
    copy = next(n for n, s in enumerate(lines) if "const float t_scale = KN - 1.0f;" in s)
    assert lines[copy + 1].lstrip().startswith("auto t_at = [&](float t_at_x) -> float {")
    assert len(lines) == len(ASSIGNED.split("\n")) + 1  # the lambda's own line, mapped
    assert out.baseline_line(copy + 2) == ASSIGNED.split("\n").index("  t.scale = KN - 1.0f;") + 1


#: (what the spelling changes, what it changes it to, the reason's words, the text of the
#: line the reason names)
REFUSALS = [
    ("    const float pos = x * scale;  // the cell's place",
     "    const float pos = x * scale;\n    scale += 0.0f;", "at() writes member scale",
     "scale += 0.0f;"),
    ("    const float pos = x * scale;  // the cell's place",
     "    const float pos = x * (this->scale = 2.0f);", "at() writes member scale",
     "this->scale = 2.0f"),
    ("  const int i = blockIdx", "  keep(&t);\n  const int i = blockIdx",
     "takes the address of t (the object escapes)", "keep(&t);"),
    ("  const int i = blockIdx", "  keep(t);\n  const int i = blockIdx",
     "passes t to a function (the object escapes", "keep(t);"),
    ("  t.scale = KN - 1.0f;\n", "  t.scale = KN - 1.0f;\n  t.scale = KN - 2.0f;\n",
     "member scale of t is set twice (line {t.scale = KN - 1.0f;} and line "
     "{t.scale = KN - 2.0f;})", "t.scale = KN - 2.0f;"),
    ("    out[i] = acc;", "    out[i] = acc;\n    t.scale = 1.0f;",
     "sets member scale of t other than by a plain assignment statement beside its "
     "declaration", "t.scale = 1.0f;"),
    ("  const int i = blockIdx", "  const float first = t.at(0.5f);\n  t.scale = first;\n"
     "  const int i = blockIdx", "sets a member of t after a call of its member functions "
     "(line {t.at(0.5f)})", "t.scale = first;"),
    ("    return tab[cell] + w * (tab[cell + 1] - tab[cell]);",
     "    return w > 2.0f ? at(w - 1.0f) : tab[cell] + w * (tab[cell + 1] - tab[cell]);",
     "at() calls itself (recursive)", "? at(w - 1.0f)"),
    ("  __device__ float at(float x) const {", "  virtual __device__ float at(float x) const {",
     "is virtual, mutable or static", "virtual __device__"),
    ("struct Table {\n", "struct Table {\n  __device__ float at(int c) const { return tab[c]; }\n",
     "Table's at() is overloaded (2 definitions)", "__device__ float at(float x) const {"),
]


@pytest.mark.parametrize(("old", "new", "reason", "where"), REFUSALS)
def test_an_object_the_rewrite_cannot_read_stays_as_written(old: str, new: str, reason: str,
                                                            where: str) -> None:
    source = ASSIGNED.replace(old, new)
    assert source != ASSIGNED
    source = source.replace("extern", "__device__ void keep(const Table& t) {}\nextern")
    lifted = lift(source)
    refused = [f for f in lifted.findings if f.transform == "INLINE_FUNCTOR" and
               not f.applied]
    lines = source.split("\n")

    def at(words: str) -> int:
        return next(n + 1 for n, s in enumerate(lines) if words in s)

    reason = re.sub(r"\{([^}]*)\}", lambda m: str(at(m.group(1))), reason)  # {text}: its line
    assert len(refused) == 1 and reason in refused[0].reason, lifted.notes
    assert refused[0].line == at(where), (refused[0], lifted.notes)
    assert "t.at(" in lifted.source  # left as written


def test_a_method_of_one_return_is_left_to_the_passes_that_read_its_expression() -> None:
    # (clamped_reads, item_objects and the tile families read ``g.at(i, j)`` of one return
    # where it is called: the corpus's gemm_splitk4, median3x3_clamp, star13_o2 lift so)
    start = ASSIGNED.index("    const float pos")
    end = ASSIGNED.index("  }\n};")
    source = ASSIGNED[:start] + "    return tab[(int)(x * scale) % KN];\n" + ASSIGNED[end:]
    lifted = lift(source)
    assert not [f for f in lifted.findings if f.transform == "INLINE_FUNCTOR"], lifted.notes
    assert "t.at(x)" in lifted.source


def test_an_object_built_by_a_constructor_is_left_to_the_window_families() -> None:
    # (gather_stage and clamped_reads read a method through its class's constructor: the
    # corpus's median3x3_clamp stages its tile so)
    source = ASSIGNED.replace("  const float* tab;\n", "  __device__ Table(const float* t, float s)"
                              " : tab(t), scale(s) {}\n  const float* tab;\n").replace(
        "  Table t;\n  t.tab = cells;\n  t.scale = KN - 1.0f;\n",
        "  const Table t(cells, KN - 1.0f);\n")
    assert "const Table t(cells" in source
    lifted = lift(source)
    assert not [f for f in lifted.findings if f.transform == "INLINE_FUNCTOR"], lifted.notes
    assert "t.at(x)" in lifted.source
