"""Benchmark settings and the pure statistics behind every timing.

The GPU worker (:mod:`workbench.engine.gpu_session`) does the measuring with the timing loop
of :mod:`workbench.engine.timing_loop` (where the fixed measurement protocol is described);
this module holds what can be checked without a GPU: the settings a user sets, the stopping
rule, robust summaries of the repetition times, and a speedup confidence interval from two
samples. Both timers read the GPU timer, which steps by 32 ns on the H100 (the worker
measures the step); with that step the median and its error are tick-aware
(:func:`grouped_median`, :func:`median_standard_error`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from workbench.core.errors import WorkbenchError
from workbench.core.picks import slower_than_baseline
from workbench.core.records import Timing

#: Repetition times in microseconds: a sequence or a 1-d array.
Samples = Sequence[float] | np.ndarray

#: What a repetition's time is: the CUDA event pair around the launch, or the kernel's own
#: duration from CUPTI's activity records of the same launch. "auto" (the default) is
#: CUPTI where the GPU worker can load libcupti (CUDA 13+), else events; a LocalRunner
#: resolves it when its worker starts (:func:`resolve_timer`) and reports which it chose.
TIMERS = ("auto", "events", "cupti")

#: Settings fields added after recordings were made, with the value those recordings were
#: measured with: a stored settings dict without the field means that value.
LEGACY_DEFAULTS: dict[str, Any] = {"timer": "events"}

#: Fields earlier versions had, with the value every measurement then used by default and
#: every measurement uses now (the protocol of :mod:`workbench.engine.timing_loop`; the
#: research runs that varied them are in benchmarks/notes/findings.md). A stored settings dict
#: naming one reads back at this value; at another it describes a research run this
#: version cannot repeat, and :meth:`BenchSettings.from_dict` says so.
RETIRED_FIELDS: dict[str, Any] = {
    "flush_method": "read", "host_gate": True, "tail_reps": 6, "placements": 8,
    "scatter_placements": False, "windows": 1, "window_gap_ms": 0.0, "carveout": "driver",
    "l2_flush_bytes": 0, "graph_launches": 0}

#: The tick-aware median groups samples by the clock's tick only up to this tick (us): the
#: GPU timer of the H100 ticks every 0.032 us; a coarse clock is left to the plain median.
MAX_GROUPING_TICK_US = 0.25


@dataclass(frozen=True)
class BenchSettings:
    """How one candidate is timed: what a user sets. Times in the unit named by each field.

    ``timer``, ``flush_l2`` (a cold L2 before every repetition, or hot-cache mode),
    ``target_rse_pct``, ``max_time_s`` and ``batch_reps`` shape a measurement;
    ``warmup_ms``, ``min_reps`` / ``max_reps`` bound it and ``timeout_s`` is the watchdog
    (short in tests and quick checks). Everything else about how a repetition is timed is
    fixed (:mod:`workbench.engine.timing_loop`); the cache conditions of a confirmation round
    are named per request (:mod:`workbench.engine.conditions`), not set here."""

    warmup_ms: float = 5.0
    min_reps: int = 10
    max_reps: int = 1000
    max_time_s: float = 0.5           # timing budget per candidate (verification excluded)
    target_rse_pct: float = 0.5       # stop once the median's relative standard error is this low
    flush_l2: bool = True             # False = hot-cache mode (see the timing loop)
    timeout_s: float = 10.0           # watchdog: one candidate's evaluation must finish in this
    batch_reps: int = 16              # repetitions enqueued between host synchronisations
    timer: str = "auto"               # "auto", "events" or "cupti" (kernel durations; the
                                      # event pairs are kept too); see TIMERS

    def __post_init__(self) -> None:
        problems: list[tuple[str, object, str]] = []
        if self.warmup_ms < 0:
            problems.append(("warmup_ms", self.warmup_ms, ">= 0"))
        if self.min_reps < 3:
            problems.append(("min_reps", self.min_reps, ">= 3"))
        if self.max_reps < self.min_reps:
            problems.append(("max_reps", self.max_reps, f">= min_reps ({self.min_reps})"))
        if self.max_time_s <= 0:
            problems.append(("max_time_s", self.max_time_s, "> 0"))
        if self.target_rse_pct <= 0:
            problems.append(("target_rse_pct", self.target_rse_pct, "> 0"))
        if self.timeout_s <= self.max_time_s:
            problems.append(("timeout_s", self.timeout_s, f"> max_time_s ({self.max_time_s})"))
        if self.batch_reps < 1:
            problems.append(("batch_reps", self.batch_reps, ">= 1"))
        if self.timer not in TIMERS:
            problems.append(("timer", self.timer, f"one of {TIMERS}"))
        if problems:
            key, value, expected = problems[0]
            raise WorkbenchError(f"BenchSettings.{key} = {value!r}; expected {expected}",
                                 key=key, value=value, expected=expected)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BenchSettings:
        """Settings from :meth:`to_dict` output (or a recording's ``bench``). Fields missing
        from an older dict take :data:`LEGACY_DEFAULTS` (what was measured then); a retired
        field is accepted at the value the protocol fixes (:data:`RETIRED_FIELDS`) and
        refused, naming it, at any other; other unknown keys are ignored."""
        for key, fixed in RETIRED_FIELDS.items():
            if key in data and data[key] != fixed:
                raise WorkbenchError(
                    f"BenchSettings.{key} = {data[key]!r} was a research setting and is no "
                    f"longer one: every measurement uses {fixed!r} (benchmarks/notes/findings.md)",
                    key=key, value=data[key], expected=fixed)
        known = set(cls.__dataclass_fields__)
        return cls(**{**LEGACY_DEFAULTS, **{k: v for k, v in data.items() if k in known}})


def resolve_timer(settings: BenchSettings, cupti_error: str | None) -> tuple[BenchSettings, str]:
    """The settings with ``timer="auto"`` made concrete, and a sentence saying why.

    ``cupti_error`` is ``None`` when the GPU worker loaded libcupti, else why it could not.
    An explicit ``timer="cupti"`` without a usable libcupti is an error (naming why), not a
    silent switch to events.
    """
    if settings.timer == "events":
        return settings, "events: asked for"
    if cupti_error is None:
        why = "asked for" if settings.timer == "cupti" else "auto: libcupti loaded"
        return replace(settings, timer="cupti"), f"cupti: {why}"
    if settings.timer == "cupti":
        raise WorkbenchError(f"timer='cupti' needs libcupti in the GPU worker: {cupti_error}",
                             key="timer", value="cupti", expected="a loadable libcupti")
    return replace(settings, timer="events"), f"events: auto, no usable libcupti ({cupti_error})"


def _sorted(samples_us: Samples) -> np.ndarray:
    arr = np.sort(np.asarray(samples_us, dtype=np.float64))
    if arr.size == 0:
        raise WorkbenchError("no samples", key="samples_us", value=0, expected=">= 1 sample")
    return arr


def median(samples_us: Samples, tick_us: float = 0.0) -> float:
    """Median of the samples; with the clock's ``tick_us`` the tick-aware
    :func:`grouped_median`."""
    arr = _sorted(samples_us)
    if _groups(tick_us):
        return grouped_median(arr, tick_us)
    return float(np.median(arr))


def _groups(tick_us: float) -> bool:
    return 0.0 < tick_us <= MAX_GROUPING_TICK_US


def _tick_bins(arr: np.ndarray, tick_us: float) -> tuple[np.ndarray, int]:
    """Counts of sorted samples per occupied tick, in order, and the index of the tick that
    holds the middle sample. Only occupied ticks are counted (an outlier far out, a hung
    repetition, adds one entry, not an array spanning the distance)."""
    _, counts = np.unique(np.rint((arr - arr[0]) / tick_us).astype(np.int64),
                          return_counts=True)
    return counts, int(np.searchsorted(np.cumsum(counts), arr.size / 2.0))


def grouped_median(samples_us: Samples, tick_us: float) -> float:
    """The median of samples read off a clock that advances in steps of ``tick_us``.

    GPU timestamps (CUDA events and CUPTI records alike) advance in 32 ns steps on the
    H100, so the durations of a 2 us kernel fall on a handful of values 1.6 % apart, and
    the sample median is one of them: which one flips with a small change in the share of
    samples on either side. Two fresh workers timing the same 2 us kernel 400 times came
    out one tick apart (1.6 %) although the distributions barely differed. Here each
    sample stands for an interval one tick wide around its value, and the median is
    interpolated inside the interval that holds the middle sample (the textbook median of
    grouped data): it moves smoothly with the share instead of jumping a tick. On the
    H100 (top 5 configs of the three sample kernels at three shapes, 400 CUPTI durations
    each in 3 fresh workers) the configs whose workers agreed within 1 % went from 40 to
    45 of 45 with this median (benchmarks/notes/findings.md).
    With every sample on one value, that value.
    """
    arr = _sorted(samples_us)
    if not tick_us > 0:
        raise WorkbenchError(f"tick_us = {tick_us!r}; expected > 0", key="tick_us",
                             value=tick_us, expected="> 0")
    counts, j = _tick_bins(arr, tick_us)
    below = int(counts[:j].sum())
    members = arr[below:below + int(counts[j])]
    lower_edge = float(members.mean()) - tick_us / 2.0
    return lower_edge + (arr.size / 2.0 - below) / float(counts[j]) * tick_us


def quartiles(samples_us: Samples) -> tuple[float, float, float]:
    """(q1, median, q3), linear interpolation between order statistics."""
    q1, q2, q3 = np.percentile(_sorted(samples_us), [25.0, 50.0, 75.0])
    return float(q1), float(q2), float(q3)


def median_standard_error(samples_us: Samples, tick_us: float = 0.0) -> float:
    """Standard error of the median: the larger of two estimates (three with a tick).

    * Order statistics (distribution-free): the rank of the population median among n
      samples is Binomial(n, 1/2), standard deviation sqrt(n)/2; half the distance between
      the order statistics one such deviation either side of the middle estimates one
      standard error.
    * Spread (asymptotic): sqrt(pi/2) * sigma / sqrt(n) with sigma = IQR / 1.349.

    The first alone collapses when the CUDA event clock's ~32 ns ticks make the middle
    samples of a few-microsecond kernel equal: on the H100, 10-30 repetitions of a 5 us
    kernel with a 10 % per-repetition spread claimed a 0 % error and stopped. The second
    does not.
    * With the clock's ``tick_us`` (the :func:`grouped_median`'s estimate): the density at
      the median is the share of samples in its tick over the tick, so one standard error
      is ``tick * sqrt(n) / (2 * count)``; when every sample shows the same value it is at
      least ``tick / sqrt(12)`` (nothing places the time inside the tick).
    Returns ``inf`` for fewer than 3 samples.
    """
    arr = _sorted(samples_us)
    n = arr.size
    if n < 3:
        return math.inf
    half_width = math.sqrt(n) / 2.0
    lo = max(0, math.floor(n / 2.0 - half_width))
    hi = min(n - 1, math.ceil(n / 2.0 + half_width) - 1)
    order = float(arr[hi] - arr[lo]) / 2.0
    q1, q3 = np.percentile(arr, [25.0, 75.0])
    spread = math.sqrt(math.pi / 2.0) * float(q3 - q1) / 1.349 / math.sqrt(n)
    if not _groups(tick_us):
        return max(order, spread)
    counts, j = _tick_bins(arr, tick_us)
    grouped = tick_us * math.sqrt(n) / (2.0 * float(counts[j]))
    if counts.size == 1:
        grouped = max(grouped, tick_us / math.sqrt(12.0))
    return max(order, spread, grouped)


def rse_median_pct(samples_us: Samples, tick_us: float = 0.0) -> float:
    """Relative standard error of the median, in percent (``inf`` when undefined)."""
    med = median(samples_us, tick_us)
    se = median_standard_error(samples_us, tick_us)
    if med <= 0 or math.isinf(se):
        return math.inf
    return 100.0 * se / med


def should_stop(samples_us: Samples, elapsed_s: float, settings: BenchSettings,
                tick_us: float = 0.0) -> bool:
    """The stopping rule: enough reps and a precise median, or a budget is spent."""
    n = len(samples_us)
    if n >= settings.max_reps or elapsed_s >= settings.max_time_s:
        return n >= 1
    if n < settings.min_reps:
        return False
    return rse_median_pct(samples_us, tick_us) <= settings.target_rse_pct


def summarize(samples_us: Samples, *, l2_flushed: bool, sm_clock_mhz: int | None = None,
              mem_clock_mhz: int | None = None, temperature_c: int | None = None,
              throttled: bool | None = None, tick_us: float = 0.0) -> Timing:
    """A :class:`Timing` (median, min, quartiles, mean, reps, RSE) from raw repetition times;
    with the clock's ``tick_us`` the median is the tick-aware :func:`grouped_median`."""
    arr = _sorted(samples_us)
    q1, _, q3 = quartiles(arr)
    rse = rse_median_pct(arr, tick_us)
    return Timing(median_us=median(arr, tick_us), min_us=float(arr[0]), q1_us=q1, q3_us=q3,
                  mean_us=float(arr.mean()), reps=int(arr.size),
                  rse_median_pct=rse if math.isfinite(rse) else 100.0,
                  l2_flushed=l2_flushed, sm_clock_mhz=sm_clock_mhz, mem_clock_mhz=mem_clock_mhz,
                  temperature_c=temperature_c, throttled=throttled)


