"""DaskRunner: the Runner protocol answered by the GPU workers of a Dask cluster.

One Dask worker per GPU (``dask_cuda.LocalCUDACluster`` on one host, ``dask cuda worker``
on each host of a cluster), each offering the resource ``GPU=1``. For every candidate the
driver submits a compile task (no resource: compiles spread over all worker threads of the
cluster) and a measure task that depends on it and asks for the GPU resource; the measure
task verifies and times the candidate on one device (:mod:`workbench.engine.dask_tasks`).
Results come back to the driver as each finishes, and the caller (the search loop) writes
each to the store the moment it arrives.

What keeps measurements comparable:

- a config's time comes from one measure task, so from one device (``extra["worker"]``
  says which);
- at start every GPU worker reports its device, driver, compiler and timing method; workers
  that disagree are refused (:class:`ClusterError` lists them): devices of different models
  never share a provenance. Give each model its own resource name (``--resources H100=1``)
  and one runner per resource;
- :meth:`one_device` measures on one worker only: the baseline, the device-copy roofline
  and finalist confirmation run there (the copy roofline can also be taken on every device,
  :meth:`copy_timings`);
- ``measure(candidates, condition=...)`` and ``baseline(shape, dtype, condition=...)``
  measure again under a cache condition on ONE device, in one task: the worker this view is
  pinned to (:meth:`one_device`, which ``confirm_finalists`` takes once per confirmation),
  else the reference worker. So a confirmation measures every finalist, the baseline,
  every condition and both rounds on one device, and a cluster prints the same condition
  table and applies the same pick rule as the direct runner. A condition the workers'
  runners cannot measure under (:attr:`WorkerInfo.conditions`) is
  :class:`~workbench.engine.conditions.ConditionUnavailable` at the call. A pinned worker
  that leaves the cluster mid-call is never replaced by another (its times would not
  compare): what it had not measured comes back crashed, saying so, and the confirmation
  says why it has no pick.

Failures: a crash or hang of a candidate kills only the GPU worker subprocess, which the
LocalRunner on that Dask worker restarts (the candidate is recorded crashed or timeout, as
with the direct runner). A Dask worker that dies mid-task is restarted by its nanny and its
tasks are run again elsewhere; a candidate that kills workers ``allowed-failures`` times is
recorded crashed.

Dispatch: the compiles of a batch are submitted at once; a candidate's measure task is
dispatched when its compile is done, at most
:data:`~workbench.engine.dask_tasks.MEASURES_PER_GPU` per GPU worker (in all), refilled as
results are taken, so each device has its next candidates on hand while it times one. Once
every candidate of the batch is dispatched, the slots its last ones leave take the next
batch's candidates (those :meth:`DaskRunner.compile_ahead` queued, compiled), and a reserve
of them (:data:`BOUNDARY_RESERVE_PER_GPU`) waits in the workers' queues, so the devices do
not drain at the batch's end while the caller stores its last results and plans the next
batch; the next ``measure`` call takes those tasks as they are and cancels any for
candidates it does not hold. Nothing more is dispatched while the caller holds: a paused
search pauses every worker after the tasks in flight, a stopped one (closing the iterator)
cancels those, and a range edit applies to every task dispatched after it.
"""

from __future__ import annotations

import contextlib
import logging
import queue
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core.conditions import check_conditions
from workbench.core.errors import ClusterError
from workbench.core.hardware import DeviceSpec
from workbench.core.records import Candidate, Config, TrialResult
from workbench.core.template import KernelInstance
from workbench.engine import dask_tasks
from workbench.engine.bench import CopyTiming
from workbench.engine.compile_ahead import CompileAhead
from workbench.engine.conditions import ConditionUnavailable
from workbench.engine.dask_tasks import (
    GPU_RESOURCE,
    MEASURES_PER_GPU,
    Endpoint,
    PackedEndpoint,
    WorkerInfo,
)
from workbench.engine.dask_workers import (
    CompilerIdentity,
    gpu_workers,
    meet_workers,
    next_token,
    stealing_enabled,
)
from workbench.engine.measure_ahead import MeasureAhead
from workbench.engine.worker_protocol import rule_for_event

log = logging.getLogger(__name__)

