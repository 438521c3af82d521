"""A scripted condition runner for TESTS ONLY: times per cache condition from a table.

:class:`ScriptedConditionRunner` answers the Runner contract, every condition included,
from ``truth`` (per config and per
condition, microseconds; the baseline under ``None``); a config the table does not hold
gets a fixed time derived from a hash of its key, so every process answers the same.
Results under a condition come back in reverse order, so a confirmation must pair them by
config. :class:`ScriptedConditionsEndpoint` builds it on each worker of a Dask cluster, so
the direct runner and a cluster measure exactly the same numbers and any difference in
their confirmations is the confirmation's. Never use its times to report performance.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from workbench.core.conditions import CONDITIONS, check_conditions
from workbench.core.hardware import DeviceSpec, get_device
from workbench.core.records import Candidate, Config, Status, Timing, TrialResult, Value
from workbench.core.template import KernelInstance
from workbench.engine.dask_tasks import _digest

#: (config items or None for the baseline, ((condition, median_us), ...)): picklable.
Truth = tuple[tuple[tuple[tuple[str, Value], ...] | None, tuple[tuple[str, float], ...]], ...]


def truth_table(rows: Mapping[Config | None, Mapping[str, float]]) -> Truth:
    """``{config or None: {condition: us}}`` as the endpoint's picklable table."""
    return tuple((tuple(sorted(c.items())) if c is not None else None,
                  tuple(sorted(times.items()))) for c, times in rows.items())


class ScriptedConditionRunner:
    """Times from a table, per condition (see the module docstring)."""

    def __init__(self, truth: Truth, search_condition: str = "read") -> None:
        self.truth: dict[Config | None, dict[str, float]] = {
            (Config(**dict(c)) if c is not None else None): dict(t) for c, t in truth}
        self.search_condition = check_conditions([search_condition])[0]
        self.device: DeviceSpec = get_device("h100_sxm")
        self.description = "scripted condition runner (NOT a measurement)"
        self.calls: list[tuple[str, tuple[Config, ...]]] = []

    def time_us(self, config: Config | None, condition: str) -> float:
        known = self.truth.get(config)
        if known is not None and condition in known:
            return known[condition]
        key = f"{config.key() if config is not None else 'baseline'}/{condition}"
        fraction = int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") / 2 ** 32
        return round(5.0 + 3.0 * fraction, 4)

    def _result(self, config: Config, shape: str, dtype: str, condition: str) -> TrialResult:
        us = self.time_us(config if config else None, condition)
        timing = Timing(median_us=us, min_us=us, q1_us=us, q3_us=us, mean_us=us, reps=100,
                        rse_median_pct=0.3, l2_flushed=condition in ("read", "write"))
        return TrialResult(config=config, shape=shape, dtype=dtype, status=Status.OK,
                           timing=timing, bytes_moved=1 << 20, device=self.device.name,
                           source="scripted", extra={"scripted": True})

    def baseline(self, shape: str, dtype: str, *,
                 condition: str | None = None) -> TrialResult:
        check_conditions([condition or self.search_condition])
        return self._result(Config(), shape, dtype, condition or self.search_condition)

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        """Under the search's condition in the order given; under a named one (a
        confirmation: ``calls`` logs it) in reverse order."""
        if condition is None:
            return iter([self._result(c.config, c.shape, c.dtype, self.search_condition)
                         for c in candidates])
        check_conditions([condition])
        if candidates:
            self.calls.append((condition, tuple(c.config for c in candidates)))
        return iter([self._result(c.config, c.shape, c.dtype, condition)
                     for c in reversed(candidates)])

    def close(self) -> None:
        """Nothing to release."""


@dataclass(frozen=True)
class ScriptedConditionsEndpoint:
    """A :class:`ScriptedConditionRunner` on each Dask worker (nothing to compile)."""

    truth: Truth

    @property
    def key(self) -> str:
        return "scripted-conditions-" + _digest(self.truth)

    def build(self) -> ScriptedConditionRunner:
        return ScriptedConditionRunner(self.truth)

    def instance(self, candidate: Candidate) -> KernelInstance | None:
        return None


__all__ = ["CONDITIONS", "ScriptedConditionRunner", "ScriptedConditionsEndpoint", "Truth",
           "truth_table"]
