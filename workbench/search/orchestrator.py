"""The search loop: ask the strategy, prune, measure, store, tell, publish.

One :class:`Search` tunes one template over one or more shapes (one after another, each
with its own strategy and best). Every result is committed to the store the moment the
runner yields it, *before* any event is published, so a search killed at any point resumes
from the store without re-measuring anything: the strategy is rebuilt from the stored
results of the same provenance, and those configs are never proposed again.

Several processes may tune the same template/shape/dtype in one store at once: before a
batch is measured its configs are claimed in the store (a lease per config, see
:mod:`workbench.store.base`); a config stored by another process is adopted from the store,
one claimed by another live process is deferred and, once the strategy has nothing else to
ask, waited for (or measured here when its owner crashed or its lease ran out).

Control from another thread: :meth:`Search.pause`, :meth:`Search.stop` and
:meth:`Search.edit_params` take effect after the result in hand (a pause holds the runner's
iterator, a stop or an edit closes it: the batch's candidates not yet measured go back to the
strategy, which asks again within the edited ranges); :meth:`Search.resume` and
:meth:`Search.enqueue` at the next batch.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core.errors import SearchError, UnknownStrategyError
from workbench.core.events import (
    BestImproved,
    ErrorEvent,
    EventBus,
    PhaseChanged,
    SearchFinished,
    TrialFinished,
    TrialStarted,
)
from workbench.core.hardware import DeviceSpec
from workbench.core.kernel_folder import KernelFolder
from workbench.core.params import Parameter
from workbench.core.picks import improves
from workbench.core.records import Candidate, Config, Status, TrialResult, Value
from workbench.core.space import SearchSpace
from workbench.core.template import KernelTemplate
from workbench.engine.capabilities import ManyDevices
from workbench.engine.runner import Runner
from workbench.search.budget import Budget, SearchConfig
from workbench.search.pruning import LaunchPruner, Pruner, split_pruned
from workbench.search.strategies import STRATEGIES, BaseStrategy, make_strategy
from workbench.store.base import DEFAULT_LEASE_S, Provenance, Store, claim_owner, provenance_for

__all__ = ["DEFAULT_BATCH", "Budget", "Search", "SearchConfig", "SearchOutcome",
           "ShapeOutcome", "batch_for"]

#: Candidates per batch for a runner that does not say (compiled in parallel by it).
DEFAULT_BATCH = 16


def batch_for(runner: object) -> int:
    """The batch a search hands ``runner`` when the caller names none: the runner's own
    (:class:`~workbench.engine.capabilities.ManyDevices`: the batch follows the GPU
    count), else :data:`DEFAULT_BATCH`."""
    return runner.batch_size if isinstance(runner, ManyDevices) else DEFAULT_BATCH


@dataclass(frozen=True)
class ShapeOutcome:
    """How the search of one shape ended."""

    shape: str
    reason: str  # budget | patience | exhausted | time | stopped | not started
    evaluated: int  # measured trials in the current space (ok + failed), resumed included
    measured_now: int  # trials the runner measured in this run
    pruned: int  # configs pruned in this run
    best: TrialResult | None


@dataclass(frozen=True)
class SearchOutcome:
    """How the whole run ended: ``reason`` is completed | stopped | time."""

    reason: str
    shapes: Mapping[str, ShapeOutcome]
    wall_s: float

    @property
    def evaluated(self) -> int:
        return sum(s.evaluated for s in self.shapes.values())

    @property
    def best(self) -> dict[str, TrialResult]:
        return {k: s.best for k, s in self.shapes.items() if s.best is not None}


@dataclass
class _ShapeState:
    space: SearchSpace
    results: list[TrialResult] = field(default_factory=list)  # every known result, any space
    strategy: BaseStrategy | None = None
    measured_now: int = 0
    adopted: int = 0  # results another process measured, read from the store
    deferred: dict[str, Config] = field(default_factory=dict)  # claimed by another process
    # the next batch, asked while this one is measured and compiling on a ManyDevices
    # runner (pending in the strategy: a stop or an edit cancels them with the rest)
    ahead: list[Config] = field(default_factory=list)
    pruned: int = 0
    since_improvement: int = 0
    reason: str = "not started"
    membership: dict[Config, bool] = field(default_factory=dict)  # config in space, cached
    # Tallies of the results in the current space, kept as results arrive (recounted when
    # the space or the results are replaced): a stop check per batch and a best per trial
    # must not rescan every result (that made a long search quadratic).
    evaluated: int = 0  # measured (non-pruned) results in the current space
    best: TrialResult | None = None

    def contains(self, config: Config) -> bool:
        """``config in space``, remembered (the check evaluates every constraint)."""
        known = self.membership.get(config)
        if known is None:
            known = self.membership[config] = config in self.space
        return known

    def set_space(self, space: SearchSpace) -> None:
        self.space = space
        self.recount()

    def tally(self, result: TrialResult) -> None:
        """Count one new result (call with every result appended)."""
        if not self.contains(result.config):
            return
        if result.status is not Status.PRUNED:
            self.evaluated += 1
        if improves(result, self.best):
            self.best = result

    def recount(self) -> None:
        """Tally every result again (after the space or the results were replaced)."""
        self.membership = {}
        self.evaluated, self.best = 0, None
        for result in self.results:
            self.tally(result)


class Search:
    """Tune over ``config.shapes`` with ``runner``; see the module docstring.

    ``spaces`` gives the search space of each shape (a mapping, or a callable such as
    ``lambda shape: folder.space(shape, dtype, device)``). With a ``store``, a
    ``provenance`` is required: results are keyed by it and resumed from it. ``pruners``
    run on every asked config before the runner (e.g. a LaunchPruner). ``suggestions``
    (LLM picks) are measured first, after each space's default config. ``baselines_us``
    (shape -> baseline median µs) lets BestImproved carry a speedup. ``clock`` (seconds,
    monotonic) times ``budget.max_wall_s``.
    """

    def __init__(self, spaces: Mapping[str, SearchSpace] | Callable[[str], SearchSpace],
                 runner: Runner, config: SearchConfig, *,
                 store: Store | None = None, provenance: Provenance | None = None,
                 session_id: str | None = None, events: EventBus | None = None,
                 pruners: Sequence[Pruner] = (), suggestions: Sequence[Mapping[str, Value]] = (),
                 baselines_us: Mapping[str, float] | None = None,
                 lease_s: float = DEFAULT_LEASE_S, claim_wait_s: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if config.strategy not in STRATEGIES:
            raise UnknownStrategyError(config.strategy, list(STRATEGIES))
        if store is not None and provenance is None:
            raise SearchError("a search with a store needs a provenance to key its trials",
                              key="provenance", value=None, expected="Provenance(...)")
        self.config = config
        self.runner = runner
        self.store = store
        self.provenance = provenance
        self.session_id = session_id
        self.events = events if events is not None else EventBus()
        self.pruners = tuple(pruners)
        self.baselines_us = dict(baselines_us or {})
        self.lease_s = lease_s
        self.claim_wait_s = claim_wait_s
        self._sleep = sleep
        self._owner = claim_owner()
        self._clock = clock  # seconds; tests inject a fake one for max_wall_s
        self._suggestions: list[Mapping[str, Value]] = list(suggestions)
        space_for = spaces.__getitem__ if isinstance(spaces, Mapping) else spaces
        self._shapes: dict[str, _ShapeState] = {}
        for shape in config.shapes:
            space = space_for(shape).require_nonempty()  # EmptySpaceError names the binding one
            self._shapes[shape] = _ShapeState(space=space)
        # a throwaway strategy per shape, so option errors (e.g. cmaes on categoricals) and
        # missing optional packages surface here rather than in a background thread
        for state in self._shapes.values():
            make_strategy(config.strategy, state.space, config.seed, **config.strategy_options)

        self._lock = threading.Lock()
        self._not_paused = threading.Event()
        self._not_paused.set()
        self._held = threading.Event()  # set while the loop is held by a pause
        self._stop = threading.Event()
        self._pending_edit: dict[str, SearchSpace] | None = None
        self._pending_suggestions: list[Mapping[str, Value]] = []
        self._thread: threading.Thread | None = None
        self._outcome: SearchOutcome | None = None
        self._error: BaseException | None = None
        self._state = "idle"
        self._current_shape: str | None = None
        self._index = 0

    @classmethod
    def for_template(cls, folder: KernelFolder, template: KernelTemplate,
                     runner: Runner, config: SearchConfig, device: DeviceSpec, *,
                     store: Store | None = None, session_id: str | None = None,
                     events: EventBus | None = None,
                     suggestions: Sequence[Mapping[str, Value]] = (),
                     baselines_us: Mapping[str, float] | None = None) -> Search:
        """The usual search: ``template``'s space at each of ``folder``'s shapes, launch
        limits of ``device`` pruned before GPU time, and (with a store) trials keyed by
        :func:`~workbench.store.base.provenance_for` of ``runner`` and ``template``."""

        def env_for(shape: str) -> dict[str, Any]:
            return folder.env(shape, config.dtype, device)

        return cls(lambda shape: template.space(env_for(shape)), runner, config, store=store,
                   provenance=provenance_for(runner, template) if store is not None else None,
                   session_id=session_id, events=events,
                   pruners=[LaunchPruner(template.launch, device, env_for)],
                   suggestions=suggestions, baselines_us=baselines_us)

    # -- control (any thread) -----------------------------------------------------------

    @property
    def state(self) -> str:
        """idle | running | paused | stopping | finished | failed."""
        return self._state

    def pause(self) -> None:
        """Hold the loop after the trial in flight."""
        self._not_paused.clear()
        if self._state == "running":
            self._state = "paused"
            self.events.publish(PhaseChanged("paused"))

    def wait_paused(self, timeout_s: float | None = None) -> bool:
        """Block until the loop is held by :meth:`pause` (the trial in flight has finished
        and is stored, and no other is asked for until :meth:`resume` or :meth:`stop`):
        True; False when ``timeout_s`` passed first. :attr:`state` says "paused" as soon
        as the pause is asked for; this says when it took hold."""
        return self._held.wait(timeout_s)

    def resume(self) -> None:
        """Continue a paused search."""
        self._not_paused.set()
        if self._state == "paused":
            self._state = "running"
            self.events.publish(PhaseChanged("resumed"))

    def stop(self) -> None:
        """End the search after the trial in flight (a paused search ends too)."""
        self._stop.set()
        self._not_paused.set()
        if self._state in ("running", "paused"):
            self._state = "stopping"

    def edit_params(self, params: Sequence[Parameter]) -> None:
        """Replace the parameter ranges (same constraints) for every shape, mid-run.

        Raises EmptySpaceError here, in the caller's thread, when the new ranges leave a
        shape no config (nothing changes then). Measured points outside the new ranges stay
        in the store but no longer count toward the budget nor compete for best.
        """
        new_spaces = {shape: state.space.with_params(params).require_nonempty()
                      for shape, state in self._shapes.items()}
        with self._lock:
            self._pending_edit = new_spaces
        if self._state in ("idle", "finished", "failed"):
            self._apply_edit()

    def enqueue(self, configs: Sequence[Mapping[str, Value]]) -> None:
        """Measure these configs next (e.g. an LLM's picks), for the current and later shapes."""
        with self._lock:
            self._pending_suggestions.extend(configs)
            self._suggestions.extend(configs)

    # -- results ------------------------------------------------------------------------

    def space(self, shape: str) -> SearchSpace:
        """The current space of ``shape``."""
        return self._shapes[shape].space

    def results(self, shape: str, *, in_space: bool = True) -> list[TrialResult]:
        """Known results of ``shape`` (resumed ones included); only those in the current
        space unless ``in_space=False``."""
        state = self._shapes[shape]
        with self._lock:
            results = list(state.results)
        return [r for r in results if not in_space or state.contains(r.config)]

    def best(self, shape: str) -> TrialResult | None:
        """The fastest ok result of ``shape`` within the current space."""
        with self._lock:
            return self._shapes[shape].best

    def evaluated(self, shape: str) -> int:
        """Measured (non-pruned) results of ``shape`` within the current space."""
        with self._lock:
            return self._shapes[shape].evaluated

    # -- running ------------------------------------------------------------------------

    def start(self) -> None:
        """Run on a background thread; :meth:`join` waits for the outcome."""
        if self._thread is not None:
            raise SearchError("this search was already started", key="state", value=self._state)
        self._thread = threading.Thread(target=self._run_captured, name="workbench-search",
                                        daemon=True)
        self._state = "running"
        self._thread.start()

    def join(self, timeout_s: float | None = None) -> SearchOutcome | None:
        """Wait for a started search; its outcome, or None if still running after
        ``timeout_s``. Re-raises the error that ended it."""
        if self._thread is None:
            raise SearchError("join() before start()", key="state", value=self._state)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            return None
        if self._error is not None:
            raise self._error
        return self._outcome

    def _run_captured(self) -> None:
        try:
            self._outcome = self._run()
        except BaseException as exc:
            self._error = exc

    def run(self) -> SearchOutcome:
        """Run to the end on this thread and return the outcome."""
        if self._thread is not None:
            raise SearchError("this search runs on a background thread; use join()",
                              key="state", value=self._state)
        self._state = "running"
        return self._run()

    def _run(self) -> SearchOutcome:
        started = self._clock()
        try:
            reason = "completed"
            for shape in self.config.shapes:
                shape_reason = self._search_shape(shape, started)
                if shape_reason in ("stopped", "time"):
                    reason = shape_reason
                    break
        except Exception as exc:
            self._state = "failed"
            self.events.publish(ErrorEvent(f"search failed: {exc}", traceback.format_exc()))
            raise
        outcome = SearchOutcome(
            reason=reason,
            shapes={shape: ShapeOutcome(shape, st.reason, self.evaluated(shape),
                                        st.measured_now, st.pruned, self.best(shape))
                    for shape, st in self._shapes.items()},
            wall_s=self._clock() - started)
        self._state = "finished"
        self.events.publish(SearchFinished(reason, outcome.evaluated, outcome.best))
        return outcome

    def _stored_results(self, shape: str) -> list[TrialResult]:
        if self.store is None or self.provenance is None:
            return []
        return [t.result for t in self.store.trials(self.provenance, shape, self.config.dtype)]

    def _build_strategy(self, shape: str) -> None:
        state = self._shapes[shape]
        compatible = [r for r in state.results if state.contains(r.config)]
        strategy = make_strategy(self.config.strategy, state.space, self.config.seed,
                                 history=compatible, **self.config.strategy_options)
        strategy.enqueue([state.space.default_config(), *self._suggestions])
        state.strategy = strategy

    def _edit_pending(self) -> bool:
        with self._lock:
            return self._pending_edit is not None

    def _apply_edit(self) -> None:
        with self._lock:
            edit, self._pending_edit = self._pending_edit, None
        if edit is None:
            return
        for shape, space in edit.items():
            state = self._shapes[shape]
            with self._lock:
                state.set_space(space)
            state.ahead = []
            if state.strategy is not None:
                state.strategy.cancel(state.strategy.pending)
                self._build_strategy(shape)
                state.since_improvement = 0
        detail = "; ".join(f"{shape}: {space.size} configs, {self.evaluated(shape)} measured "
                           "kept" for shape, space in edit.items())
        self.events.publish(PhaseChanged("parameters edited", detail))

    def _stop_reason(self, shape: str, started: float) -> str | None:
        budget = self.config.budget
        state = self._shapes[shape]
        if self._stop.is_set():
            return "stopped"
        if budget.max_wall_s is not None and self._clock() - started >= budget.max_wall_s:
            return "time"
        if budget.max_evaluations is not None and self.evaluated(shape) >= budget.max_evaluations:
            return "budget"
        if budget.patience is not None and state.since_improvement >= budget.patience:
            return "patience"
        return None

    def _search_shape(self, shape: str, started: float) -> str:
        state = self._shapes[shape]
        self._current_shape = shape
        with self._lock:
            state.results = self._stored_results(shape)
            state.recount()
        self._build_strategy(shape)
        resumed = len(state.results)
        self.events.publish(PhaseChanged(
            f"searching shape {shape}",
            f"{state.space.size} configs; {resumed} already in the store"))
        while True:
            self._wait_if_paused()
            self._apply_edit()
            with self._lock:
                new_suggestions, self._pending_suggestions = self._pending_suggestions, []
            strategy = state.strategy
            assert strategy is not None
            if new_suggestions:
                strategy.enqueue(new_suggestions)
            reason = self._stop_reason(shape, started)
            if reason is not None:
                break
            ask = self.config.batch_size
            if self.config.budget.max_evaluations is not None:
                # configs another process holds count as spoken for until they land
                ask = min(ask, self.config.budget.max_evaluations - self.evaluated(shape)
                          - len(state.deferred))
                if ask <= 0:
                    self._settle_deferred(shape)
                    continue
            configs, state.ahead = state.ahead[:ask], state.ahead[ask:]
            if len(configs) < ask:
                configs += strategy.ask(ask - len(configs))
            if not configs:
                if state.deferred and not self._stop.is_set():
                    self._settle_deferred(shape)
                    continue
                reason = "exhausted"
                break
            kept, decisions = split_pruned(configs, shape, self.pruners)
            for decision in decisions:
                self._record(shape, decision.as_result(shape, self.config.dtype))
            if kept:
                self._measure(shape, kept)
        state.reason = reason
        if state.ahead and isinstance(self.runner, ManyDevices):
            self.runner.compile_ahead([])  # nothing more: its compiles are cancelled
        state.ahead = []
        if state.strategy is not None:
            state.strategy.cancel(state.strategy.pending)
        return reason

    def _wait_if_paused(self) -> None:
        if self._not_paused.is_set():
            return
        self._state = "paused"
        self._held.set()
        try:
            while not self._not_paused.wait(timeout=0.1):
                if self._stop.is_set():
                    break
        finally:
            self._held.clear()
        if self._state == "paused":
            self._state = "running"

    def _claim(self, shape: str, configs: list[Config]) -> list[Config]:
        """The configs of ``configs`` this process may measure now (claimed in the store);
        the rest are adopted from the store when stored, else deferred."""
        if self.store is None or self.provenance is None:
            return configs
        by_key = {c.key(): c for c in configs}
        granted = set(self.store.claim_trials(self.provenance, shape, self.config.dtype,
                                              list(by_key), self._owner, self.lease_s))
        rest = {k: c for k, c in by_key.items() if k not in granted}
        if rest:
            stored = {t.result.config.key(): t.result
                      for t in self.store.trials(self.provenance, shape, self.config.dtype)}
            state = self._shapes[shape]
            for key, config in rest.items():
                if key in stored:
                    state.deferred.pop(key, None)
                    self._record(shape, stored[key], adopted=True)
                else:
                    state.deferred[key] = config
        return [c for k, c in by_key.items() if k in granted]

    def _settle_deferred(self, shape: str) -> None:
        """Wait once, then adopt or measure what other processes held."""
        state = self._shapes[shape]
        self._sleep(self.claim_wait_s)
        waiting = list(state.deferred.values())
        state.deferred.clear()
        mine = self._claim(shape, waiting)
        if mine:
            self._measure(shape, mine, claimed=True)

    def _measure(self, shape: str, configs: list[Config], *, claimed: bool = False) -> None:
        state = self._shapes[shape]
        assert state.strategy is not None
        if not claimed:
            configs = self._claim(shape, configs)
            if not configs:
                return
        candidates = [Candidate(c, shape, self.config.dtype) for c in configs]
        for offset, candidate in enumerate(candidates):
            self.events.publish(TrialStarted(candidate, self._index + offset))
        finished: set[Config] = set()
        results = self.runner.measure(candidates)
        self._compile_ahead(shape, len(candidates))
        try:
            for result in results:
                finished.add(result.config)
                self._record(shape, result)
                if self._stop.is_set():
                    break
                self._wait_if_paused()  # a pause holds between results, not after the batch
                if self._stop.is_set() or self._edit_pending():
                    break  # an edit applies to every candidate the runner has not started
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()
            unfinished = [c for c in configs if c not in finished]
            state.strategy.cancel(unfinished)
            if unfinished and self.store is not None and self.provenance is not None:
                self.store.release_claims(self.provenance, shape, self.config.dtype,
                                          [c.key() for c in unfinished], self._owner)

    def _compile_ahead(self, shape: str, measuring: int) -> None:
        """On a :class:`~workbench.engine.capabilities.ManyDevices` runner, ask the strategy for the next batch now (the
        ``measuring`` candidates handed to the runner count against the budget) and have
        the runner compile it while this batch is measured; the loop takes it next."""
        state = self._shapes[shape]
        if (not isinstance(self.runner, ManyDevices) or state.ahead or state.strategy is None
                or self._stop.is_set()):
            return
        ask = self.config.batch_size
        if self.config.budget.max_evaluations is not None:
            ask = min(ask, self.config.budget.max_evaluations - self.evaluated(shape)
                      - len(state.deferred) - measuring)
        if ask <= 0:
            return
        state.ahead = state.strategy.ask(ask)
        kept, _ = split_pruned(state.ahead, shape, self.pruners)  # recorded when measured
        if kept:
            self.runner.compile_ahead([Candidate(c, shape, self.config.dtype) for c in kept])

    def _record(self, shape: str, result: TrialResult, *, adopted: bool = False) -> None:
        """Store first (committed), then tell the strategy, then publish. ``adopted``: the
        result came from the store (another process measured it)."""
        state = self._shapes[shape]
        assert state.strategy is not None
        if self.store is not None and self.provenance is not None and not adopted:
            self.store.record_trial(result, self.provenance, self.session_id)
        previous = self.best(shape)
        with self._lock:
            state.results.append(result)
            state.tally(result)
        state.strategy.tell(result)
        if result.status is Status.PRUNED:
            state.pruned += 1
            self.events.publish(TrialFinished(result, self._index))
            return
        if adopted:
            state.adopted += 1
        else:
            state.measured_now += 1
        index = self._index
        self._index += 1
        self.events.publish(TrialFinished(result, index))
        if improves(result, previous) and state.contains(result.config):
            state.since_improvement = 0
            baseline = self.baselines_us.get(shape)
            speedup = (baseline / result.median_us
                       if baseline is not None and result.median_us else None)
            self.events.publish(BestImproved(
                result, previous.median_us if previous is not None else None, speedup))
        else:
            state.since_improvement += 1
