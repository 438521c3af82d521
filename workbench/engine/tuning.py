"""Exhaustive tuning of one problem: every config of the space, the best few, and how they
compare with the baseline and with a device-to-device copy of the same bytes.

``workbench tune`` (CLI) runs a search and reports it with :func:`summarize_tuning`; both
work with any Runner (LocalRunner live, ReplayRunner from recordings).

The winner's curse: a search's best time is the minimum over hundreds of noisy medians, so
it is biased low and the ranking of near-ties is partly luck. With ``confirm=k`` a runner
that can measure again (``forget_measurements``) re-measures the k fastest configs twice
after the search: round 1 picks among them, round 2 measures the pick once more, and the
report's time, speedup and bandwidth come from round 2, a measurement the choice never saw.
A replay cannot measure again, so its report says so and keeps the search's numbers; where
its recording holds a confirmation of the search's best config (measured again in a fresh
worker after the sweep), the note gives that time beside the search's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from workbench.core.errors import SearchError
from workbench.core.kernel_folder import KernelFolder
from workbench.core.records import Candidate, Status, TrialResult
from workbench.engine.bench import (
    CopyTiming,
    SpeedupInterval,
    speedup_from_timings,
    speedup_interval,
)
from workbench.engine.runner import Runner


@dataclass(frozen=True)
class Confirmation:
    """The search's finalists measured again: round 1 chooses, round 2 is reported."""

    finalists: tuple[TrialResult, ...]   # the search's k fastest, fastest first
    selection: tuple[TrialResult, ...]   # round 1, in the finalists' order
    chosen: TrialResult                  # round 2 of the config round 1 found fastest

    @property
    def search_median_us(self) -> float | None:
        """What the search measured for the chosen config."""
        for f in self.finalists:
            if f.config == self.chosen.config:
                return f.median_us
        return None

    def summary(self) -> str:
        picked = " ".join(f"{r.median_us:.2f}" if r.median_us else r.status.value
                          for r in self.selection)
        searched = self.search_median_us
        return (f"  confirmed: the top {len(self.finalists)} measured again "
                f"(round 1: {picked} us); chosen {dict(self.chosen.config)}: "
                f"{self.chosen.median_us or 0:.2f} us in round 2"
                + (f" (the search measured {searched:.2f} us)" if searched else ""))


@dataclass(frozen=True)
class TuneReport:
    """What an exhaustive tune found for one (kernel, shape, dtype)."""

    kernel: str
    shape: str
    dtype: str
    runner: str                            # the runner's description
    best: tuple[TrialResult, ...]          # fastest ok results, fastest first
    baseline: TrialResult
    speedup: SpeedupInterval | None        # baseline median / best median, with a 95 % CI
    bandwidth_gb_per_s: float | None       # best: roofline bytes / median time
    baseline_bandwidth_gb_per_s: float | None
    copy: CopyTiming | None                # cuMemcpyDtoD of the same bytes, same method
    pct_of_copy: float | None              # best bandwidth as % of the copy's bandwidth
    evaluated: int
    status_counts: dict[str, int] = field(default_factory=dict)
    confirmation: Confirmation | None = None  # None: not asked for, or the runner can't
    confirm_note: str = ""                    # why there is no confirmation, when asked

    def summary(self) -> str:
        """A few lines for a terminal or a log."""
        lines = [f"{self.kernel} {self.shape}/{self.dtype} on {self.runner}: "
                 f"{self.evaluated} configs ({', '.join(f'{k} {v}' for k, v in sorted(self.status_counts.items()))})"]
        if self.baseline.timing:
            lines.append(f"  baseline  {self.baseline.timing.median_us:9.2f} us  "
                         f"{self.baseline_bandwidth_gb_per_s or 0:8.1f} GB/s")
        for r in self.best:
            assert r.timing is not None
            lines.append(f"  {r.timing.median_us:9.2f} us  {r.bandwidth_gb_per_s or 0:8.1f} GB/s"
                         f"  {dict(r.config)}")
        if self.confirmation is not None:
            lines.append(self.confirmation.summary())
        elif self.confirm_note:
            lines.append(f"  not confirmed: {self.confirm_note}")
        if self.speedup:
            lines.append(f"  speedup over baseline: {self.speedup}")
        if self.copy is not None and self.pct_of_copy is not None:
            lines.append(f"  device copy of the same bytes: {self.copy.median_us:.2f} us "
                         f"({self.copy.bandwidth_gb_per_s:.1f} GB/s); best reaches "
                         f"{self.pct_of_copy:.1f} % of it")
        return "\n".join(lines)


def _samples(result: TrialResult) -> list[float]:
    samples = result.extra.get("samples_us") if result.extra else None
    return [float(x) for x in samples] if samples else []


def tune_exhaustive(folder: KernelFolder, shape: str, dtype: str, runner: Runner, *,
                    top: int = 5,
                    on_result: Callable[[TrialResult], None] | None = None) -> TuneReport:
    """Measure every config of the folder's space at (shape, dtype) and report the best."""
    space = folder.space(shape, dtype, runner.device)
    candidates = [Candidate(config, shape, dtype) for config in space]
    results: list[TrialResult] = []
    for result in runner.measure(candidates):
        results.append(result)
        if on_result is not None:
            on_result(result)
    return summarize_tuning(folder, shape, dtype, runner, results, top=top)