@dataclass(frozen=True)
class SpeedupInterval:
    """Speedup of a candidate over a reference (ratio of medians) with a bootstrap interval."""

    speedup: float
    low: float
    high: float
    confidence: float

    def __str__(self) -> str:
        pct = round(self.confidence * 100)
        return f"{self.speedup:.3f}x ({pct}% CI {self.low:.3f}-{self.high:.3f})"

    @property
    def slower(self) -> bool:
        """Whether the candidate is slower than the reference beyond the interval (its
        whole interval below 1)."""
        return slower_than_baseline(self.high)


def speedup_interval(reference_us: Samples, candidate_us: Samples, *,
                     confidence: float = 0.95, resamples: int = 2000,
                     seed: int = 0, tick_us: float = 0.0) -> SpeedupInterval:
    """median(reference) / median(candidate) with a percentile-bootstrap interval.

    Both samples are resampled independently (they come from separate timing loops).
    With the clock's ``tick_us`` the medians are tick-aware (:func:`grouped_median`).
    Deterministic for a given ``seed``.
    """
    ref = _sorted(reference_us)
    cand = _sorted(candidate_us)
    if not 0 < confidence < 1:
        raise WorkbenchError(f"confidence {confidence} not in (0, 1)", key="confidence",
                             value=confidence, expected="0 < confidence < 1")
    rng = np.random.default_rng(seed)

    def boot(arr: np.ndarray) -> np.ndarray:
        draws = rng.choice(arr, size=(resamples, arr.size), replace=True)
        if not _groups(tick_us):
            return np.median(draws, axis=1)
        return np.array([grouped_median(row, tick_us) for row in draws])

    ratios = boot(ref) / boot(cand)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(ratios, [alpha, 1.0 - alpha])
    return SpeedupInterval(speedup=median(ref, tick_us) / median(cand, tick_us),
                           low=float(low),
                           high=float(high), confidence=confidence)