#: Measure tasks outrank compile tasks on a worker's threads: the GPU never waits for a
#: thread while compiles queue (earlier candidates first within each kind).
MEASURE_PRIORITY = 1_000_000
POLL_S = 1.0
#: Search batch per GPU worker: the batch follows the GPU count (:attr:`DaskRunner.batch_size`)
#: and so does the compile-ahead queue.
BATCH_PER_GPU = 16
#: Batches the compile-ahead queue holds: the one measured now and the next. Its compiles
#: stay held until their measure task is dispatched (4 per GPU at a time), so a queue of one
#: batch let the next batch submit only as the current one drained: its last compiles
#: started a few configs before it was needed and the devices waited for nvcc inside every
#: batch (CPU check, benchmarks/cluster/coordinator_scaling.py, 1 simulated GPU, 192
#: configs: 17.9 s of device idle inside batches with one batch held, 2.0 s with two).
QUEUED_BATCHES = 2
#: Measure tasks of the next batch per GPU worker held beyond its running slots once every
#: candidate of the batch measured now is dispatched: they wait in the worker's queue and
#: start without the driver, so the devices stay fed while the driver ends the batch (stores
#: its last results, asks for, claims and plans the next). Without them each GPU idled
#: 1.8-3.2 s of a 29-31 s two-GPU sweep, every gap a measure the driver sent after its
#: compile was done (2 x H200, benchmarks/results/cluster/h200x2/*T0924*, *T0929*:
#: gap_causes). More tasks running at once per worker instead (8, not 4) slowed every
#: measurement (1 GPU: 65 s against 52-55 s, *T0927*).
BOUNDARY_RESERVE_PER_GPU = MEASURES_PER_GPU
#: Measure tasks per GPU worker queued beyond its running ones all the time (inside every
#: batch too), 0 in the product: 4 queued all the time (and no boundary reserve) was tried
#: and was slower, 2-GPU sweeps 28.4-29.6 s against 26.1-28.3 s for the reserve, alternated
#: three times each on one 2 x H200 machine (*T1233*-*T1236*); it took the next batch's
#: compiled candidates sooner and the devices then waited for compiles at the boundaries
#: (gap_causes compile_late). Kept as the experiment's knob (gpu_checks/multi_gpu_dask.py
#: --queued-per-gpu).
QUEUED_PER_GPU = 0
#: Compiles queued for the next batch rank below every compile of the batch measured now.
_AHEAD_PRIORITY = 100_000
_SOLO_ATTEMPTS = 2


@dataclass(frozen=True)
class _BatchPlan:
    """One measure call's compiles: ``units`` maps an instance hash to the indices of the
    candidates it serves; ``uncompiled`` are the candidates with nothing to compile (the
    runner prunes them with the reason); ``token`` names the batch's tasks; ``early`` the
    measure tasks of its candidates dispatched before the call (index -> future: measured
    ahead while the previous batch drained)."""

    token: int
    units: dict[str, list[int]]
    uncompiled: tuple[int, ...]
    early: dict[int, Any] = field(default_factory=dict)
    ahead: bool = True  # its free slots may measure the next batch (not a suspect alone)


