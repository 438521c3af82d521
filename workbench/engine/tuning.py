"""Exhaustive tuning of one problem: every config of the space, the best few, and how they
compare with the baseline and with a device-to-device copy of the same bytes.

``workbench tune`` (CLI) runs a search and reports it with :func:`summarize_tuning`; both
work with any Runner (LocalRunner live, ReplayRunner from recordings).
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


def summarize_tuning(folder: KernelFolder, shape: str, dtype: str, runner: Runner,
                     results: Sequence[TrialResult], *, top: int = 5) -> TuneReport:
    """The report of a finished search: best configs, speedup with a 95 % interval over the
    baseline, bandwidth and % of a device copy of the same bytes (both from ``runner``)."""
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
    speedup = None
    base_samples, best_samples = _samples(baseline), _samples(best[0])
    if base_samples and best_samples:
        speedup = speedup_interval(base_samples, best_samples)
    elif baseline.timing is not None and best[0].timing is not None:
        speedup = speedup_from_timings(baseline.timing, best[0].timing)
    copy_fn = getattr(runner, "copy_timing", None)
    copy = copy_fn(shape, dtype) if callable(copy_fn) else None
    best_bw = best[0].bandwidth_gb_per_s
    pct = 100.0 * best_bw / copy.bandwidth_gb_per_s if (copy is not None and best_bw) else None
    return TuneReport(kernel=folder.name, shape=shape, dtype=dtype, runner=runner.description,
                      best=best, baseline=baseline, speedup=speedup, bandwidth_gb_per_s=best_bw,
                      baseline_bandwidth_gb_per_s=baseline.bandwidth_gb_per_s, copy=copy,
                      pct_of_copy=pct, evaluated=len(results), status_counts=counts)
