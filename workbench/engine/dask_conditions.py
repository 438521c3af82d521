"""The Dask runners that measure again: :class:`RemeasuringDaskRunner` (workers that can
time an identical binary again) and :class:`ConditionDaskRunner` (workers that measure under
cache conditions, so a cluster confirms finalists as the direct runner does), and
:func:`runner_class`, which picks the class the workers' runners allow."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.core.conditions import check_conditions
from workbench.core.records import Candidate, Config, TrialResult
from workbench.engine import dask_tasks
from workbench.engine.dask_runner import MEASURE_PRIORITY, POLL_S, DaskRunner
from workbench.engine.dask_tasks import WorkerInfo
from workbench.engine.dask_workers import gpu_workers, next_token


def runner_class(workers: Sequence[WorkerInfo]) -> type[DaskRunner]:
    """The runner class the workers allow: one that measures under conditions when every
    worker's runner can, one that measures again when every one can, else the plain one."""
    if all(w.remeasures for w in workers):
        return (ConditionDaskRunner if all(w.measures_under_conditions for w in workers)
                else RemeasuringDaskRunner)
    return DaskRunner


class RemeasuringDaskRunner(DaskRunner):
    """A DaskRunner whose workers can time an identical binary again (live GPUs)."""

    def forget_measurements(self) -> None:
        """Every worker times identical cubins again from now on."""
        self._check_reference()
        futures = [self.client.submit(dask_tasks.forget, self.packed, workers=[w.address],
                                      allow_other_workers=False, resources={self.resource: 1},
                                      pure=False, key=f"wb-forget-{next_token()}")
                   for w in self.workers]
        self.client.gather(futures)


class ConditionDaskRunner(RemeasuringDaskRunner):
    """A DaskRunner whose workers measure again under cache conditions (live GPUs): a
    :class:`~workbench.engine.conditions.ConditionRunner`.

    Every call measures on ONE device: the worker this view is pinned to
    (:meth:`one_device`, which ``confirm_finalists`` takes once per confirmation), else the
    reference worker. A pinned worker that leaves the cluster mid-call is never replaced by
    another (its times would not compare): what it had not measured comes back crashed,
    saying so, and the confirmation says why it has no pick."""

    @property
    def search_condition(self) -> str:
        """The condition the workers' searches measure under (the reference worker's: every
        worker shares its identity, settings included)."""
        return self.reference.search_condition

    def measure_under(self, condition: str,
                      candidates: Sequence[Candidate]) -> list[TrialResult]:
        """``candidates`` measured again under ``condition`` on this view's device, in one
        task (compiled by the cluster first; one result per candidate)."""
        check_conditions([condition])
        if not candidates:
            return []
        address = self._one_address()
        artifacts = self._compile(candidates, next_token(), faithful=True)  # nvcc's code
        future = self.client.submit(
            dask_tasks.measure_under, self.packed, self.description, condition,
            list(candidates), artifacts, workers=[address], allow_other_workers=False,
            resources={self.resource: 1}, priority=MEASURE_PRIORITY, pure=False,
            key=f"wb-measure-under-{condition}-{next_token()}")
        try:
            results: list[TrialResult] | None = self._await_on(address, future)
        finally:
            self.client.cancel([a for a in artifacts if a is not None])
        if results is None:
            return [self._lost(c, f"the worker {address} measuring the confirmation under "
                               f"'{condition}' left the cluster") for c in candidates]
        return results

    def baseline_under(self, condition: str, shape: str, dtype: str) -> TrialResult:
        """The baseline measured again under ``condition`` on this view's device."""
        check_conditions([condition])
        address = self._one_address()
        future = self.client.submit(
            dask_tasks.baseline_under, self.packed, self.description, condition, shape,
            dtype, workers=[address], allow_other_workers=False,
            resources={self.resource: 1}, priority=MEASURE_PRIORITY, pure=False,
            key=f"wb-baseline-under-{condition}-{next_token()}")
        result: TrialResult | None = self._await_on(address, future)
        if result is None:
            return self._lost(Candidate(Config(), shape, dtype),
                              f"the worker {address} measuring the baseline under "
                              f"'{condition}' left the cluster")
        return result

    def _one_address(self) -> str:
        """The device of every condition measurement: the pinned worker, else the
        reference one."""
        if self._pin is None:
            self._check_reference()
        return self.reference.address

    def _await_on(self, address: str, future: Any) -> Any:
        """``future``'s result, or None once ``address`` is no longer a worker (a pinned
        task never moves, so it would wait forever)."""
        from distributed import wait

        while True:
            try:
                done, _ = wait([future], timeout=POLL_S)
            except TimeoutError:
                done = set()
            if done:
                return future.result()
            if address not in gpu_workers(self.client, self.resource):
                self.client.cancel([future])
                return None
