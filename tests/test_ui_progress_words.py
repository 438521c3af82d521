"""One budget wording ("N more, M stored"), an ETA only while it means something, a full
bar for an exhausted space, and a replay's unrecorded configs apart from "pruned"
(issue 30, items 7 and 8). Pure: records in, text out."""

from __future__ import annotations

from workbench.core.budget_words import BudgetSplit, budget_words
from workbench.core.records import Config, Status, Timing, TrialResult
from workbench.core.trial_labels import NOT_IN_RECORDING, label_counts, status_label
from workbench.ui.figures import TrialTable
from workbench.ui.panel_text import eta_words, failures_html, progress_of


def _ok(i: int) -> TrialResult:
    t = Timing(median_us=5.0 + i, min_us=5.0, q1_us=5.0, q3_us=5.0, mean_us=5.0, reps=5,
               rse_median_pct=1.0, l2_flushed=True)
    return TrialResult(config=Config(BLOCK=32 << i), shape="s", dtype="bf16",
                       status=Status.OK, timing=t)


def _pruned(i: int, reason: str) -> TrialResult:
    return TrialResult(config=Config(BLOCK=32 << i), shape="s", dtype="bf16",
                       status=Status.PRUNED, reason=reason)


UNRECORDED = ("not in the recording silu.json (NVIDIA H100, 2026-01-01): never measured "
              "at s/bf16")
OVER_LIMIT = "block of 2048 threads exceeds the device's 1024"


def test_budget_counts_stored_and_says_how_many_more() -> None:
    assert budget_words(46, 18) == "46 more, 18 stored"
    assert BudgetSplit(64, 18).words == "46 more, 18 stored"
    assert BudgetSplit(4, 8).more == 0  # a store fuller than the budget: nothing more
    results = [_ok(i) for i in range(3)] + [_pruned(4, OVER_LIMIT)]
    p = progress_of(results, 10)
    assert (p.done, p.budget, p.label) == (3, 10, "7 more, 3 stored")  # pruned not counted
    assert progress_of(results, 0).label == "3 stored"


def test_exhausted_space_fills_the_bar() -> None:
    p = progress_of([_ok(i) for i in range(5)], 1030, exhausted=True)
    assert p.done == p.budget == 5
    assert "exhausted" in p.label and "5 stored" in p.label


def test_no_eta_while_paused_or_after_the_end() -> None:
    assert eta_words("running", 12.0, 30.4, 9) == "12 s running, ETA 30 s"
    assert eta_words("paused", 12.0, 30.0, 9) == "paused (12 s running)"
    assert "ETA" not in eta_words("running", 12.0, 0.2, 9)
    for end in ("finished (budget)", "finished (exhausted)", "stopping", "idle", "error"):
        assert "ETA" not in eta_words(end, 12.0, 0.0, 9)
    assert eta_words("finished (budget)", 12.0, 0.0, 9) == "9 evaluated"


def test_unrecorded_configs_are_labelled_apart_from_pruned() -> None:
    results = [_ok(0), _pruned(1, UNRECORDED), _pruned(2, UNRECORDED), _pruned(3, OVER_LIMIT)]
    assert status_label(results[1]) == NOT_IN_RECORDING
    assert status_label(results[3]) == "pruned"
    assert label_counts(results) == {"ok": 1, NOT_IN_RECORDING: 2, "pruned": 1}
    table = TrialTable(["BLOCK"])
    table.extend(results)
    assert table.snapshot().statuses == ("ok", NOT_IN_RECORDING, NOT_IN_RECORDING, "pruned")


def test_failures_list_each_config_once_per_line() -> None:
    old_reason = ("not in the recording x.json: config {'BLOCK': 64} at s/bf16 was never "
                  "measured")
    text = failures_html([_pruned(1, old_reason), _pruned(3, OVER_LIMIT)])
    lines = text.split("<li")[1:]
    assert len(lines) == 2
    assert lines[1].count("64") == 1, lines[1]  # the config once, not again in the reason
    assert NOT_IN_RECORDING in lines[1] and "<b>pruned</b>" in lines[0]
