"""First contact with held-back set 12's Chebyshev series (issue 28): benchmarks/
corpus_compute_unseen12/cheb128_f64 sums 128 coefficients by Clenshaw's recurrence in double,
a ``do ... while`` in a ``__device__`` helper called as ``y[i] = (float)clenshaw(c, t);``.
The lift had BLOCK_THREADS, ITEMS_PER_THREAD and MIN_BLOCKS_PER_SM (1.01x on the H100, the
expert 1.61x at 8 points a thread, the loop unrolled by 8): the helper stayed a call, so the
items ran their recurrences one after another (one unrolled loop over the items' calls, each
call a whole loop: no chains in flight together) and the recurrence loop had no unroll knob.
Two gates: inline_calls took a helper's loop as the thread's work only where its header,
a window or its test read the thread's point, not where its body carries state computed
from the point from trip to trip (``b1 = 2 t b1 - b2 + c[j]``); and a call whose value is an
operand (a cast, arithmetic) was refused. Now a loop that carries the point's state and
leaves by no ``break``/``return`` is inlined, and a call that is an operand of casts and
arithmetic (no ``&&``, ``||``, ``?:``, comma; its other operands with no call or assignment)
is inlined with its value written as the helper's return type. The items then share the
recurrence loop (ilp.py) and get UNROLL; a loop counting up over the table gets TABLE too.

digamma_f64 (set 9) changes with this: its helper (a ``while`` on its state, inlined since
set 10) was refused only for its cast (``psi[i] = (float)digamma(..)``); its items now step
the recurrence in one loop, as its expert's do. Its lift is checked here on the host too.

Pure: the knobs and the rewrite of the folder, a second spelling (a Horner sum counting up
in a helper returning float from a double, its call inside arithmetic), digamma's notes, the
refusals that stay. Host (g++): each lift at its default, every all-ends config and mixes
against the kernel as written, bit for bit (an item runs the statements it ran as written,
in order).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen9
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

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen12.ROOT / "cheb128_f64"
DIGAMMA = held_back_unseen9.ROOT / "digamma_f64"
KNOBS = ("BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "TABLE", "MIN_BLOCKS_PER_SM")

#: A second spelling: a Horner sum counting up in a helper that returns float from a double
#: accumulator, the point clamped by fminf/fmaxf, the call an operand of arithmetic in double
#: (the helper's float rounding must stay), a guarded body, threadIdx first in the index.
HORNER = """constexpr int kTerms = 96;

__device__ __forceinline__ float horner_series(const float* __restrict__ coef, float u) {
  double acc = 0.0;
  for (int k = 0; k < kTerms; ++k) {
    acc = acc * (double)u + (double)coef[k];
  }
  return acc;
}

extern "C" __global__ void cheb128_f64(float* y, const float* x, const float* c, int n) {
  int idx = threadIdx.x + blockDim.x * blockIdx.x;
  if (idx < n) {
    const float u = fminf(fmaxf(0.4f * x[idx] - 0.2f, -1.0f), 1.0f);
    y[idx] = 0.5 * horner_series(c, u) + 0.25;
  }
}
"""

#: A third: a fixed-count solve in a template helper, its state a local set from the point
#: (E = m, then E = m + e sin E), the call the final guard's assignment.
KEPLER = """template <int ITERS>
__device__ float solve_kepler(float m, float e) {
  float E = m;
  for (int it = ITERS; it > 0; --it) E = m + e * sinf(E);
  return E;
}

extern "C" __global__ void cheb128_f64(float* y, const float* x, const float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = solve_kepler<24>(4.0f * x[i], 0.5f);
}
"""

#: The folder's helper called where it is not always evaluated, or beside another call.
CALLED = """#define NCOEF 128

__device__ double clenshaw(const float* c, double t) {
  double b1 = 0.0, b2 = 0.0;
  for (int j = NCOEF - 1; j > 0; --j) {
    const double b0 = 2.0 * t * b1 - b2 + (double)c[j];
    b2 = b1;
    b1 = b0;
  }
  return t * b1 - b2 + (double)c[0];
}