def confirm_finalists(runner: Runner, finalists: Sequence[TrialResult], *,
                      on_result: Callable[[int, TrialResult], None] | None = None,
                      ) -> Confirmation | str:
    """Measure ``finalists`` twice more on ``runner``: round 1 chooses, round 2 reports.

    ``on_result(round_index, result)`` sees every re-measurement as it arrives (to store it).
    Returns the Confirmation, or a sentence saying why there is none (a runner that answers
    from memory or a recording, or no finalist passing round 1)."""
    def seen(round_index: int, result: TrialResult) -> TrialResult:
        if on_result is not None:
            on_result(round_index, result)
        return result

    forget = getattr(runner, "forget_measurements", None)
    if not callable(forget):
        return (f"{runner.description} cannot measure again (it answers from its recording)"
                + _recorded_confirmation_note(runner, finalists))
    if not finalists:
        return "no finalists"
    candidates = [Candidate(r.config, r.shape, r.dtype) for r in finalists]
    forget()
    by_config = {r.config: seen(1, r) for r in runner.measure(candidates)}
    selection = tuple(by_config[c.config] for c in candidates if c.config in by_config)
    timed = [r for r in selection if r.status is Status.OK and r.timing is not None]
    if not timed:
        return "no finalist passed verification again: " + ", ".join(
            f"{r.status.value} {r.reason}" for r in selection)[:300]
    pick = min(timed, key=lambda r: r.timing.median_us if r.timing else float("inf"))
    forget()
    again = [seen(2, r) for r in runner.measure([Candidate(pick.config, pick.shape, pick.dtype)])]
    if not again or again[0].status is not Status.OK or again[0].timing is None:
        why = f"{again[0].status.value} {again[0].reason}" if again else "no result"
        return f"the chosen config failed its second measurement: {why}"
    return Confirmation(finalists=tuple(finalists), selection=selection, chosen=again[0])


def _recorded_confirmation_note(runner: Runner, finalists: Sequence[TrialResult]) -> str:
    """``; the recording's confirmation ...`` when the runner has one for the best finalist."""
    recorded = getattr(runner, "recorded_confirmation", None)
    if not callable(recorded) or not finalists or finalists[0].median_us is None:
        return ""
    best = finalists[0]
    again = recorded(best.config, best.shape, best.dtype)
    if again is None or again.status is not Status.OK or not again.median_us:
        return ""
    return (f"; the recording's own confirmation (measured again in a fresh worker after the "
            f"sweep) has the search's best config at {again.median_us:.2f} us, the search "
            f"{best.median_us:.2f} us ({100 * (again.median_us / best.median_us - 1):+.1f} %)")


def summarize_tuning(folder: KernelFolder, shape: str, dtype: str, runner: Runner,
                     results: Sequence[TrialResult], *, top: int = 5, confirm: int = 0,
                     on_confirm: Callable[[int, TrialResult], None] | None = None,
                     ) -> TuneReport:
    """The report of a finished search: best configs, speedup with a 95 % interval over the
    baseline, bandwidth and % of a device copy of the same bytes (both from ``runner``).

    ``confirm=k`` re-measures the k fastest configs (see the module docstring); the speedup,
    bandwidth and % of copy then come from the confirmed measurement. ``on_confirm`` sees
    each re-measurement with its round (1 or 2) as it arrives."""
    baseline = runner.baseline(shape, dtype)
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    ok = sorted((r for r in results if r.status is Status.OK and r.timing is not None),
                key=lambda r: r.timing.median_us if r.timing else float("inf"))
    if not ok:
        raise SearchError(f"no config of {folder.name} at {shape}/{dtype} verified and timed "
                          f"({counts})", shape=shape, dtype=dtype, status_counts=counts)
    best = tuple(ok[:top])
    confirmation: Confirmation | None = None
    note = ""
    if confirm > 0:
        got = confirm_finalists(runner, ok[:confirm], on_result=on_confirm)
        confirmation, note = (got, "") if isinstance(got, Confirmation) else (None, got)
    headline = confirmation.chosen if confirmation is not None else best[0]
    speedup = None
    base_samples, best_samples = _samples(baseline), _samples(headline)
    if base_samples and best_samples:
        tick = float(headline.extra.get("clock_tick_us") or 0.0)
        speedup = speedup_interval(base_samples, best_samples, tick_us=tick)
    elif baseline.timing is not None and headline.timing is not None:
        speedup = speedup_from_timings(baseline.timing, headline.timing)
    copy_fn = getattr(runner, "copy_timing", None)
    copy = copy_fn(shape, dtype) if callable(copy_fn) else None
    best_bw = headline.bandwidth_gb_per_s
    pct = 100.0 * best_bw / copy.bandwidth_gb_per_s if (copy is not None and best_bw) else None
    return TuneReport(kernel=folder.name, shape=shape, dtype=dtype, runner=runner.description,
                      best=best, baseline=baseline, speedup=speedup, bandwidth_gb_per_s=best_bw,
                      baseline_bandwidth_gb_per_s=baseline.bandwidth_gb_per_s, copy=copy,
                      pct_of_copy=pct, evaluated=len(results), status_counts=counts,
                      confirmation=confirmation, confirm_note=note)
