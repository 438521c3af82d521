"""The tune summary as a compact table (issue 30 item 2): pure info object, pure HTML."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from workbench.core.conditions import CONDITIONS, ConditionTimes, choose
from workbench.core.records import Config, Status, Timing, TrialResult
from workbench.ui.tune_summary import SummaryInfo, changed_knobs, summary_html, summary_info


def _ok(config: Config, us: float) -> TrialResult:
    t = Timing(median_us=us, min_us=us, q1_us=us, q3_us=us, mean_us=us, reps=5,
               rse_median_pct=1.0, l2_flushed=True)
    return TrialResult(config=config, shape="decode", dtype="bf16", status=Status.OK, timing=t)


@dataclass(frozen=True)
class _Report:  # the TuneReport fields the summary reads
    kernel: str
    shape: str
    dtype: str
    reason: str
    results: tuple[TrialResult, ...]
    pick: TrialResult | None
    baseline_us: float | None
    speedup: Any
    pct_of_copy: float | None
    confirmation: Any = None
    notes: tuple[str, ...] = field(default=())


def test_pick_shows_only_the_knobs_that_differ_from_defaults() -> None:
    assert changed_knobs(Config(BLOCK=256, VEC=8, PDL=0), {"BLOCK": 256, "VEC": 4, "PDL": 0}) \
        == (("VEC", "8"),)


def test_summary_is_a_table_with_pick_speedup_interval_copy_and_conditions() -> None:
    conds = tuple(CONDITIONS)[:2]
    fast, slow = Config(BLOCK=256, VEC=8), Config(BLOCK=128, VEC=8)
    pick = choose([ConditionTimes("a", fast, {conds[0]: 4.0, conds[1]: 5.0}),
                   ConditionTimes("b", slow, {conds[0]: 4.5, conds[1]: 12.0})],
                  ConditionTimes("baseline", None, {conds[0]: 8.0, conds[1]: 10.0}), conds)
    confirmation = SimpleNamespace(conditions=SimpleNamespace(selection=pick, reported=pick))
    pruned = TrialResult(config=slow, shape="decode", dtype="bf16", status=Status.PRUNED,
                         reason="not in the recording r.json: never measured at decode/bf16")
    report = _Report("silu_and_mul", "decode", "bf16", "budget",
                     (_ok(fast, 4.0), _ok(slow, 4.5), pruned), _ok(fast, 4.0), 8.0,
                     SimpleNamespace(speedup=2.0, low=1.9, high=2.1, confidence=0.95), 71.25,
                     confirmation)
    info = summary_info(report, {"BLOCK": 256, "VEC": 4})
    assert info.pick_changes == (("VEC", "8"),)
    assert dict(info.counts) == {"ok": 2, "not in recording": 1}
    text = summary_html(info)
    assert '<table class="wb-summary-table">' in text
    assert "VEC=8" in text and "BLOCK=256" not in text.split("wb-summary-conditions")[0]
    assert "2.000×" in text and "95 % CI 1.900–2.100" in text
    assert "71.2 %" in text
    cond_table = text.split('class="wb-summary-conditions"')[1]
    assert all(c in cond_table for c in conds)
    assert cond_table.count("<tr") == 4  # header, baseline, two finalists
    assert "wb-picked" in cond_table and "\n" not in text  # no run-on text block


def test_summary_renders_without_speedup_or_conditions() -> None:
    text = summary_html(SummaryInfo(kernel="k", shape="s", dtype="f32", reason="exhausted",
                                    pick_changes=()))
    assert "the template&#x27;s defaults" in text and "wb-summary-conditions" not in text


def test_a_pick_slower_than_the_kernel_as_written_says_keep_the_kernel() -> None:
    # nhwc_conv5x5_c3to4 on the H200 (2026-11-29): the template's pick 0.90x (CI 0.898-0.900)
    slow = summary_html(SummaryInfo(kernel="k", shape="s", dtype="f32", reason="budget",
                                    pick_changes=(), speedup=0.90, speedup_low=0.898,
                                    speedup_high=0.900))
    assert "wb-summary-slower" in slow and "keep the kernel as written" in slow
    # an interval that reaches 1 is no verdict (within noise of the baseline), nor a win
    for low, high in ((0.97, 1.01), (1.2, 1.3)):
        text = summary_html(SummaryInfo(kernel="k", shape="s", dtype="f32", reason="budget",
                                        pick_changes=(), speedup=(low + high) / 2,
                                        speedup_low=low, speedup_high=high))
        assert "wb-summary-slower" not in text


def test_the_speedup_interval_says_slower_only_below_one() -> None:
    from workbench.engine.bench import SpeedupInterval
    assert SpeedupInterval(0.9, 0.89, 0.91, 0.95).slower
    assert not SpeedupInterval(0.99, 0.97, 1.0, 0.95).slower
    assert not SpeedupInterval(1.5, 1.4, 1.6, 0.95).slower