extern "C" __global__ void cheb128_f64(float* y, const float* x, const float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double t = (double)x[i];
  y[i] = %s;
}
"""

#: A series an item may leave early (no test of its state in the loop's header): a call.
EARLY = """__device__ float tail(const float* c, float t) {
  float s = 0.0f;
  for (int k = 0; k < 64; ++k) {
    s = s * t + c[k];
    if (s > 1e6f) break;
  }
  return s;
}

extern "C" __global__ void cheb128_f64(float* y, const float* x, const float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = tail(c, x[i]);
}
"""


def _lift(source: str) -> Any:
    return lift_kernel(source, entry="cheb128_f64", grid=["ceil_div(n, 256)"],
                       block=["256"], scalars={"n": "n"})


def _note(notes: tuple[str, ...] | list[str], name: str) -> str:
    found = [n for n in notes if n.startswith(f"{name}: ")]
    assert len(found) == 1, notes
    return found[0]


def test_cheb128_f64_steps_its_points_recurrences_in_one_loop() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    lifted = result.lifted
    assert tuple(p.name for p in lifted.params) == KNOBS, result.notes
    assert lifted.grid == ("ceil_div(n, BLOCK_THREADS * ITEMS_PER_THREAD)",)
    assert _note(result.notes, "INLINE") == \
        "INLINE: applied: clenshaw inlined into cheb128_f64 (line 32)"
    items = _note(result.notes, "ITEMS_PER_THREAD")
    assert ": applied: " in items and "(b0, b1, b2, i, t)" in items and \
        "1 loop(s) of item-independent length interleave the items" in items, items
    body = lifted.source.split("cheb128_f64(float* y", 1)[1]
    assert "clenshaw(c" not in body.replace("// clenshaw(c, t)", "")
    # one recurrence loop a thread, every item's step inside it
    assert body.count("for (int j = NCOEF - 1; j > 0; --j) {") == 1
    loop = body.split("for (int j = NCOEF - 1; j > 0; --j) {", 1)[1].split("\n  }\n", 1)[0]
    assert "for (int wb_it = 0; wb_it < ITEMS_PER_THREAD; ++wb_it)" in loop
    assert "b0[wb_it] = 2.0 * t[wb_it] * b1[wb_it] - b2[wb_it] + " \
        "WB_TABLE(wb_tab0_0[j], (double)c[j]);" in loop
    assert "#pragma unroll (wb_unroll)" in body
    # the helper's value as its return type, then the kernel's cast
    assert "y[i[wb_it]] = (float)((double)(t[wb_it] * b1[wb_it] - b2[wb_it] + " \
        "(double)c[0]));" in body
    # TABLE: the coefficients the loop reads (1 to 127, counting down) as doubles in shared
    # memory, filled once a block before any item leaves
    assert "__shared__ double wb_tab0_0[128];" in body
    assert "for (int j = 1 + threadIdx.x; j < 128; j += blockDim.x) {\n" \
        "    wb_tab0_0[j] = (double)c[j];" in body
    assert _note(result.notes, "TABLE") == "TABLE: applied: 1 per-entry term(s) " \
        "((double)c[j]) of 128 entries computed once per block (line 14)"


def test_a_horner_sum_inside_arithmetic_interleaves_and_keeps_the_float_return() -> None:
    lifted = _lift(HORNER)
    assert tuple(p.name for p in lifted.params) == (
        "BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL", "TABLE", "MIN_BLOCKS_PER_SM"), \
        lifted.notes
    items = _note(lifted.notes, "ITEMS_PER_THREAD")
    assert ": applied: " in items and "interleave the items" in items, items
    # the helper rounds its double sum to float; the kernel's double arithmetic follows
    assert "y[idx[wb_it]] = 0.5 * ((float)(acc[wb_it])) + 0.25;" in lifted.source
    assert "WB_TABLE(wb_tab0_0[k], (double)c[k])" in lifted.source


def test_a_template_solve_whose_state_is_a_local_set_from_the_point_interleaves() -> None:
    lifted = _lift(KEPLER)
    assert tuple(p.name for p in lifted.params)[:3] == (
        "BLOCK_THREADS", "ITEMS_PER_THREAD", "UNROLL"), lifted.notes
    assert _note(lifted.notes, "INLINE").startswith(
        "INLINE: applied: solve_kepler<24> inlined into cheb128_f64"), lifted.notes
    items = _note(lifted.notes, "ITEMS_PER_THREAD")
    assert "1 loop(s) of item-independent length interleave the items" in items, items


@pytest.mark.parametrize(("value", "why"), [
    ("n > 1 ? (float)clenshaw(c, t) : 0.0f", "its result is used in an expression "
     "(`(float)clenshaw(c, t)`)"),
    ("(float)(sqrt(fabs(t)) + clenshaw(c, t))", "its result is used in an expression "
     "(`sqrt(fabs(t)) + clenshaw(c, t)`)"),
], ids=["conditional", "beside_a_call"])
def test_a_call_not_always_evaluated_or_beside_another_call_stays_a_call(value: str,
                                                                          why: str) -> None:
    lifted = _lift(CALLED % value)
    note = _note(lifted.notes, "INLINE")
    assert note.startswith("INLINE: not applied: clenshaw is not inlined into cheb128_f64: ") \
        and why in note and note.endswith("(line 17)"), note
    items = _note(lifted.notes, "ITEMS_PER_THREAD")
    assert "the items' calls of `clenshaw`" in items, items


def test_a_series_an_item_may_leave_early_stays_a_call() -> None:
    lifted = _lift(EARLY)
    assert not [n for n in lifted.notes if n.startswith("INLINE:")], lifted.notes
    items = _note(lifted.notes, "ITEMS_PER_THREAD")
    assert "the items' calls of `tail` (its loop at line 3)" in items, items


#: The folder's helper bumping a call counter (once an item as written; a statement no
#: item's value decides would run once a thread in a shared loop), and called under a test
#: of the item's own value (each item would run the loop alone in its turn).
COUNTER = "__device__ int calls;\n" + CALLED.replace(
    "  return t * b1 - b2", "  calls += 1;\n  return t * b1 - b2") % "(float)clenshaw(c, t)"
ITEM_BRANCH = CALLED.replace("  y[i] = %s;", "  if (t > 0.5) y[i] = (float)clenshaw(c, t);\n"
                             "  else y[i] = 0.0f;")


@pytest.mark.parametrize("source", [COUNTER, ITEM_BRANCH], ids=["counter", "item_branch"])
def test_a_helper_writing_memory_or_called_under_an_items_test_stays_a_call(
        source: str) -> None:
    lifted = _lift(source)
    assert not [n for n in lifted.notes if n.startswith("INLINE:")], lifted.notes
    assert "clenshaw(c, t" in lifted.source.split("cheb128_f64(float* y", 1)[1]


@pytest.mark.parametrize(("header", "fill"), [
    ("for (int j = NCOEF - 1; j >= 2; j--)", "for (int j = 2 + threadIdx.x; j < 128; "),
    ("for (int j = 40; j > 0; j -= 1)", "for (int j = 1 + threadIdx.x; j < 41; "),
], ids=["inclusive_end", "literal_start"])
def test_a_table_read_counting_down_is_staged_from_its_last_entry(header: str,
                                                                  fill: str) -> None:
    source = CALLED.replace("for (int j = NCOEF - 1; j > 0; --j)", header) % \
        "(float)clenshaw(c, t)"
    lifted = _lift(source)
    assert "TABLE" in {p.name for p in lifted.params}, lifted.notes
    assert fill in lifted.source, lifted.source


def test_a_table_counting_down_from_a_run_time_value_is_not_staged() -> None:
    source = CALLED.replace("int n) {\n  const int i", "int n, int m) {\n  const int i") \
        .replace("for (int j = NCOEF - 1; j > 0; --j)", "for (int j = m; j > 0; --j)")
    lifted = _lift(source % "(float)clenshaw(c, t)")
    assert "TABLE" not in {p.name for p in lifted.params}, lifted.notes


def test_digamma_f64_steps_its_recurrence_in_one_loop() -> None:
    result = offline_template(load_kernel_folder(DIGAMMA))
    # CHECK_EVERY: the recurrence's header test runs in every trip of a group, per item
    assert tuple(p.name for p in result.lifted.params) == (
        "BLOCK_THREADS", "ITEMS_PER_THREAD", "CHECK_EVERY", "MIN_BLOCKS_PER_SM"), result.notes
    assert _note(result.notes, "INLINE").startswith(
        "INLINE: applied: digamma inlined into digamma_f64")
    items = _note(result.notes, "ITEMS_PER_THREAD")
    assert "the while loop at line 16 is left by each item on its own (a select keeps" in \
        items, items
    assert "BLOCK_THREADS * ITEMS_PER_THREAD <= 2048" in result.lifted.constraints


#: Mixes over the default: the expert's pick spelled in the lift's knobs (128 threads of 8
#: points, unrolled by 8, the coefficients in shared memory), 96 threads of 2 unrolled by 4 with a register cap; the second
#: spelling's table on; digamma's 96 threads of 4 with a cap.
MIXES = {"folder": [{"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 8, "UNROLL": 8, "TABLE": 1},
                    {"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 2, "UNROLL": 4, "TABLE": 1,
                     "MIN_BLOCKS_PER_SM": 4}],
         "horner": [{"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 4, "UNROLL": 2, "TABLE": 1},
                    {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 8, "UNROLL": 8, "TABLE": 1}],
         "kepler": [{"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "UNROLL": 4}],
         "digamma": [{"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 4, "MIN_BLOCKS_PER_SM": 4},
                     {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 8}]}


def _checked(template: Any, env: dict[str, Any], mixes: list[dict[str, int]]
             ) -> list[dict[str, Any]]:
    """The default, every all-ends config and the mixes (over the default), each once: all
    with ``WORKBENCH_FULL_MATRIX=1``, else the first and the last (a mix)."""
    space = template.space(env)
    default = dict(template.default_config())
    out: list[dict[str, Any]] = []
    for config in [default, *end_configs(template, env), *({**default, **m} for m in mixes)]:
        assert space.rejection(config) is None, (config, space.rejection(config))
        if config not in out:
            out.append(config)
    return host_sample(out)


def _same_results(kf: KernelFolder, source: str, mixes: list[dict[str, int]], out: str,
                  host: Any, tmp_path: Path, flags: tuple[str, ...]) -> None:
    """Runs ``kf``'s lift at :func:`_checked`'s configs and ``source`` as written on the host
    (``host`` the set's host prelude); asserts output ``out`` is the same, bit for bit."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = _checked(template, env, mixes)
    inputs = _inputs(kf)
    want = _run(kf, host(source), kf.baseline.launch_for({}, env), inputs,
                tmp_path / "plain", flags)[out]
    assert np.isfinite(want).all() and np.abs(want).max() > 0.1  # every point written
    runs = [(host(template.render(c, "fp32").source), template.launch_for(c, env))
            for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        assert np.array_equal(got[out], want), config


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_lift_computes_the_same_series_at_the_ends_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER)
    _same_results(kf, kf.baseline.render({}, "fp32").source, MIXES["folder"], "y",
                  held_back_unseen12.host_source, tmp_path, host_flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_horner_spelling_computes_the_same_series(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", HORNER)
    _same_results(kf, HORNER, MIXES["horner"], "y", held_back_unseen12.host_source,
                  tmp_path / "runs", host_flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_kepler_spelling_computes_the_same_values(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", KEPLER)
    # the host's __sinf is sinf (FAST_MATH 1 checks the rewrite here, the gate the device's)
    _same_results(kf, KEPLER, MIXES["kepler"], "y", prepended("#define __sinf(v) sinf(v)\n"),
                  tmp_path / "runs", host_flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_digamma_f64s_lift_computes_the_same_values(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(DIGAMMA)
    _same_results(kf, kf.baseline.render({}, "fp32").source, MIXES["digamma"], "psi",
                  held_back_unseen9.host_source, tmp_path, host_flags)
