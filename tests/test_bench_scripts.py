"""Benchmark scripts pair a runner's results with their configs by config, not position:
``Runner.measure`` yields results when ready, in any order."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from workbench.core.records import Candidate, Config, Status, TrialResult

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "timing"))

pytestmark = pytest.mark.timeout(60)


class _ReversingRunner:
    """Answers every batch in reverse order (as a compile finishing late would), noting the
    condition each call asked for."""

    search_condition = "read"

    def __init__(self) -> None:
        self.conditions: list[str | None] = []

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        self.conditions.append(condition)
        for c in reversed(list(candidates)):
            yield TrialResult(config=c.config, shape=c.shape, dtype=c.dtype, status=Status.OK,
                              reason=f"measured {dict(c.config)}")


def test_repeatability_pairs_results_with_their_configs_not_their_positions() -> None:
    import repeatability

    cands = [Candidate(Config(BLOCK=b), "decode", "bf16") for b in (64, 128, 256)]
    runner = _ReversingRunner()
    got = repeatability._in_order(runner, cands)  # type: ignore[arg-type]
    assert [r.config for r in got] == [c.config for c in cands]
    repeatability._in_order(runner, cands, again=True)  # type: ignore[arg-type]
    assert runner.conditions == [None, "read"]  # a repeat times afresh, never recalls


def test_the_estimator_analysis_reproduces_from_the_committed_h100_samples() -> None:
    """benchmarks/timing/estimators.py on the committed 400-sample CUPTI run: the tick-aware
    median brings every top config's 3 fresh workers within 1 % where the sample median
    leaves 5 configs a tick apart (the numbers NOTES.md reports)."""
    import json

    import estimators

    doc = json.loads(estimators.RUN.read_text())
    cases = estimators.configs(doc, "cupti-400")
    assert len(cases) == 45 and all(len(w) == 3 and w[0].size == 400 for w in cases)
    at_400 = {r["estimator"]: r["within_1pct"] for r in estimators.fixed_reps(cases, [400])}
    assert at_400 == {"sample median": 40, "grouped median (tick-aware)": 45,
                      "25 % trimmed mean": 45}
    rules = {(r["target_rse_pct"], r["rule"]): r for r in estimators.replay_stopping(cases)}
    assert rules[(0.25, "tick-aware")]["within_1pct"] == 45
    assert rules[(0.25, "tick-blind")]["within_1pct"] == 40
    assert rules[(0.5, "tick-aware")]["within_1pct"] == 44


def test_sweep_recordings_keep_raw_samples_of_both_timers_only_for_the_fastest() -> None:
    sys.path.insert(0, str(ROOT / "gpu_checks"))
    import record_sweeps

    def trial(block: int, median_us: float) -> TrialResult:
        from workbench.core.records import Timing, TimingMethod

        timing = Timing(median_us=median_us, min_us=median_us, q1_us=median_us,
                        q3_us=median_us, mean_us=median_us, reps=3, rse_median_pct=0.1,
                        l2_flushed=True)
        return TrialResult(config=Config(BLOCK=block), shape="decode", dtype="bf16",
                           status=Status.OK, timing=timing, samples_us=(median_us,) * 3,
                           event_samples_us=(median_us + 3.0,) * 3,
                           method=TimingMethod(timer="cupti"))

    trials = [trial(b, float(b)) for b in (64, 128, 256, 512)]
    kept = record_sweeps.keep_samples_of_fastest(trials, Config(BLOCK=512), keep=2)
    raw = {t.config["BLOCK"]: [k for k in record_sweeps.RAW_SAMPLES if getattr(t, k)]
           for t in kept}
    both = ["samples_us", "event_samples_us"]
    assert raw == {64: both, 128: both, 256: [], 512: both}  # 512: the template default
    assert all(t.method is not None and t.method.timer == "cupti" for t in kept)


def test_repeatability_compares_with_the_recordings_confirmation_where_it_has_one() -> None:
    import repeatability

    from workbench.core.records import Timing
    from workbench.engine.recording import load_recording, recording_paths

    rec = load_recording(recording_paths(ROOT / "sample_kernels" / "merge_attn_states_lse")[0])
    swept = min((t for t in rec.trials if t.shape == "decode" and t.dtype == "bf16"
                 and t.status is Status.OK and t.timing),
                key=lambda t: t.median_us or 0.0)
    confirmed = rec.confirmed_result(swept.config, "decode", "bf16")
    assert swept.timing and confirmed and confirmed.median_us
    fresh_us = confirmed.median_us * 1.005
    fresh = TrialResult(config=swept.config, shape="decode", dtype="bf16", status=Status.OK,
                        timing=Timing(median_us=fresh_us, min_us=fresh_us, q1_us=fresh_us,
                                      q3_us=fresh_us, mean_us=fresh_us, reps=50,
                                      rse_median_pct=0.2, l2_flushed=True))
    row = repeatability._recording_row("merge_attn_states_lse", rec, swept, fresh)
    assert row["diff_pct"] == pytest.approx(0.5)
    assert row["diff_sweep_pct"] == pytest.approx(100 * (fresh_us / swept.timing.median_us - 1))
    # without a confirmation the sweep's median is what it is compared against
    from dataclasses import replace

    row = repeatability._recording_row("merge_attn_states_lse", replace(rec, confirmed=()),
                                       swept, fresh)
    assert row["confirmed_median_us"] is None and row["diff_pct"] == row["diff_sweep_pct"]


def test_merging_a_confirmation_refuses_another_template(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "gpu_checks"))
    import json

    import record_sweeps

    source = ROOT / "benchmarks/results/search/h100/sweep-confirmation-silu-and-mul-2026-11-24.json"
    doc = json.loads(source.read_text())
    doc["template_sha256"] = "0" * 64
    (tmp_path / "c.json").write_text(json.dumps(doc))
    with pytest.raises(SystemExit, match="measured for template 000000000000"):
        record_sweeps.merge_confirmed(tmp_path / "c.json")
