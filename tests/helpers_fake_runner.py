"""A SYNTHETIC runner for search/store tests: a deterministic cost function, no GPU.

Nothing here is a measurement. The "times" are a made-up smooth function of the config
(a bowl around a target point plus a hash-derived ripple), with a hash-chosen few configs
failing to "compile", so strategies have something to optimise and failures to skip.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from workbench.core.params import Choice, IntRange, Parameter, Pow2Range
from workbench.core.records import Candidate, Config, Status, Timing, TrialResult, Value
from workbench.core.space import SearchSpace


def _unit_hash(text: str) -> float:
    """Deterministic number in [0, 1) from text."""
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16) / float(1 << 48)


def synthetic_cost_us(config: Mapping[str, Value], shape: str = "s") -> float:
    """Synthetic 'time' in µs: smooth in every numeric parameter, ripple from a hash."""
    cost = 10.0
    for name, value in sorted(config.items()):
        if isinstance(value, bool) or not isinstance(value, int):
            cost += 3.0 * _unit_hash(f"{name}={value}/{shape}")
            continue
        position = value.bit_length()  # log2-ish, so pow2 ranges are smooth too
        target = 2 + int(6 * _unit_hash(f"target {name}/{shape}"))
        cost += 1.5 * (position - target) ** 2
    return cost * (1.0 + 0.05 * _unit_hash(f"ripple {dict(config)}/{shape}"))


def synthetic_fails(config: Mapping[str, Value]) -> bool:
    """About one config in 17 'fails to compile' (deterministic)."""
    return _unit_hash("fail " + Config(config).key()) < 1 / 17


def synthetic_result(candidate: Candidate, *, failures: bool = True) -> TrialResult:
    """The synthetic result of one candidate."""
    if failures and synthetic_fails(candidate.config):
        return TrialResult(candidate.config, candidate.shape, candidate.dtype,
                           Status.COMPILE_ERROR, reason="synthetic compile error",
                           source="synthetic")
    cost = synthetic_cost_us(candidate.config, candidate.shape)
    timing = Timing(median_us=cost, min_us=cost * 0.98, q1_us=cost * 0.99, q3_us=cost * 1.01,
                    mean_us=cost, reps=10, rse_median_pct=0.5, l2_flushed=True)
    return TrialResult(candidate.config, candidate.shape, candidate.dtype, Status.OK,
                       timing=timing, device="synthetic", source="synthetic")


#: How long a gated runner holds a candidate nobody allows before failing the test.
GATE_LIMIT_S = 60.0


class SyntheticRunner:
    """Runner protocol over :func:`synthetic_result`; counts every candidate it measures.

    ``gated=True`` holds each candidate until the test allows it (:meth:`allow`, or
    :meth:`open` for all), so a test can stop the search's loop at a known trial and
    pause, stop or kill it there without sleeping; :meth:`wait_measured` waits for a count.
    ``log_path`` gets one line (the config key) appended and flushed for each finished
    candidate, before it is yielded.
    """

    description = "synthetic cost function (tests only, not a measurement)"
    device = None

    def __init__(self, *, gated: bool = False, failures: bool = True,
                 log_path: str | Path | None = None,
                 on_measure: Callable[[], None] | None = None) -> None:
        self.on_measure = on_measure  # e.g. advance a test's fake clock
        self.failures = failures
        self.log_path = Path(log_path) if log_path else None
        self.measured: list[Candidate] = []
        self._cond = threading.Condition()
        self._allowed: int | None = 0 if gated else None  # None: every candidate

    def allow(self, count: int) -> None:
        """Let ``count`` more candidates through a gated runner."""
        with self._cond:
            assert self._allowed is not None, "allow() on a runner that is not gated"
            self._allowed += count
            self._cond.notify_all()

    def open(self) -> None:
        """Let every candidate through from now on."""
        with self._cond:
            self._allowed = None
            self._cond.notify_all()

    def wait_measured(self, count: int, timeout_s: float = 10.0) -> None:
        """Block until ``count`` candidates were measured (fails the test after timeout_s)."""
        with self._cond:
            reached = self._cond.wait_for(lambda: len(self.measured) >= count, timeout_s)
            assert reached, f"{len(self.measured)} of {count} candidates measured"

    def _take_turn(self, candidate: Candidate) -> None:
        with self._cond:
            allowed = self._cond.wait_for(
                lambda: self._allowed is None or self._allowed > len(self.measured),
                GATE_LIMIT_S)
            if not allowed:
                raise RuntimeError(f"gated SyntheticRunner: candidate {len(self.measured) + 1}"
                                   f" was never allowed")
            self.measured.append(candidate)
            self._cond.notify_all()

    def measure(self, candidates: Sequence[Candidate]) -> Iterator[TrialResult]:
        for candidate in candidates:
            if self.on_measure is not None:
                self.on_measure()
            self._take_turn(candidate)
            result = synthetic_result(candidate, failures=self.failures)
            if self.log_path is not None:
                with self.log_path.open("a") as fh:
                    fh.write(f"{candidate.shape}\t{candidate.config.key()}\n")
                    fh.flush()
            yield result

    def baseline(self, shape: str, dtype: str) -> TrialResult:
        result = synthetic_result(Candidate(Config(BASELINE=1), shape, dtype), failures=False)
        timing = result.timing
        assert timing is not None
        slower = Timing(**{**timing.__dict__, "median_us": timing.median_us * 4})
        return TrialResult(result.config, shape, dtype, Status.OK, timing=slower,
                           source="synthetic")

    def close(self) -> None:
        pass


def synthetic_params() -> list[Parameter]:
    """A small mixed space: pow2, int range and a categorical."""
    return [
        Pow2Range(name="BLOCK", min=32, max=512, default=128, description="threads"),
        IntRange(name="ITEMS", min=1, max=6, step=1, default=2, description="items"),
        Choice(name="LOAD", values_=("plain", "vector"), default="plain", description="load"),
    ]


def synthetic_space(constraints: Sequence[str] = ("BLOCK * ITEMS <= 2048",),
                    params: Sequence[Parameter] | None = None) -> SearchSpace:
    """The small mixed space used across the search tests."""
    return SearchSpace(params if params is not None else synthetic_params(), constraints)


def numeric_space() -> SearchSpace:
    """An all-numeric space (for CMA-ES)."""
    return SearchSpace([
        Pow2Range(name="BLOCK", min=32, max=1024, default=128, description="threads"),
        IntRange(name="ITEMS", min=1, max=8, step=1, default=2, description="items"),
        Choice(name="VEC", values_=(1, 2, 4, 8), default=4, description="vector width"),
    ], ["BLOCK * ITEMS <= 4096"])
