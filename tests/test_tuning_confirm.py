"""The confirmation round after a search: the winner's curse, measured away (pure tier)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Candidate, Config, Status, Timing, TrialResult
from workbench.engine.conditions import ConditionUnavailable
from workbench.engine.tuning import Confirmation, build_report

pytestmark = pytest.mark.timeout(60)

SILU = Path(__file__).resolve().parent.parent / "sample_kernels" / "silu_and_mul"
A, B, C = Config(BLOCK=64), Config(BLOCK=128), Config(BLOCK=256)


def _result(config: Config, median_us: float, status: Status = Status.OK) -> TrialResult:
    timing = Timing(median_us=median_us, min_us=median_us * 0.98, q1_us=median_us * 0.99,
                    q3_us=median_us * 1.01, mean_us=median_us, reps=100, rse_median_pct=0.3,
                    l2_flushed=True) if status is Status.OK else None
    return TrialResult(config=config, shape="decode", dtype="bf16", status=status,
                       timing=timing, bytes_moved=1_000_000)


class LuckyRunner:
    """Answers each config's first measurement from ``first`` and every later one from
    ``truth``: a search that met a lucky draw, then honest re-measurements."""

    description = "lucky test runner"
    device = None

    def __init__(self, truth: dict[Config, float], first: dict[Config, float],
                 fail_later: frozenset[Config] = frozenset()) -> None:
        self.truth, self.first, self.fail_later = truth, first, fail_later
        self.seen: Counter[Config] = Counter()
        self.again = 0  # calls measuring again (a confirmation round)

    search_condition = "read"

    def baseline(self, shape: str, dtype: str, *,
                 condition: str | None = None) -> TrialResult:
        return _result(Config(), 10.0)

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        if condition not in (None, "read"):
            raise ConditionUnavailable(f"{self.description} measures under 'read' only",
                                       condition=condition)
        self.again += condition is not None and bool(candidates)
        return self._answers(candidates)

    def _answers(self, candidates: Sequence[Candidate]) -> Iterator[TrialResult]:
        for c in candidates:
            n = self.seen[c.config]
            self.seen[c.config] += 1
            if n and c.config in self.fail_later:
                yield _result(c.config, 0.0, Status.WRONG_RESULT)
                continue
            yield _result(c.config, self.first.get(c.config, self.truth[c.config]) if n == 0
                          else self.truth[c.config])

    def close(self) -> None:
        pass


class ReplayLike:
    """Same answers, but no way to measure again: every condition is refused."""

    description = "lucky test runner"
    device = None
    search_condition = "read"

    def __init__(self, truth: dict[Config, float], first: dict[Config, float]) -> None:
        self._inner = LuckyRunner(truth, first)
        self.baseline = self._inner.baseline

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        if condition is not None:
            raise ConditionUnavailable(f"{self.description} holds one measurement per config",
                                       condition=condition)
        return self._inner.measure(candidates)

    def close(self) -> None:
        pass


def _search(runner: LuckyRunner | ReplayLike) -> list[TrialResult]:
    return list(runner.measure([Candidate(c, "decode", "bf16") for c in (A, B, C)]))


def test_confirmation_chooses_by_round_one_and_reports_round_two() -> None:
    # A's first draw was lucky (4.0 us, truly 5.0); B is truly the fastest (4.5 us).
    runner = LuckyRunner(truth={A: 5.0, B: 4.5, C: 4.8}, first={A: 4.0})
    results = _search(runner)
    seen: list[tuple[int, Config, float | None]] = []
    report = build_report("silu_and_mul", "decode", "bf16", runner, results,
                              top=3, confirm=3,
                              on_confirm=lambda i, r: seen.append((i, r.config, r.median_us)))
    assert report.best is not None and report.best.config == A  # the search's own ranking is kept as measured
    conf = report.confirmation
    assert isinstance(conf, Confirmation)
    assert [r.config for r in conf.selection] == [A, B, C]  # the search ranked A, B, C
    assert conf.chosen.config == B and conf.chosen.median_us == 4.5
    assert conf.search_median_us == 4.5
    assert seen == [(1, A, 5.0), (1, B, 4.5), (1, C, 4.8), (2, B, 4.5)]
    assert runner.again == 2
    assert report.speedup is not None and report.speedup.speedup == pytest.approx(10.0 / 4.5)
    assert report.bandwidth_gb_per_s == pytest.approx(1_000_000 / 4.5e-6 / 1e9)
    assert "confirmed: the top 3 measured again" in report.summary()
    # without confirmation the lucky draw would have been the headline
    plain = build_report("silu_and_mul", "decode", "bf16",
                             LuckyRunner(truth={A: 5.0, B: 4.5, C: 4.8}, first={A: 4.0}),
                             results, top=3)
    assert plain.confirmation is None and plain.speedup is not None
    assert plain.speedup.speedup == pytest.approx(10.0 / 4.0)


def test_a_runner_that_cannot_measure_again_says_so() -> None:
    runner = ReplayLike(truth={A: 5.0, B: 4.5, C: 4.8}, first={A: 4.0})
    report = build_report("silu_and_mul", "decode", "bf16", runner,
                              _search(runner), confirm=3)
    assert report.confirmation is None
    assert "cannot measure again" in report.confirm_note
    assert "not confirmed: lucky test runner cannot measure again" in report.summary()
    assert report.speedup is not None and report.speedup.speedup == pytest.approx(10.0 / 4.0)


def test_finalists_failing_again_are_skipped_and_reported() -> None:
    runner = LuckyRunner(truth={A: 5.0, B: 4.5, C: 4.8}, first={A: 4.0},
                         fail_later=frozenset({B}))
    report = build_report("silu_and_mul", "decode", "bf16", runner,
                              _search(runner), confirm=3)
    assert report.confirmation is not None
    assert report.confirmation.chosen.config == C  # B failed verification in round 1
    everything_fails = LuckyRunner(truth={A: 5.0, B: 4.5, C: 4.8}, first={},
                                   fail_later=frozenset({A, B, C}))
    report = build_report("silu_and_mul", "decode", "bf16", everything_fails,
                              _search(everything_fails), confirm=3)
    assert report.confirmation is None
    assert report.confirm_note.startswith("no finalist passed verification again: wrong_result")


def test_workbench_tune_confirms_and_stores_both_rounds(tmp_path: Path) -> None:
    from workbench.api import Workbench
    from workbench.testing.synthetic_runner import SyntheticRunner

    folder = load_kernel_folder(SILU)
    wb = Workbench(folder, store=tmp_path / "s.sqlite", runner=SyntheticRunner(folder))
    outcome = wb.tune("decode", "bf16", strategy="random", budget=12, confirm=3)
    assert outcome.best is not None and outcome.confirmation is not None
    ranked = sorted((r for r in outcome.results if r.median_us), key=lambda r: r.median_us or 0)
    assert [r.config for r in outcome.confirmation.finalists] == [r.config for r in ranked[:3]]
    # the synthetic model answers the same every time, so the pick is the search's best time
    assert outcome.confirmed is not None
    assert outcome.confirmed.median_us == pytest.approx(outcome.best.median_us)
    stored = wb.store.remeasurements(wb.provenance(), shape="decode")
    assert [s.round_index for s in stored] == [1, 1, 1, 2]
    assert stored[-1].result.config == outcome.confirmed.config
    assert wb.store.count_trials(wb.provenance()) == len(outcome.results)


def test_workbench_tune_on_a_replay_notes_that_it_cannot_confirm(tmp_path: Path) -> None:
    from workbench.api import Workbench
    from workbench.engine.replay import ReplayRunner

    folder = load_kernel_folder(SILU)
    wb = Workbench(folder, store=tmp_path / "s.sqlite", runner=ReplayRunner(folder))
    outcome = wb.tune("decode", "bf16", strategy="random", budget=8)
    assert outcome.best is not None and outcome.confirmation is None
    assert "cannot measure again" in outcome.confirm_note
    assert wb.store.remeasurements() == []
    assert outcome.baseline_us is not None and outcome.best.median_us is not None
    assert outcome.speedup is not None
    # from the raw samples (tick-aware medians): within 0.1 % of the ratio of stored medians
    assert outcome.speedup.speedup == pytest.approx(outcome.baseline_us / outcome.best.median_us,
                                                    rel=1e-3)
