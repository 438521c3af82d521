"""First contact with held-back set 13's Bessel series (issue 28): benchmarks/
corpus_compute_unseen13/bessel_i0_series sums I0's power series in double, a ``do ... while``
whose every term divides by ``(double)k * (double)k`` until the term falls below 1e-17 of the
sum. The lift had BLOCK_THREADS, ITEMS_PER_THREAD and MIN_BLOCKS_PER_SM (0.99x on the H100,
the expert 3.37x): the kernel is bound by FP64 throughput, the division is most of it, and
TABLE took only a counted ``for`` (a do-while was skipped without a word) while FAST_DIV
is fp32 only (a double division skipped without a word).

Now a loop with an open counter (table_open.py: a local int set to a constant before the
loop, stepped once a trip unconditionally, assigned nowhere else) that divides by a function
of the counter alone gets TABLE: ``1 / d(k)`` in a per-block shared table of entries up to
128, ``a / d(k)`` read as ``k <= 128 ? a * tab[k] : a / d(k)``, where the rule holds (a
double series of terms >= 0 summed by ``+=`` and stored as float); else a note names the
line. FAST_DIV notes a double division in a loop.

The expert's CHECK (its stopping test every 4 terms: 127 us against 184 us at every term on
the H100) is the rest of its lead: the shared loop ended every trip in each item's test and
the all-left branch, so the items' FP64 chains never ran together. CHECK_EVERY
(ilp_series_exit.py) repeats the trip CHECK_EVERY times between tests where the extra terms
are provably below the test's fraction of the sum (a series of non-growing ratio, its
convergence test the only exit, the counter unread and the sum only stored after the loop);
else a note names the line. Its second spelling here: cosh(x) summed before each term's
update, in a ``while`` on ``fabs(t) >= TOL * fabs(acc)`` inside an ``if`` guard.

Pure: the folder's rewrite and notes, a second spelling (``for (;;)`` with a ``break``, the
counter from 0, the divisor ``(2m + 2)(2m + 3)``, sinh(x)/x), a third whose series runs
past the table (exp(x^2 / 16), a ``while``, the divisor ``k``), the refusals. Host (g++): each
lift at its default, every all-ends config and mixes, against the kernel as written within
the folder's tolerance (TABLE 0 and CHECK_EVERY 1 bit for bit: the kernel as written).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen13
import numpy as np
import pytest
from held_back_harness import respelled
from helpers_templater import end_configs, host_sample, needs_gxx
from test_corpus_unseen3 import (
    _assert_same,
    _inputs,
    _run,
    folder_runs,
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen13.ROOT / "bessel_i0_series"
KNOBS = ("BLOCK_THREADS", "ITEMS_PER_THREAD", "CHECK_EVERY", "TABLE", "MIN_BLOCKS_PER_SM")

#: sinh(x) / x = sum x^2k / (2k + 1)!: a for (;;) leaving by a break, its counter from 0.
SINHC = """extern "C" __global__ void bessel_i0_series(float* __restrict__ y,
                                            const float* __restrict__ x, int n) {
  int idx = threadIdx.x + blockIdx.x * blockDim.x;
  if (idx < n) {
    const double xx = (double)x[idx] * (double)x[idx];
    double t = 1.0;
    double s = 1.0;
    int m = 0;
    for (;;) {
      t *= xx / ((double)(2 * m + 2) * (double)(2 * m + 3));
      s += t;
      m++;
      if (t <= 1e-17 * s) break;
    }
    y[idx] = (float)s;
  }
}
"""

#: exp(x^2 / 16) = sum (x^2 / 16)^k / k!: a ``while`` whose series runs past the table (about
#: 150 terms at |x| = 30 where the table holds 128), the divisor the counter itself.
EXPQ = """extern "C" __global__ void bessel_i0_series(float* __restrict__ y,
                                            const float* __restrict__ x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double v = (double)x[i];
  const double q = 0.0625 * (v * v);
  double term = 1.0, sum = 1.0;
  int k = 1;
  while (term > 1e-17 * sum) {
    term *= q / (double)k;
    sum += term;
    k += 1;
  }
  y[i] = (float)sum;
}
"""

#: cosh(x) = sum x^2n / (2n)!: each term added before the next is made, a ``while`` on
#: ``fabs``, a macro tolerance, the work under an ``if`` guard, the divisor in doubles.
COSH = """#define TOL 1.0e-16