class DaskRunner:
    """Measures candidates on the GPU workers of a connected ``distributed.Client``.

    ``endpoint`` says what each worker measures with (a :class:`LiveEndpoint` for the GPU);
    ``resource`` names the worker resource of one GPU. Use as a context manager; ``close``
    closes the workers' runners, and the client and cluster when ``owns`` them.
    """

    def __init__(self, client: Any, endpoint: Endpoint, workers: Sequence[WorkerInfo], *,
                 resource: str = GPU_RESOURCE, owns: Sequence[Any] = ()) -> None:
        self.client = client
        self.endpoint = endpoint
        self.packed = PackedEndpoint.pack(endpoint)
        self.resource = resource
        self._owns = tuple(owns)
        self._pin: str | None = None
        self.workers: tuple[WorkerInfo, ...] = tuple(workers)
        first = self.workers[0]
        self.device: DeviceSpec = first.device
        self.compiler = CompilerIdentity(first.compiler_version, first.compiler_flags)
        self.facts: dict[str, Any] = {"name": first.device.name, "driver": first.driver}
        self.description = first.description
        self.stealing = stealing_enabled(client)
        if self.stealing:
            log.warning("the Dask scheduler steals work; measure tasks are whole (verify and "
                        "time in one task), and pinned ones never move, but start it with "
                        "DASK_DISTRIBUTED__SCHEDULER__WORK_STEALING=False to keep queues put")
        self._baselines: dict[tuple[str, str, str], TrialResult] = {}
        self._in_flight: dict[Any, int] = {}
        self.dispatched = 0  # measure tasks submitted so far
        self.compiles = CompileAhead(QUEUED_BATCHES * self.batch_size)
        self._now: set[str] = set()  # instance hashes of the batch measured now
        self.ahead = MeasureAhead(client.cancel)  # the next batch, its tasks sent early
        self._workers_died = False

    @property
    def in_flight_limit(self) -> int:
        """Measure tasks of the batch measured now this runner keeps in flight at most,
        unpinned: :data:`MEASURES_PER_GPU` running and :data:`QUEUED_PER_GPU` queued per GPU
        worker (the next batch's reserve at the boundary comes on top)."""
        return (MEASURES_PER_GPU + QUEUED_PER_GPU) * len(self.workers)

    @property
    def in_flight(self) -> tuple[Any, ...]:
        """The futures of the measure tasks dispatched and not yet handed on (the next
        batch's measured ahead included)."""
        return (*self._in_flight, *self.ahead.futures)

    def _check_reference(self) -> None:
        """After a worker died (its nanny starts a new one, at a new address), meet the
        workers again so that the reference and the list are live ones."""
        alive = set(gpu_workers(self.client, self.resource))
        if self._pin is None and any(w.address not in alive for w in self.workers):
            workers = meet_workers(self.client, self.endpoint, self.resource)
            if workers[0].identity != self.workers[0].identity:
                raise ClusterError(f"the GPU workers changed kind mid-run: "
                                   f"{workers[0].description}, was {self.description}")
            self.workers = workers

    # -- views and lifetime ----------------------------------------------------------------

    @property
    def reference(self) -> WorkerInfo:
        """The worker that measures baselines, copies and confirmations."""
        if self._pin is not None:
            return next(w for w in self.workers if w.address == self._pin)
        return self.workers[0]

    def one_device(self, address: str | None = None) -> DaskRunner:
        """This runner measuring on one worker only (the reference one by default): for
        finalist confirmation and anything that compares times with each other."""
        self._check_reference()
        view = object.__new__(type(self))
        view.__dict__.update(self.__dict__)
        view._pin = address or self.reference.address
        view._owns = ()
        view.ahead = self.ahead.fresh()  # a pinned view measures in order
        if view._pin not in {w.address for w in self.workers}:
            raise ClusterError(f"{view._pin} is not one of this runner's GPU workers",
                               value=view._pin, expected=[w.address for w in self.workers])
        return view

    def __enter__(self) -> DaskRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the workers' runners; close the client and cluster this runner owns."""
        self.ahead.cancel()
        if not self._owns:
            return
        try:
            self.client.run(dask_tasks.close_runners)
        finally:
            for thing in self._owns:
                thing.close()
            self._owns = ()

    # -- tasks ------------------------------------------------------------------------------

    def _on_reference(self, fn: Any, *args: Any) -> Any:
        self._check_reference()
        return self._submit_on(self.reference.address, f"wb-{fn.__name__}-{next_token()}",
                               fn, *args).result()

    def _submit_on(self, address: str, key: str, fn: Any, *args: Any,
                   priority: int = 0) -> Any:
        """``fn(packed endpoint, *args)`` on ``address`` alone, holding its whole device."""
        return self.client.submit(fn, self.packed, *args, workers=[address],
                                  allow_other_workers=False, resources={self.resource: 1},
                                  priority=priority, pure=False, key=key)

    @property
    def search_condition(self) -> str:
        """The condition the workers' searches measure under (the reference worker's: every
        worker shares its identity, settings included)."""
        return self.reference.search_condition

    def baseline(self, shape: str, dtype: str, *,
                 condition: str | None = None) -> TrialResult:
        """The baseline, measured on the reference device (once per device); under a named
        cache condition measured again on this view's one device."""
        if condition is not None:
            return self._baseline_under(condition, shape, dtype)
        key = (self.reference.address, shape, dtype)
        if key not in self._baselines:
            self._baselines[key] = self._on_reference(dask_tasks.baseline, self.description,
                                                      shape, dtype)
        return self._baselines[key]

    def copy_timing(self, shape: str, dtype: str) -> CopyTiming:
        """A device copy of the problem's bytes on the reference device (where the reported
        time is confirmed)."""
        copy: CopyTiming | None = self._on_reference(dask_tasks.copy_timing, shape, dtype)
        if copy is None:
            raise ClusterError(f"{self.description} cannot time a device copy")
        return copy

    def copy_timings(self, shape: str, dtype: str) -> dict[str, CopyTiming | None]:
        """The copy roofline measured on every device, by worker label."""
        return {w.label: self.one_device(w.address).copy_timing(shape, dtype)
                for w in self.workers}

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        """Fan the candidates out; yield each result when it arrives (any order: pair them
        with candidates by ``result.config``). Closing the iterator cancels what is left.
        Under a named cache condition: measured again on one device, in one task
        (:meth:`_measure_under`).

        The batch's compiles go to the front of the compile-ahead queue when this is
        called, before the first result is asked for, and compiles queued ahead for other
        candidates are cancelled then: a caller that knows its next batch calls
        :meth:`compile_ahead` right after this call, and those compiles run while this
        batch is measured (the search loop does for a
        :class:`~workbench.engine.capabilities.ManyDevices` runner).

        A Dask worker that dies takes down every task queued on it, not only the one it was
        running, so candidates that Dask gives up on (KilledWorker) run again at the end, one
        at a time: a death then is that candidate's own, and it is recorded crashed."""
        if condition is not None:
            return iter(self._measure_under(condition, candidates))
        if self._workers_died:
            self._workers_died = False
            self._check_reference()  # dispatch to the workers that replaced them
        plan = self._plan(candidates, cancel_others=True)
        return self._measured(candidates, plan)

    def _measured(self, candidates: Sequence[Candidate], plan: _BatchPlan,
                  ) -> Generator[TrialResult, None, None]:
        suspects: list[Candidate] = []
        with contextlib.closing(self._fan_out(candidates, plan)) as arrivals:
            for candidate, result in arrivals:
                if result is None:
                    suspects.append(candidate)
                else:
                    yield result
        if suspects:  # alone means alone: nothing of the next batch runs beside them
            self.ahead.cancel()
        for candidate in suspects:
            yield self._alone(candidate)

    def _alone(self, candidate: Candidate, attempts: int = _SOLO_ATTEMPTS) -> TrialResult:
        """Measure one suspect with nothing else in flight (twice, should a worker die for
        another reason meanwhile); crashed when it kills its worker every time."""
        for _ in range(attempts):
            plan = self._plan([candidate], cancel_others=False)  # the next batch's stay
            with contextlib.closing(self._fan_out([candidate], plan)) as arrivals:
                for _, result in arrivals:
                    if result is not None:
                        return result
        return self._lost(candidate, f"Dask workers died while measuring it, also when it "
                          f"ran alone ({attempts} times)")

    def _plan(self, candidates: Sequence[Candidate], *, cancel_others: bool) -> _BatchPlan:
        """The batch's distinct instances, wanted at the front of the compile-ahead queue
        (``cancel_others``: compiles held or wanted for other candidates are cancelled, a
        next batch the caller queued before this one and then did not measure)."""
        units: dict[str, list[int]] = {}  # instance hash -> the candidates it serves
        instances: dict[str, KernelInstance] = {}
        uncompiled: list[int] = []
        early = self.ahead.take(candidates) if cancel_others else {}  # measured ahead
        for index, candidate in enumerate(candidates):
            if index in early:
                continue
            instance = self.endpoint.instance(candidate)
            if instance is None:
                uncompiled.append(index)
            else:
                units.setdefault(instance.hash, []).append(index)
                instances.setdefault(instance.hash, instance)
        if cancel_others:
            self.ahead.forget()  # measured ahead for a batch that did not come
            self.client.cancel(self.compiles.keep_only(set(units)))
            self._now = set(units)
        else:
            self._now |= set(units)
        self.compiles.want(list(instances.items()), front=True)
        return _BatchPlan(next_token(), units, tuple(uncompiled), early, ahead=cancel_others)

    def _measure_ahead(self, room: int) -> None:
        """Dispatch up to ``room`` measure tasks of the next batch (:meth:`compile_ahead`)
        whose compiles are done, while this batch's last ones run: the devices keep
        measuring while the caller takes this batch's last results, stores them and hands
        the next batch over (the next :meth:`measure` call takes these tasks as they are).
        Without it every device drained at each batch's end and waited for the slowest
        device's last candidates and the driver's round trip, past the GPU worker's idle
        gap (CPU check: benchmarks/cluster/coordinator_scaling.py). The state is
        :class:`~workbench.engine.measure_ahead.MeasureAhead`'s."""
        self.dispatched += self.ahead.dispatch(room, self.compiles, self._submit_measure,
                                               _AHEAD_PRIORITY)

    def _fan_out(self, candidates: Sequence[Candidate], plan: _BatchPlan,
                 ) -> Generator[tuple[Candidate, TrialResult | None], None, None]:
        """Take the batch's compiles from the bounded compile-ahead queue (at most
        :attr:`compile_limit` submitted and not yet handed to a device; ``plan`` put them
        at its front); dispatch each
        candidate's measure task once its compile is done (in the order compiles finish,
        so the device starts on the first one ready; in the order given on a pinned view),
        keeping at most :attr:`in_flight_limit` in flight (the scheduler places each;
        a worker runs :data:`MEASURES_PER_GPU` at once, its resource's share each, and
        queues the rest; placing them per worker here was tried
        and dropped: no measured gain on the CPU check, and a task restricted to a worker
        that died while no worker was alive stays unrunnable in Dask, loose or not); yield
        (candidate, result) as each arrives (None: Dask gave up on it after workers died).
        Compiles queued by :meth:`compile_ahead` for these candidates are used as they
        are. Tasks are dispatched only while the caller
        takes results, so a caller that holds (a paused search) lets the workers run dry
        and one that closes the iterator (a stopped one) cancels what is in flight."""
        from distributed import KilledWorker

        batch, units = plan.token, plan.units
        # futures report here as they finish (a callback each, registered once): waiting on
        # all of them at every turn (distributed.wait) cost the driver's event loop about
        # 0.07 ms per future per call, 5 ms a call with 72 (measured on the 2-core host),
        # and the set grows with the GPUs (their measure slots and the batch's compiles)
        arrivals: queue.SimpleQueue[Any] = queue.SimpleQueue()
        ready: list[int] = list(plan.uncompiled)
        hash_of = {index: key for key, indices in units.items() for index in indices}
        artifact_of: dict[int, Any] = {}
        compiling: dict[Any, str] = {}   # compile future -> its instance hash
        unattached = list(units)         # hashes whose compile is not submitted yet
        ordered = self._pin is not None
        capacity = 1 if ordered else self.in_flight_limit
        next_in_order = 0
        futures: dict[Any, int] = {future: index for index, future in plan.early.items()}
        for future in futures:
            future.add_done_callback(arrivals.put)
        yielded: set[int] = set()
        finished = False
        self._in_flight = futures

        def top_up() -> None:
            self._top_up_compiles(batch)
            for key in list(unattached):
                future = self.compiles.future(key)
                if future is not None:
                    unattached.remove(key)
                    compiling[future] = key
                    future.add_done_callback(arrivals.put)
                    for index in units[key]:
                        artifact_of[index] = future

        def dispatch() -> None:
            nonlocal next_in_order
            while ready and len(futures) < capacity:
                if ordered:
                    if next_in_order not in ready:
                        break
                    ready.remove(next_in_order)
                    index, next_in_order = next_in_order, next_in_order + 1
                else:
                    index = ready.pop(0)
                artifact = artifact_of.get(index)
                if artifact is not None:  # its compile goes to a device: its slot frees
                    self.compiles.release(hash_of[index])
                future = self._submit_measure(candidates[index], artifact,
                                              f"wb-measure-{batch}-{index}", index)
                futures[future] = index
                future.add_done_callback(arrivals.put)
                self.dispatched += 1
            top_up()
            if (plan.ahead and not ordered and not ready and not compiling
                    and not unattached):
                # every candidate of this batch is dispatched: its slots left go ahead,
                # and a reserve beside them waits in the workers' queues for the boundary
                self._measure_ahead(capacity + BOUNDARY_RESERVE_PER_GPU * len(self.workers)
                                    - len(futures) - self.ahead.running())

        try:
            top_up()
            dispatch()
            while futures or compiling or unattached:
                if not futures and not compiling:  # the queue holds no compile of ours
                    raise RuntimeError(f"compile-ahead queue stalled: {len(self.compiles)} "
                                       f"held, {len(unattached)} of this batch unsubmitted")
                done = _arrived(arrivals, POLL_S)
                for compiled in [f for f in done if f in compiling]:
                    ready.extend(units[compiling.pop(compiled)])  # failures too: measure says why
                dispatch()
                arrived = sorted((futures.pop(f), f) for f in done if f in futures)
                for index, future in arrived:
                    try:
                        result: TrialResult | None = future.result()
                    except KilledWorker:
                        result = None
                        self._workers_died = True
                    dispatch()  # refill before handing the result on: the device stays fed
                    yielded.add(index)
                    yield candidates[index], result
                if not done and ordered and self._pin not in gpu_workers(self.client,
                                                                          self.resource):
                    futures.clear()
                    compiling.clear()
                    unattached.clear()
                    for index in [i for i in range(len(candidates)) if i not in yielded]:
                        yielded.add(index)
                        yield candidates[index], self._lost(
                            candidates[index], f"the worker {self._pin} left the cluster "
                            f"before measuring it")
            finished = True
        finally:
            self.client.cancel([*futures, *artifact_of.values(),
                                *self.compiles.drop(set(units))])
            self._in_flight = {}
            if not finished:  # closed early (a stop): what was measured ahead goes too
                self.ahead.cancel()

    # -- measuring again under a cache condition, on one device ---------------------------

    def _can_measure(self, condition: str) -> None:
        """ConditionUnavailable unless every worker's runner measures under ``condition``."""
        check_conditions([condition])
        lacking = [w.label for w in self.workers if condition not in w.conditions]
        if lacking:
            raise ConditionUnavailable(
                f"{self.description} cannot measure under '{condition}' (the runners of "
                f"{', '.join(lacking)} measure again under "
                f"{', '.join(self.reference.conditions) or 'no condition'})",
                runner=self.description, condition=condition,
                measurable=list(self.reference.conditions), why="the workers' runners")

    def _measure_under(self, condition: str,
                       candidates: Sequence[Candidate]) -> list[TrialResult]:
        """``candidates`` measured again under ``condition`` on this view's device, in one
        task (compiled by the cluster first; one result per candidate)."""
        self._can_measure(condition)
        if not candidates:
            return []
        address = self._one_address()
        artifacts = self._compile(candidates, next_token(), faithful=True)  # nvcc's code
        future = self._submit_on(
            address, f"wb-measure-under-{condition}-{next_token()}",
            dask_tasks.measure_condition, self.description, condition, list(candidates),
            artifacts, priority=MEASURE_PRIORITY)
        try:
            results: list[TrialResult] | None = self._await_on(address, future)
        finally:
            self.client.cancel([a for a in artifacts if a is not None])
        if results is None:
            return [self._lost(c, f"the worker {address} measuring the confirmation under "
                               f"'{condition}' left the cluster") for c in candidates]
        return results

    def _baseline_under(self, condition: str, shape: str, dtype: str) -> TrialResult:
        """The baseline measured again under ``condition`` on this view's device."""
        self._can_measure(condition)
        address = self._one_address()
        future = self._submit_on(
            address, f"wb-baseline-under-{condition}-{next_token()}",
            dask_tasks.baseline, self.description, shape, dtype, condition,
            priority=MEASURE_PRIORITY)
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

    # -- search batches and compile-ahead ----------------------------------------------------

    @property
    def batch_size(self) -> int:
        """Candidates per search batch that keep every GPU fed: the batch follows the GPU
        count (:data:`BATCH_PER_GPU` per GPU worker)."""
        return BATCH_PER_GPU * len(self.workers)

    @property
    def compile_limit(self) -> int:
        """The compile-ahead queue's bound: :data:`QUEUED_BATCHES` x the batch (GPUs x
        :data:`BATCH_PER_GPU`)."""
        return self.compiles.limit

    def compile_ahead(self, candidates: Sequence[Candidate]) -> int:
        """Queue the compiles of the candidates the caller will measure next (the next
        batch), so they run while the devices measure the current one; the next
        :meth:`measure` call takes them. The next batch is exactly these: compiles queued
        ahead for others are cancelled (``[]``: the caller will measure nothing more).
        Bounded by :attr:`compile_limit` with the current batch's; returns how many are
        queued."""
        instances = [(c, self.endpoint.instance(c)) for c in candidates]
        wanted = [(i.hash, i) for _, i in instances if i is not None]
        self.ahead.queue_next(next_token(), [(c, i.hash) for c, i in instances
                                             if i is not None])
        self.client.cancel(self.compiles.keep_only(self._now | {key for key, _ in wanted}))
        self.compiles.want(wanted, front=False)
        self._top_up_compiles(next_token())
        return len(wanted)

    def _top_up_compiles(self, batch: int) -> None:
        """Submit what the compile-ahead queue has room for (one message): the compiles of
        the batch measured now (:meth:`_plan`) at their priority, the next batch's below
        every one of them."""
        items = self.compiles.to_submit()
        if not items:
            return
        now = [(key, i) for key, i in items if key in self._now]
        ahead = [(key, i) for key, i in items if key not in self._now]
        for group, priority in ((now, 0), (ahead, -_AHEAD_PRIORITY)):
            if group:
                for (key, _), future in zip(group, self._submit_compiles(
                        [i for _, i in group], batch, priority), strict=True):
                    self.compiles.hold(key, future)

    def _submit_compiles(self, instances: Sequence[KernelInstance], batch: int,
                         priority: int = 0, *, faithful: bool = False) -> list[Any]:
        """One compile task per instance, submitted at once (one message), any worker
        thread, earlier ones first; ``faithful``: by nvcc where the search's compiler may
        build other code (a confirmation: :meth:`Compiler.faithful`)."""
        kind = "compile-nvcc" if faithful else "compile"  # gpu_checks count wb-compile-*
        import dask
        from dask import delayed

        tasks = []
        for index, instance in enumerate(instances):
            with dask.annotate(priority=priority - index):
                tasks.append(delayed(dask_tasks.compile_instance, pure=False)(
                    self.device.arch, instance, faithful=faithful,
                    dask_key_name=f"wb-{kind}-{instance.hash}-{batch}"))
        return list(self.client.compute(tasks, optimize_graph=False))

    def _compile(self, candidates: Sequence[Candidate], batch: int, *,
                 faithful: bool = False) -> list[Any | None]:
        """Every distinct instance of ``candidates`` compiled now (outside the queue: a
        confirmation's few, ``faithful`` to nvcc's code); per candidate its compile's
        future (None: nothing to compile)."""
        distinct: dict[str, KernelInstance] = {}
        per_candidate: list[str | None] = []
        for candidate in candidates:
            instance = self.endpoint.instance(candidate)
            per_candidate.append(instance.hash if instance is not None else None)
            if instance is not None:
                distinct.setdefault(instance.hash, instance)
        futures = dict(zip(distinct, self._submit_compiles(
            list(distinct.values()), batch, faithful=faithful), strict=True))
        return [futures[h] if h is not None else None for h in per_candidate]

    def _submit_measure(self, candidate: Candidate, artifact: Any, key: str, index: int,
                        ) -> Any:
        """One measure task after its compile: on the pinned worker only, else on whichever
        GPU worker the scheduler picks (work stealing off, so it stays there)."""
        where: dict[str, Any] = (
            {"workers": [self._pin], "allow_other_workers": False} if self._pin else {})
        return self.client.submit(
            dask_tasks.measure, self.packed, self.description, candidate, artifact, key=key,
            resources={self.resource: 1.0 / MEASURES_PER_GPU}, priority=MEASURE_PRIORITY - index,
            pure=False, **where)

    def _lost(self, candidate: Candidate, why: str) -> TrialResult:
        """A candidate whose Dask worker died under it, recorded as the table says."""
        rule = rule_for_event("worker_died")
        return TrialResult(config=candidate.config, shape=candidate.shape,
                           dtype=candidate.dtype, status=rule.status,
                           reason=f"{rule.meaning}: {why}", device=self.device.name)


def _arrived(arrivals: queue.SimpleQueue[Any], timeout_s: float) -> set[Any]:
    """The futures that finished: the first within ``timeout_s`` (none: an empty set) and
    every other already reported."""
    try:
        done = {arrivals.get(timeout=timeout_s)}
    except queue.Empty:
        return set()
    while True:
        try:
            done.add(arrivals.get_nowait())
        except queue.Empty:
            return done


def dask_runner(client: Any, endpoint: Endpoint, *, resource: str = GPU_RESOURCE,
                owns: Sequence[Any] = ()) -> DaskRunner:
    """A DaskRunner over the cluster's GPU workers (they measure again under the cache
    conditions their runners can: :attr:`WorkerInfo.conditions`)."""
    workers = meet_workers(client, endpoint, resource)
    return DaskRunner(client, endpoint, workers, resource=resource, owns=owns)