@dataclass(frozen=True)
class CopyTiming:
    """A device-to-device copy timed like a kernel: the bandwidth ceiling for a problem.

    ``bytes_moved`` counts bytes read plus bytes written (2x the copied size), the same
    convention as a kernel's roofline bytes.
    """

    shape: str
    dtype: str
    bytes_moved: int
    timing: Timing
    samples_us: tuple[float, ...] = ()

    @property
    def median_us(self) -> float:
        return self.timing.median_us

    @property
    def bandwidth_gb_per_s(self) -> float:
        return self.bytes_moved / (self.timing.median_us * 1e-6) / 1e9

    def to_dict(self) -> dict[str, Any]:
        return {"shape": self.shape, "dtype": self.dtype, "bytes": self.bytes_moved,
                "median_us": self.timing.median_us, "timing": asdict(self.timing),
                "samples_us": list(self.samples_us)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CopyTiming:
        timing = data.get("timing") or {
            "median_us": data["median_us"], "min_us": data["median_us"],
            "q1_us": data["median_us"], "q3_us": data["median_us"],
            "mean_us": data["median_us"], "reps": 0, "rse_median_pct": 100.0,
            "l2_flushed": True}
        return cls(shape=str(data["shape"]), dtype=str(data["dtype"]),
                   bytes_moved=int(data["bytes"]), timing=Timing(**timing),
                   samples_us=tuple(float(x) for x in data.get("samples_us", ())))


def speedup_from_timings(reference: Timing, candidate: Timing, *,
                         confidence: float = 0.95) -> SpeedupInterval:
    """Speedup interval from summary statistics alone (when raw samples are not kept).

    Delta method: the ratio's relative standard error is the root sum of squares of the two
    medians' relative standard errors; the interval is normal at ``confidence``.
    """
    from statistics import NormalDist

    ratio = reference.median_us / candidate.median_us
    rel = math.hypot(reference.rse_median_pct, candidate.rse_median_pct) / 100.0
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    return SpeedupInterval(speedup=ratio, low=ratio * (1.0 - z * rel),
                           high=ratio * (1.0 + z * rel), confidence=confidence)