extern "C" __global__ void bessel_i0_series(float* __restrict__ y, const float* __restrict__ x,
                                            int n) {
  int gid = blockDim.x * blockIdx.x + threadIdx.x;
  if (gid < n) {
    const double v = x[gid];
    const double z2 = v * v;
    double acc = 0.0, t = 1.0;
    int j = 0;
    while (fabs(t) >= TOL * fabs(acc)) {
      acc += t;
      t *= z2 / ((2.0 * j + 1.0) * (2.0 * j + 2.0));
      j++;
    }
    y[gid] = (float)(acc);
  }
}
"""

#: The folder's loop as a ``while``, with a change spliced in (see the refusals).
WHILE = """extern "C" __global__ void bessel_i0_series(float* __restrict__ y,
                                            const float* __restrict__ x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double half = 0.5 * (double)x[i];
  const double q = %(q)s;
  double term = 1.0, sum = 1.0;
  int k = 1;
  while (term > 1e-17 * sum) {
    term *= %(term)s;
    sum += term;
    %(step)s
  }
  y[i] = (float)sum;
}
"""
PLAIN = {"q": "half * half", "term": "q / ((double)k * (double)k)", "step": "++k;"}


def _lift(source: str) -> Any:
    return lift_kernel(source, entry="bessel_i0_series", grid=["ceil_div(n, 256)"],
                       block=["256"], scalars={"n": "n"})


def _note(notes: tuple[str, ...] | list[str], name: str) -> str:
    found = [n for n in notes if n.startswith(f"{name}: ")]
    assert len(found) == 1, notes
    return found[0]


def test_bessel_i0_series_reads_its_divisions_from_a_reciprocal_table() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    lifted = result.lifted
    assert tuple(p.name for p in lifted.params) == KNOBS, result.notes
    body = lifted.source.split("bessel_i0_series(float* __restrict__ y", 1)[1]
    # filled once a block, before the guard's return, entries 1 to 128
    assert body.index("__syncthreads();") < body.index("if (i[wb_it] >= n)")
    assert "__shared__ double wb_tab0_0[129];" in body
    assert "for (int k = 1 + threadIdx.x; k <= 128; k += blockDim.x) wb_tab0_0[k] = " \
        "1.0 / (((double)k * (double)k));" in body
    # the items share the counter (every live item is on the same trip): one factor a trip
    assert "int k = 1;" in body and "k[" not in body
    assert "term[wb_it] *= WB_TABLE((q[wb_it]) * (k <= 128 ? wb_tab0_0[k] : 1.0 / " \
        "(((double)k * (double)k))), q[wb_it] / ((double)k * (double)k));" in body
    assert _note(result.notes, "TABLE") == (
        "TABLE: applied: `q / ((double)k * (double)k)` as a product with 1 / (((double)k * "
        "(double)k)) from a table of 128 entries of the do-while loop's counter `k` (a "
        "double series of terms >= 0 stored as float) (line 17)")
    assert _note(result.notes, "FAST_DIV") == (
        "FAST_DIV: not applied: `q / ((double)k * (double)k)` is a double division (`q` "
        "is double): __fdividef is fp32 only (line 18)")


def test_the_series_tests_its_convergence_once_every_few_terms() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    body = result.lifted.source.split("while (true) {", 1)[1]
    group = body.index("for (int wb_chk = 0; wb_chk < CHECK_EVERY; ++wb_chk) {")
    # the trip (the shared counter's step too) CHECK_EVERY times, then each item's test once
    assert group < body.index("sum[wb_it] += term[wb_it];") < body.index("++k;") < body.index(
        "wb_done[wb_it] = wb_done[wb_it] | !(term[wb_it] > TERM_EPS * sum[wb_it]);")
    assert _note(result.notes, "CHECK_EVERY") == (
        "CHECK_EVERY: applied: the convergence test `term > 1e-17 * sum` once every "
        "CHECK_EVERY trips of the series loop (up to CHECK_EVERY - 1 extra terms, each at "
        "most 1e-17 of the sum: within one float rounding of the result) (line 17)")


def test_a_cosh_series_added_before_its_update_groups_its_test() -> None:
    lifted = _lift(COSH)
    assert {"CHECK_EVERY", "TABLE"} <= {p.name for p in lifted.params}, lifted.notes
    assert "the convergence test `t > 1e-16 * acc`" in _note(lifted.notes, "CHECK_EVERY")
    head, loop = lifted.source.split("while (true) {", 1)
    # a while tests first, as written, then once a group
    assert head.count("!(fabs(t[wb_it]) >= TOL * fabs(acc[wb_it]))") == 1
    assert loop.index("wb_chk < CHECK_EVERY") < loop.index("j++;") < loop.index(
        "!(fabs(t[wb_it]) >= TOL * fabs(acc[wb_it]))")


def test_a_for_ever_series_counting_from_zero_gets_the_table() -> None:
    lifted = _lift(SINHC)
    assert {"TABLE", "CHECK_EVERY"} <= {p.name for p in lifted.params}, lifted.notes
    head, loop = lifted.source.split("while (true) {", 1)
    # its break leaves after a group: no test before the first trip, none inside the group
    exit_test = "wb_done[wb_it] = wb_done[wb_it] | (bool)(t[wb_it] <= 1e-17 * s[wb_it]);"
    assert exit_test not in head and "break; }" not in loop
    assert loop.index("m++;") < loop.index(exit_test)
    assert "for (int m = 0 + threadIdx.x; m <= 128; m += blockDim.x) wb_tab0_0[m] = " \
        "1.0 / (((double)(2 * m + 2) * (double)(2 * m + 3)));" in lifted.source
    assert "the for loop's counter `m`" in _note(lifted.notes, "TABLE")


@pytest.mark.parametrize(("change", "why"), [
    ({"q": "-half * half"}, "the dividend `q` is not provably >= 0"),
    ({"term": "q / ((double)k * (double)k - 0.5)"},
     "the divisor `((double)k * (double)k - 0.5)` is not provably > 0"),
    ({"term": "(float)q / ((float)k * (float)k)"}, "is not a double division"),
    ({"step": "++k; sum -= 0.0;"}, "changes the sum `sum` by other than `+= term`"),
], ids=["signed_dividend", "signed_divisor", "fp32", "sum_subtracted"])
def test_a_series_the_rule_cannot_bound_is_refused_naming_the_line(change: dict[str, str],
                                                                    why: str) -> None:
    lifted = _lift(WHILE % {**PLAIN, **change})
    assert "TABLE" not in {p.name for p in lifted.params}
    note = _note(lifted.notes, "TABLE")
    assert note.startswith("TABLE: not applied: per-entry terms in a per-block table: ") \
        and why in note, note


@pytest.mark.parametrize(("change", "noted"), [
    ({"term": "q * (double)k"}, True),  # counted, but no division by the counter
    ({"term": "q * 0.25"}, False),  # the counter only counts the trips: no term of it
    ({"step": "k += (sum > 2.0) ? 1 : 1;"}, False),  # not stepped by a constant one
    ({"step": "if (sum > 2.0) ++k;"}, False),  # stepped under a test
], ids=["no_division", "trips_only", "stepped_by_a_value", "stepped_conditionally"])
def test_an_open_loop_with_no_table_is_noted_where_it_counts(change: dict[str, str],
                                                             noted: bool) -> None:
    lifted = _lift(WHILE % {**PLAIN, **change})
    assert "TABLE" not in {p.name for p in lifted.params}
    notes = [n for n in lifted.notes if n.startswith("TABLE: ")]
    if noted:
        assert notes == ["TABLE: not applied: per-entry terms in a per-block table: the "
                         "while loop counts `k` from 1 with no length (not a counted `for`): "
                         "its terms of the counter stay per step (line 9)"], notes
    else:
        assert not notes, notes


@pytest.mark.parametrize(("old", "new", "why", "at"), [
    ("while (term > TERM_EPS * sum);", "while (term > TERM_EPS * sum && sum < 1e30);",
     "joins the convergence test with another that is not one bound of a counter", 21),
    ("#define TERM_EPS 1e-17", "#define TERM_EPS 1e-7", "E is not a literal in (0, 1e-10]", 21),
    ("while (term > TERM_EPS * sum);", "while (term > TERM_EPS * q);",
     "the test's sum `q` is not the one sum of the chain `term`", 21),
    ("double term = 1.0, sum = 1.0;", "double term = 1.0, sum = 2.0;",
     "does not start at a literal >= the sum's start", 21),
    ("y[i] = (float)sum;", "y[i] = (float)(sum - 1.0);",
     "reads the sum `sum` other than into a store through casts", 22),
], ids=["not_a_counter_bound", "loose_eps", "other_sum", "sum_ahead", "cancels_after"])
def test_a_series_whose_extra_terms_are_unbounded_keeps_its_test(old: str, new: str, why: str,
                                                                 at: int) -> None:
    source = (FOLDER / "bessel_i0_series.cu").read_text()
    assert source.count(old) == 1
    lifted = _lift(source.replace(old, new))
    assert "CHECK_EVERY" not in {p.name for p in lifted.params}
    note = _note(lifted.notes, "CHECK_EVERY")
    assert note.startswith("CHECK_EVERY: not applied: the exit test once every few trips: ") \
        and why in note and note.endswith(f"(line {at})"), note


#: The counter read after the loop (each item's own): no series (its extra terms would step
#: it), so the exact reading groups the trips (ilp_guarded_trips: every trip tests each item's
#: header, an item that left keeps its state, k included).
COUNTER_AFTER = [("y[i] = (float)sum;", "y[i] = (float)(sum * (double)(k > 0));"),
                 ("y[i] = (float)sum;",
                  "const int terms = k;\n  y[i] = (float)(sum * (terms > 0));")]


@pytest.mark.parametrize(("old", "new"), COUNTER_AFTER, ids=["counter_after",
                                                            "counter_declared_after"])
def test_a_counter_read_after_its_loop_groups_its_trips_exactly(old: str, new: str) -> None:
    source = (FOLDER / "bessel_i0_series.cu").read_text()
    lifted = _lift(source.replace(old, new))
    assert "CHECK_EVERY" in {p.name for p in lifted.params}, lifted.notes
    note = _note(lifted.notes, "CHECK_EVERY")
    assert note.startswith("CHECK_EVERY: applied: CHECK_EVERY trips of the loop between its "
                           "checks that every item has left"), note


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize(("old", "new"), COUNTER_AFTER, ids=["counter_after",
                                                            "counter_declared_after"])
def test_a_counter_read_after_its_loop_computes_as_written(
        old: str, new: str, tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    source = (FOLDER / "bessel_i0_series.cu").read_text().replace(old, new)
    kf = respelled(FOLDER, tmp_path / "spelling", source)
    _same_results(kf, source, tmp_path / "runs", host_flags)


#: The folder's series cut at 20 terms by a bound of its counter (|x| > ~6 needs more):
#: the bound ends the loop on its trip as written, whatever the group.
BOUNDED = (FOLDER / "bessel_i0_series.cu").read_text().replace(
    "while (term > TERM_EPS * sum);", "while (term > TERM_EPS * sum && k < KMAX);").replace(
    "#define TERM_EPS 1e-17", "#define TERM_EPS 1e-17\n#define KMAX 20")


def test_a_bound_of_the_shared_counter_is_tested_before_every_trip() -> None:
    lifted = _lift(BOUNDED)
    assert "CHECK_EVERY" in {p.name for p in lifted.params}, lifted.notes
    assert "its counter's bound `k < KMAX` before every trip" in _note(lifted.notes,
                                                                       "CHECK_EVERY")
    loop = lifted.source.split("while (true) {", 1)[1]
    assert loop.index("wb_chk < CHECK_EVERY") < loop.index(
        "if (wb_chk > 0 && !(k < KMAX)) break;") < loop.index("sum[wb_it] += term[wb_it];")


def test_a_counter_read_after_its_loop_stays_each_items_own() -> None:
    source = (FOLDER / "bessel_i0_series.cu").read_text()
    shared = _lift(source).source
    # an item that left would see a shared counter run on: each keeps its own (read in a
    # store, or by a declaration after the loop: a helper's `return k;` inlined)
    assert "int k = 1;" in shared
    for read in ("y[i] = (float)(sum * (double)(k > 0));",
                 "const int terms = k;\n  y[i] = (float)(sum * (terms > 0));"):
        own = _lift(source.replace("y[i] = (float)sum;", read)).source
        assert "int k[ITEMS_PER_THREAD] = {};" in own and "++k[wb_it];" in own


MIXES = [{"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "CHECK_EVERY": 4, "TABLE": 1},
         {"BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 2, "CHECK_EVERY": 8, "TABLE": 1,
          "MIN_BLOCKS_PER_SM": 4}]


def _checked(template: Any, env: dict[str, Any]) -> list[dict[str, Any]]:
    """The default, every all-ends config and the mixes, each once (host_sample's share)."""
    space = template.space(env)
    default = dict(template.default_config())
    out: list[dict[str, Any]] = []
    for config in [default, *end_configs(template, env), *({**default, **m} for m in MIXES)]:
        assert space.rejection(config) is None, (config, space.rejection(config))
        if config not in out:
            out.append(config)
    return host_sample(out)


def _same_results(kf: KernelFolder, source: str, tmp_path: Path,
                  flags: tuple[str, ...]) -> None:
    """``kf``'s lift at :func:`_checked`'s configs against ``source`` as written on the
    host: TABLE 0 and CHECK_EVERY 1 bit for bit, else within the folder's tolerance."""
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = _checked(template, env)
    assert any(c["TABLE"] for c in configs) and any(c["CHECK_EVERY"] > 1 for c in configs)
    inputs = _inputs(kf)
    want = _run(kf, held_back_unseen13.host_source(source), kf.baseline.launch_for({}, env),
                inputs, tmp_path / "plain", flags)
    assert np.isfinite(want["y"]).all() and np.abs(want["y"]).max() > 1.5
    runs = [(held_back_unseen13.host_source(template.render(c, "fp32").source),
             template.launch_for(c, env)) for c in configs]
    for config, got in zip(configs, folder_runs(kf, runs, inputs, tmp_path / "lift"),
                           strict=True):
        if config["TABLE"] or config["CHECK_EVERY"] > 1:
            _assert_same(kf, got, want, str(config))
        else:
            assert np.array_equal(got["y"], want["y"]), config


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_lift_computes_the_series_at_the_ends_and_the_mixes(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER)
    _same_results(kf, kf.baseline.render({}, "fp32").source, tmp_path, host_flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_for_ever_spelling_computes_its_series(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", SINHC)
    _same_results(kf, SINHC, tmp_path / "runs", host_flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_a_series_longer_than_the_table_divides_past_it(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    assert "(q[wb_it]) * (k <= 128 ? wb_tab0_0[k] : 1.0 / ((double)k))" in _lift(EXPQ).source
    kf = respelled(FOLDER, tmp_path / "spelling", EXPQ)
    _same_results(kf, EXPQ, tmp_path / "runs", host_flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_cosh_spelling_computes_its_series(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", COSH)
    _same_results(kf, COSH, tmp_path / "runs", host_flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_series_cut_by_its_counter_stops_where_written(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "spelling", BOUNDED)
    _same_results(kf, BOUNDED, tmp_path / "runs", host_flags)
