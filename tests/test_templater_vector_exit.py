"""The vector family's one-element region read from its exit form: ``int i = blockIdx.x * B
+ threadIdx.x; if (i >= n) return; REST`` is the region REST under ``i < n``, as ``if (i < n)
{ REST }`` is (:func:`~.vector_regions.flat_region`), in one lift (no second lift of a
rewritten source). Lift-level checks; the host runs of the exit form are in
tests/test_templater_vector_tail.py and the set-22 folders' tests (adamw_step,
pixel_shuffle_r2)."""

from __future__ import annotations

import pytest

from workbench.templater import LiftedSource, lift_kernel

pytestmark = pytest.mark.timeout(120)

GUARDED = """extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ x,
                             int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v * v + 1.0f;
  }
}
"""

EXIT = """extern "C" __global__ void k(float* __restrict__ y, const float* __restrict__ x,
                             int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  y[i] = v * v + 1.0f;
}
"""


def _lift(source: str) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=["ceil_div(n, 256)"], block=["256"],
                       scalars={"n": "n"})


def _knobs(lifted: LiftedSource) -> tuple[list[str], tuple[str, ...], tuple[str, ...]]:
    return [p.name for p in lifted.params], lifted.constraints, lifted.grid


@pytest.mark.parametrize("exit_line", ["if (i >= n) return;", "if (n <= i) return;",
                                       "if (i >= n) { return; }",
                                       "if (i >= n)\n    return;  // past the end"])
def test_the_exit_form_lifts_what_the_guarded_form_lifts(exit_line: str) -> None:
    guarded, exited = _lift(GUARDED), _lift(EXIT.replace("if (i >= n) return;", exit_line))
    assert _knobs(exited) == _knobs(guarded), exited.notes
    assert "VEC" in _knobs(exited)[0]
    assert "VEC: applied: region over i vectorized (line 4)" in exited.notes
    # the same per-lane body and stores; the exit's line is the region's opening brace
    lanes = "for (int wb_v = 0; wb_v < VEC; ++wb_v) {"
    # (a comment after the exit opens the region's body)
    assert exited.source.replace("// past the end", "").split(lanes)[1].split("}")[0].split() == \
        guarded.source.split(lanes)[1].split("}")[0].split()
    assert "return" not in exited.source.split("(now per item, below)")[1]


@pytest.mark.parametrize("source", [
    EXIT.replace("if (i >= n) return;", "if (i > n) return;"),  # not the complement of i < n
    EXIT.replace("if (i >= n) return;", "if (n >= i) return;"),
    EXIT.replace("int n) {", "int n, int m) {").replace("if (i >= n) return;",
                                                          "if (m >= n) return;"),
    EXIT.replace("if (i >= n) return;", "if (i >= n) return; else y[i] = 0.0f;"),
], ids=["strict", "reversed", "other_name", "else"])
def test_other_exits_are_no_region(source: str) -> None:
    lifted = _lift(source)
    assert "VEC" not in _knobs(lifted)[0], lifted.notes
    assert any(n.startswith("VEC: not applied: no unit-stride per-thread loop") or
               "VEC: not applied" in n for n in lifted.notes), lifted.notes


def test_an_exit_with_nothing_after_it_is_no_region() -> None:
    source = """extern "C" __global__ void k(float* __restrict__ y, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  y[i] = 1.0f;
  if (i >= n) return;
}
"""
    lifted = _lift(source)
    assert "VEC" not in _knobs(lifted)[0], lifted.notes


def test_a_second_exit_in_the_region_is_refused_with_its_line() -> None:
    source = EXIT.replace("  float v = x[i];\n", "  float v = x[i];\n  if (v < 0.0f) return;\n")
    lifted = _lift(source)
    assert "VEC" not in _knobs(lifted)[0]
    assert "VEC: not applied: `return;` leaves the loop body early (line 6)" in lifted.notes, \
        lifted.notes


@pytest.mark.parametrize("source", [
    EXIT.replace("  if (i >= n) return;\n", "  int t = threadIdx.x;\n  if (t == 5) return;\n"
                 "  float c = 2.0f;\n  if (i >= n) return;\n"),
    GUARDED.replace("  if (i < n) {\n", "  if (threadIdx.x == 5) return;\n  if (i < n) {\n"),
], ids=["exit", "guarded"])
def test_an_exit_on_the_threads_place_before_the_guard_is_refused(source: str) -> None:
    """A thread leaving by its place before the guard: each of its lanes and items is a
    thread of the kernel as written that would not leave. (A statement apart from the
    guard: two exits in a row are one, :mod:`.inline_exits`, and so no region.)"""
    lifted = _lift(source)
    assert "VEC" not in _knobs(lifted)[0], lifted.notes
    assert any("leaves before the guard on the thread's place" in n for n in lifted.notes), \
        lifted.notes


def test_an_exit_on_the_blocks_row_before_the_guard_is_kept() -> None:
    """``blockIdx.y`` is every lane's: leaving by it leaves for the thread's every element."""
    source = EXIT.replace("int n) {", "int n, int rows) {").replace(
        "  if (i >= n) return;\n",
        "  if (blockIdx.y >= rows) return;\n  float c = 2.0f;\n  if (i >= n) return;\n")
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n, 256)", "rows"], block=["256"],
                         scalars={"n": "n", "rows": "rows"})
    assert "VEC" in _knobs(lifted)[0], lifted.notes
