"""Benchmark settings and the pure statistics behind every timing.

The GPU worker (:mod:`workbench.engine.worker`) does the measuring; this module holds what
can be checked without a GPU: the settings, the stopping rule, robust summaries of the
repetition times, and a speedup confidence interval from two samples.

Method (what the worker does with these settings):

* warm up for ``warmup_ms`` (at least two launches), so module load and clock ramp stay out;
* before each timed repetition restore ``inout`` arguments, then, when ``flush_l2`` is set,
  evict the L2 with a buffer of ``l2_flush_bytes`` (>= 2x the L2 size) so every repetition
  starts with a cold L2. ``flush_method="read"`` (default) reads the buffer, leaving the L2
  full of clean lines; ``"write"`` zeroes it, which leaves dirty lines whose write-back
  lands inside the next timed region (measured on the H100: small kernels 7-19 % slower).
  With ``flush_l2=False`` repetitions run back to back on a hot cache ("hot-cache mode":
  the inputs that fit in L2 stay there, which flatters small problems);
* one CUDA event pair around the single launch; with ``timer="cupti"`` (what ``"auto"``, the
  default, becomes where libcupti loads) the samples are the kernel's own durations from
  CUPTI activity records of the same launches (the event pairs are still recorded and
  reported beside them; see :mod:`workbench.engine.cupti`);
* each batch of ``batch_reps`` timed repetitions is followed by ``tail_reps`` identical
  untimed ones, so every timed repetition has the same work queued behind it: on the H100
  the last ~5 repetitions of a batch ran 5-10 % faster than the rest (a drained queue),
  which made small kernels' medians bimodal; with 6 tail repetitions the median by
  position in the batch is flat within 2 %;
* each batch is enqueued behind a *gate* kernel that spins
  until the host has enqueued the whole batch (``host_gate``), so the GPU runs the batch
  back to back and no host delay (Python, a busy CPU, a page fault) can fall between a
  start event and its launch. Without it a kernel of a few microseconds is timed together
  with whatever host time separates the two, which is how whole timing windows of small
  kernels came out 2-5x slow;
* repeat until the relative standard error of the median is at most ``target_rse_pct``
  (after ``min_reps``), or ``max_reps`` / ``max_time_s`` is reached. Both timers read the
  GPU timer, which steps by 32 ns on the H100 (the worker measures the step with
  ``wb_tick``); with that step the median and its error are tick-aware
  (:func:`grouped_median`, :func:`median_standard_error`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

import numpy as np

from workbench.core.errors import WorkbenchError
from workbench.core.records import Timing

#: Repetition times in microseconds: a sequence or a 1-d array.
Samples = Sequence[float] | np.ndarray

#: The L2 flush buffer is at least this many times the device's L2 size.
L2_FLUSH_FACTOR = 2

#: How the L2 is evicted between repetitions (see the module docstring).
FLUSH_METHODS = ("read", "write")

#: The shared-memory carveout (how the SM's unified L1/shared array is split) moves a
#: kernel's duration: on the H100 the same config measured 174.9 / 175.9 / 184.6 us
#: (fused_add_rmsnorm large) and 228.8 / 230.8 us (silu_and_mul large) with the driver's
#: choice / a 100 % / a 0 % carveout preference. "driver" leaves it to the driver;
#: "occupancy" sets, on every timed kernel and on the eviction kernel between its
#: repetitions, the smallest carveout that keeps the occupancy its registers and threads
#: allow (:func:`workbench.core.hardware.occupancy_carveout_pct`); a number sets that
#: percentage.
CARVEOUTS = ("driver", "occupancy")

#: What a repetition's time is: the CUDA event pair around the launch, or the kernel's own
#: duration from CUPTI's activity records of the same launch. "auto" (the default) is
#: CUPTI where the GPU worker can load libcupti (CUDA 13+), else events; a LocalRunner
#: resolves it when its worker starts (:func:`resolve_timer`) and reports which it chose.
TIMERS = ("auto", "events", "cupti")

#: Settings fields added after recordings were made, with the value those recordings were
#: measured with: a stored settings dict without the field means that value.
LEGACY_DEFAULTS: dict[str, Any] = {"timer": "events"}

#: The tick-aware median groups samples by the clock's tick only up to this tick (us): the
#: GPU timer of the H100 ticks every 0.032 us; a coarse clock is left to the plain median.
MAX_GROUPING_TICK_US = 0.25

#: Words of the gate's state in pinned memory: flag, timeouts, then two 64-bit counters.
GATE_STATE_INT32 = 6
#: A gate held for less than this measures no clock (the 32 ns timer tick would dominate).
GATE_CLOCK_MIN_NS = 20_000

#: A gate opens by itself after this long (the host stalled while enqueueing a batch);
#: the worker counts such batches and reports them.
GATE_TIMEOUT_NS = 200_000_000

#: Kernels the timing loop needs on the device, compiled by the parent with the worker's
#: check kernels (one module). ``wb_gate`` holds the stream until the host sets a flag in
#: mapped pinned memory (or the timeout passes, counted in ``state[1]``) and leaves the SM
#: cycles and nanoseconds it was held in ``state[2:6]`` (two 64-bit words): the SM clock the
#: batch behind it ran at, measured rather than sampled from NVML; ``wb_evict``
#: reads a buffer (float4 loads) and stores nothing unless its sum hits an impossible value,
#: so the loads stay but no cache line is dirtied; ``wb_tick`` measures the GPU timer's
#: resolution (the step the tick-aware median groups by).
TIMING_KERNELS_SOURCE = r"""
extern "C" __global__ void wb_gate(volatile int* state, unsigned long long timeout_ns) {
  unsigned long long t0, t;
  const long long c0 = clock64();
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  t = t0;
  while (state[0] == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > timeout_ns) { state[1] = state[1] + 1; break; }
    __nanosleep(500);
  }
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  const long long c1 = clock64();
  // the SM cycles and nanoseconds the gate was held: the effective SM clock of the batch
  volatile unsigned long long* probe = (volatile unsigned long long*)(state + 2);
  probe[0] = (unsigned long long)(c1 - c0);
  probe[1] = t - t0;
}
extern "C" __global__ void wb_tick(unsigned long long* out) {
  // The GPU timer's resolution: the smallest step of %globaltimer over 64 changes.
  unsigned long long prev, t, step = ~0ull;
  unsigned changes = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(prev));
  for (long long i = 0; i < (1ll << 26) && changes < 64; ++i) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t != prev) {
      step = t - prev < step ? t - prev : step;
      prev = t;
      ++changes;
    }
  }
  out[0] = step;
  out[1] = changes;
}
extern "C" __global__ void wb_evict(const float4* __restrict__ buf, long long n4,
                                    float* __restrict__ sink) {
  float acc = 0.f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
       i += (long long)gridDim.x * blockDim.x) {
    const float4 v = buf[i];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  if (acc == -1.5e-38f) *sink = acc;  // the buffer holds zeros: never taken
}
"""


@dataclass(frozen=True)
class BenchSettings:
    """How one candidate is timed. Times in the unit named by each field.

    What a user sets: ``timer``, ``flush_l2`` (cold or hot L2), ``target_rse_pct``,
    ``max_time_s`` and ``batch_reps``. The other fields pin the measurement protocol of the
    module docstring (defaults chosen by the A/B runs in benchmarks/NOTES.md); ``windows``,
    ``window_gap_ms`` and ``carveout`` are there for benchmarks/ (duration levels,
    repeatability) and change what a time means, so the runner's description names them."""

    warmup_ms: float = 5.0
    min_reps: int = 10
    max_reps: int = 1000
    max_time_s: float = 0.5           # timing budget per candidate (verification excluded)
    target_rse_pct: float = 0.5       # stop once the median's relative standard error is this low
    flush_l2: bool = True             # False = hot-cache mode (see module docstring)
    l2_flush_bytes: int = 0           # 0 = 2x the device's L2 (at least 2x L2 always)
    timeout_s: float = 10.0           # watchdog: one candidate's evaluation must finish in this
    batch_reps: int = 16              # repetitions enqueued between host synchronisations
    flush_method: str = "read"        # "read" (clean L2) or "write" (zeroing; dirty lines)
    host_gate: bool = True            # hold each batch behind a gate kernel (see above)
    tail_reps: int = 6                # untimed repetitions queued after each batch's timed ones
    placements: int = 8               # timed repetitions rotate over this many input copies
    timer: str = "auto"               # "auto", "events" or "cupti" (kernel durations; the
                                      # event pairs are kept too); see TIMERS
    windows: int = 1                  # separate timing loops per candidate (see time_launches)
    window_gap_ms: float = 0.0        # GPU kept busy (L2 flush reads) this long between windows
    carveout: str = "driver"          # shared-memory carveout of the timed (and eviction)
                                      # kernels: "driver", "occupancy" or a percentage "0".."100"
    graph_launches: int = 0           # > 0: each repetition launches a CUDA graph of this many
                                      # captured launches back to back (no flush, event pair
                                      # around the graph, time per launch); the "graph" cache
                                      # condition (workbench.core.conditions)

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
        if self.l2_flush_bytes < 0:
            problems.append(("l2_flush_bytes", self.l2_flush_bytes, ">= 0"))
        if self.timeout_s <= self.max_time_s:
            problems.append(("timeout_s", self.timeout_s, f"> max_time_s ({self.max_time_s})"))
        if self.batch_reps < 1:
            problems.append(("batch_reps", self.batch_reps, ">= 1"))
        if not 0 <= self.tail_reps <= 64:
            problems.append(("tail_reps", self.tail_reps, "0..64"))
        if not 1 <= self.placements <= 64:
            problems.append(("placements", self.placements, "1..64"))
        if self.flush_method not in FLUSH_METHODS:
            problems.append(("flush_method", self.flush_method, f"one of {FLUSH_METHODS}"))
        if not 1 <= self.windows <= 64:
            problems.append(("windows", self.windows, "1..64"))
        if self.carveout not in CARVEOUTS and not (
                self.carveout.isdigit() and 0 <= int(self.carveout) <= 100):
            problems.append(("carveout", self.carveout,
                             "'driver', 'occupancy' or a percentage '0'..'100'"))
        if not 0 <= self.window_gap_ms <= 10_000:
            problems.append(("window_gap_ms", self.window_gap_ms, "0..10000"))
        if self.timer not in TIMERS:
            problems.append(("timer", self.timer, f"one of {TIMERS}"))
        if not 0 <= self.graph_launches <= 1000:
            problems.append(("graph_launches", self.graph_launches, "0..1000"))
        if problems:
            key, value, expected = problems[0]
            raise WorkbenchError(f"BenchSettings.{key} = {value!r}; expected {expected}",
                                 key=key, value=value, expected=expected)

    def flush_bytes_for(self, l2_bytes: int) -> int:
        """Size of the L2 flush buffer for a device with ``l2_bytes`` of L2."""
        return max(self.l2_flush_bytes, L2_FLUSH_FACTOR * l2_bytes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BenchSettings:
        """Settings from :meth:`to_dict` output; unknown keys are ignored and fields missing
        from an older dict take :data:`LEGACY_DEFAULTS` (what was measured then)."""
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
    45 of 45 with this median (benchmarks/NOTES.md).
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


# --------------------------------------------------------------------------------------------
# The timing loop (runs in the GPU worker; ``cuda`` is the ``pycuda.driver`` module)


class Gate(Protocol):
    """Holds the stream while the host enqueues a batch (see ``host_gate``)."""

    def hold(self) -> None:
        """Enqueue the gate: work enqueued after it waits until :meth:`release`."""

    def release(self) -> None:
        """Open the gate (the host has enqueued the batch)."""

    def settled(self) -> None:
        """The batch behind the gate has finished (read what the gate measured)."""


@dataclass(frozen=True)
class LaunchTimes:
    """What :func:`time_launches` measured: the samples the stopping rule used, the event
    pairs' times of the same repetitions (equal to ``samples_us`` without a kernel clock),
    and the wall time of the whole loop."""

    samples_us: list[float]
    event_samples_us: list[float]
    wall_s: float
    window_medians_us: tuple[float, ...] = ()


#: Durations (us) of the timed kernel's launches finished since the last call, in launch
#: order; the argument is how many are expected (see :meth:`CuptiClock.take`).
KernelClock = Callable[[int], list[float]]


class ClockMismatch(WorkbenchError):
    """The kernel clock returned a different number of launches than were enqueued."""


def gate_clock_mhz(state: Any) -> float | None:
    """The SM clock (MHz) a gate measured, from its int32 state words; ``None`` when it was
    held too briefly to tell."""
    words = np.asarray(state[:GATE_STATE_INT32], dtype=np.int32).view(np.uint64)
    cycles, ns = int(words[1]), int(words[2])
    if ns < GATE_CLOCK_MIN_NS or cycles <= 0:
        return None
    return 1e3 * cycles / ns


def window_settings(settings: BenchSettings) -> BenchSettings:
    """The settings of one of ``settings.windows`` timing loops: repetition counts and the
    time budget split evenly between them (at least 3 repetitions each)."""
    w = settings.windows
    if w == 1:
        return settings
    min_reps = max(3, math.ceil(settings.min_reps / w))
    return replace(settings, windows=1, min_reps=min_reps,
                   max_reps=max(min_reps, math.ceil(settings.max_reps / w)),
                   max_time_s=settings.max_time_s / w)


def time_launches(cuda: Any, stream: Any, launch: Callable[[], object],
                  settings: BenchSettings, *, prepare: Callable[[], object] | None = None,
                  flush: Callable[[], object] | None = None,
                  gate: Gate | None = None,
                  kernel_clock: KernelClock | None = None,
                  busy: Callable[[float], object] | None = None,
                  tick_us: float = 0.0) -> LaunchTimes:
    """Time ``launch`` in ``settings.windows`` separate timing loops (:func:`_time_window`)
    and pool their samples; each window's median is reported too. Between windows
    ``busy(settings.window_gap_ms)`` keeps the GPU working (at full clocks) for that long.

    Windows test whether a time drawn in one loop holds for the next: on the H100 every
    window of an evaluation agreed (back to back and with 150 ms of other GPU work between
    windows), so the default stays one window (benchmarks/NOTES.md). ``tick_us`` is the
    GPU clock's tick, for the tick-aware stopping rule (:func:`grouped_median`).
    """
    one = window_settings(settings)
    began = time.perf_counter()
    samples: list[float] = []
    events: list[float] = []
    medians: list[float] = []
    for index in range(settings.windows):
        if index and busy is not None and settings.window_gap_ms > 0:
            busy(settings.window_gap_ms)
        part = _time_window(cuda, stream, launch, one, prepare=prepare, flush=flush, gate=gate,
                            kernel_clock=kernel_clock, tick_us=tick_us)
        samples.extend(part.samples_us)
        events.extend(part.event_samples_us)
        medians.append(median(part.samples_us, tick_us))
    return LaunchTimes(samples_us=samples, event_samples_us=events,
                       wall_s=time.perf_counter() - began,
                       window_medians_us=tuple(medians) if settings.windows > 1 else ())


def _time_window(cuda: Any, stream: Any, launch: Callable[[], object],
                 settings: BenchSettings, *, prepare: Callable[[], object] | None = None,
                 flush: Callable[[], object] | None = None,
                 gate: Gate | None = None,
                 kernel_clock: KernelClock | None = None,
                 tick_us: float = 0.0) -> LaunchTimes:
    """One timing loop: warm-up, then batches with one CUDA event pair per repetition.

    ``prepare`` restores inputs before every repetition (warm-up included) and ``flush``
    evicts the L2 just before the start event; neither is inside the event pair; what the
    three callables return is ignored. ``cuda`` needs ``Event()`` with pycuda's
    ``record(stream)`` / ``synchronize()`` / ``time_since(start)`` (ms); ``stream`` needs
    ``synchronize()`` (the peers harness passes torch equivalents).
    Repetitions are enqueued in batches of ``settings.batch_reps`` between host
    synchronisations, each batch behind ``gate`` when one is given, so that host overhead
    never lands between a start event and its launch; the stopping rule is checked after
    each batch.
    """
    began = time.perf_counter()
    warm = 0
    while True:
        if prepare is not None:
            prepare()
        launch()
        warm += 1
        if warm >= 2:
            stream.synchronize()
            if (time.perf_counter() - began) * 1e3 >= settings.warmup_ms:
                break
    if kernel_clock is not None:
        kernel_clock(0)  # forget the warm-up's launches
    batch = settings.batch_reps
    starts = [cuda.Event() for _ in range(batch)]
    ends = [cuda.Event() for _ in range(batch)]
    spare = (cuda.Event(), cuda.Event())  # the tail's events: recorded, never read
    samples: list[float] = []
    events: list[float] = []
    t0 = time.perf_counter()
    while True:
        count = min(batch, settings.max_reps - len(samples))
        if gate is not None:
            gate.hold()
        try:
            for i in range(count + settings.tail_reps):
                if prepare is not None:
                    prepare()
                if flush is not None:
                    flush()
                start, end = (starts[i], ends[i]) if i < count else spare
                start.record(stream)
                launch()
                end.record(stream)
        finally:
            if gate is not None:
                gate.release()
        ends[count - 1].synchronize()
        if gate is not None:
            gate.settled()
        events.extend(ends[i].time_since(starts[i]) * 1e3 for i in range(count))
        if kernel_clock is None:
            samples = events
        else:
            enqueued = count + settings.tail_reps
            if settings.tail_reps:
                stream.synchronize()  # the tail's launches finish before their records count
            durations = kernel_clock(enqueued)
            if len(durations) != enqueued:
                raise ClockMismatch(
                    f"the kernel clock saw {len(durations)} launches of a batch of {enqueued}",
                    key="kernel_clock", value=len(durations), expected=enqueued)
            samples.extend(durations[:count])
        if should_stop(samples, time.perf_counter() - t0, settings, tick_us):
            return LaunchTimes(samples_us=samples, event_samples_us=events,
                               wall_s=time.perf_counter() - began)


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
