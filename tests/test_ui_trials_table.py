"""The trial table: filter in the safe expression language, sort, status, limit."""

from __future__ import annotations

from workbench.core.records import Config, Status, Timing, TrialResult
from workbench.ui.figures import TrialTable
from workbench.ui.trials_table import TableQuery, select_rows, trials_html


def _trial(block: int, vec: int, us: float | None) -> TrialResult:
    timing = (Timing(median_us=us, min_us=us, q1_us=us, q3_us=us, mean_us=us, reps=5,
                     rse_median_pct=0.5, l2_flushed=True) if us else None)
    return TrialResult(config=Config(BLOCK=block, VEC=vec), shape="s", dtype="bf16",
                       status=Status.OK if us else Status.COMPILE_ERROR,
                       reason="" if us else "static assertion failed", timing=timing)


def _data():  # type: ignore[no-untyped-def]
    t = TrialTable(["BLOCK", "VEC"])
    t.extend([_trial(64, 4, 9.0), _trial(128, 8, 6.0), _trial(256, 3, None),
              _trial(512, 8, 7.5), _trial(1024, 4, 12.0)])
    t.baseline_us = 10.0
    return t.snapshot()


def test_default_is_fastest_first_valid_only() -> None:
    sel = select_rows(_data(), TableQuery())
    assert list(sel.rows) == [1, 3, 0, 4] and sel.matched == 4 and not sel.error


def test_filter_sort_desc_status_and_limit() -> None:
    data = _data()
    sel = select_rows(data, TableQuery(filter="VEC == 8 or speedup < 1", sort_by="BLOCK",
                                       descending=True))
    assert list(sel.rows) == [4, 3, 1]
    assert list(select_rows(data, TableQuery(status="failed")).rows) == [2]
    everything = select_rows(data, TableQuery(status="all", sort_by="median_us", limit=10))
    assert list(everything.rows)[-1] == 2  # no runtime sorts last
    assert list(select_rows(data, TableQuery(status="all", sort_by="median_us",
                                             descending=True)).rows)[-1] == 2
    assert list(select_rows(data, TableQuery(limit=2)).rows) == [1, 3]


def test_bad_filter_is_named_and_not_applied() -> None:
    sel = select_rows(_data(), TableQuery(filter="__import__('os')"))
    assert sel.error.startswith("filter not applied") and sel.matched == 4
    sel = select_rows(_data(), TableQuery(filter="NOPE > 1"))
    assert "NOPE" in sel.error


def test_html_has_caption_rows_and_speedup() -> None:
    text = trials_html(_data(), TableQuery(limit=2))
    assert "2 of 4 matching trials (5 in all)" in text
    assert text.count("<tr") == 3 and "1.667×" in text
    assert "no trial yet" in trials_html(TrialTable(["BLOCK"]).snapshot(), TableQuery())


def test_one_narrow_config_column_of_the_knobs_that_vary() -> None:
    """At 1280 px a column per knob pushed status, median, speedup and reason off-screen:
    one config column names the knobs that vary, the whole config in its tooltip."""
    table = TrialTable(["BLOCK", "VEC", "PDL", "UNROLL", "STAGES", "SPLIT"])
    for i in range(3):
        us = 5.0 + i
        t = Timing(median_us=us, min_us=us, q1_us=us, q3_us=us, mean_us=us, reps=5,
                   rse_median_pct=0.5, l2_flushed=True)
        table.add(TrialResult(config=Config(BLOCK=64 << i, VEC=4, PDL=0, UNROLL=2, STAGES=3,
                                            SPLIT=1), shape="s", dtype="bf16",
                              status=Status.OK, timing=t))
    text = trials_html(table.snapshot(), TableQuery())
    head = text.split("</tr>")[0]
    assert [h for h in ("config", "status", "median µs", "speedup", "reason") if h in head] \
        == ["config", "status", "median µs", "speedup", "reason"]
    assert "<th>VEC</th>" not in head
    assert '>BLOCK=64</td>' in text  # only the knob that varies
    assert 'title="BLOCK=64 VEC=4 PDL=0 UNROLL=2 STAGES=3 SPLIT=1"' in text
