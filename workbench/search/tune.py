"""The one tune path: search, store, read back, confirm, report.

``Workbench.tune`` (Python), ``workbench tune`` (CLI), the panel's Launch button (on the
panel's worker thread) and the agent's tune step all call :func:`tune`. Like Optuna's
``Study.optimize`` it runs the search loop on the caller's thread and returns when a budget
ends it (or :meth:`Search.stop` is called from another thread through the handle given to
``on_search``). Every trial is committed to the store as it is measured; the report is then
built from the trials *read back from the store* for the template's provenance, shape and
dtype within the current space, so a resumed search, a re-launch or a larger budget
reports every stored trial, not only those measured in this call.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from workbench.core.cache_profile import is_tiled_2d
from workbench.core.conditions import DEFAULT_CONDITIONS, PickRule, check_conditions
from workbench.core.errors import SearchError, UnknownStrategyError, WorkbenchError
from workbench.core.events import EventBus
from workbench.core.kernel_folder import KernelFolder
from workbench.core.records import Status, TrialResult, Value
from workbench.core.template import KernelTemplate
from workbench.engine.capabilities import TemplateBound
from workbench.engine.ncu import MetricProfiler, finalist_l2
from workbench.engine.runner import Runner
from workbench.engine.tuning import (
    TuneReport,
    build_report,
    confirmation_from_store,
    decide_pick,
    stored_speedup,
)
from workbench.search.budget import Budget, SearchConfig
from workbench.search.orchestrator import Search, batch_for
from workbench.search.strategies import DEFAULT_STRATEGY, STRATEGIES
from workbench.search.widening import widen_and_continue
from workbench.store.approval import require_approved, version_id
from workbench.store.base import Provenance, Store, provenance_for

__all__ = ["TuneRequest", "budget_of", "store_pick", "stored_results", "tune"]


@dataclass(frozen=True)
class TuneRequest:
    """What to tune: one shape and dtype, a strategy, a budget and the report's options.

    ``budget.max_evaluations`` counts the trials already in the store (a re-run with the
    same budget measures nothing new; a larger one measures the difference); ``None``
    means the whole space. ``confirm=k`` re-measures the k fastest configs after the search
    (see :mod:`workbench.engine.tuning`); ``suggestions`` are measured first.
    ``auto_approve=True`` lets a template without an approval of its key be tuned."""

    shape: str
    dtype: str
    strategy: str = DEFAULT_STRATEGY
    budget: Budget = field(default_factory=lambda: Budget(max_evaluations=64))
    seed: int = 0
    batch_size: int | None = None  # None: the runner's (16 per GPU on a cluster), else 16
    confirm: int = 5
    top: int = 5
    suggestions: tuple[Mapping[str, Value], ...] = ()
    # the confirmation's cache conditions (None or ("read",): the search's condition only;
    # runners that cannot measure under them confirm under the search's) and pick rule
    conditions: tuple[str, ...] | None = DEFAULT_CONDITIONS
    pick_rule: PickRule | None = None
    widen: int = 0             # rounds of range widening after the search (search/widening)
    widen_budget: int = 40     # evaluations added per widening round
    auto_approve: bool = False  # tune a template nobody approved (an explicit opt-in)
    # 2-D tiled kernels: profile the finalists' L2 hit rate (Nsight Compute, where present)
    l2_profile: bool = True

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:  # before any store or runner is touched
            raise UnknownStrategyError(self.strategy, list(STRATEGIES))
        if self.conditions is not None:
            check_conditions(self.conditions)
        for name in ("confirm", "top", "widen", "widen_budget"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise SearchError(f"{name} must be an integer >= 0, got {value!r}", key=name,
                                  value=value, expected="int >= 0")


def stored_results(store: Store, provenance: Provenance, shape: str, dtype: str,
                   template: KernelTemplate, env: Mapping[str, object]) -> list[TrialResult]:
    """Every stored trial of ``provenance`` at (shape, dtype) whose config lies in
    ``template``'s current space (ranges may have been edited since they were measured)."""
    space = template.space(dict(env))
    return [t.result for t in store.trials(provenance, shape, dtype) if t.result.config in space]


def tune(folder: KernelFolder, template: KernelTemplate, runner: Runner, store: Store,
         request: TuneRequest, *, session_id: str | None = None,
         events: EventBus | None = None,
         on_search: Callable[[Search], None] | None = None,
         profiler: MetricProfiler | None = None) -> TuneReport:
    """Search ``request.shape``/``request.dtype`` of ``template`` on ``runner``, store every
    trial, confirm the finalists and return the report of every stored trial.

    ``events`` receives the search's events (trials, bests, phases, the end). ``on_search``
    is handed the :class:`Search` before it runs, so another thread can pause, resume,
    stop it or edit its ranges. For a 2-D tiled kernel (``request.l2_profile``) the
    finalists' L2 hit rates are profiled with ``profiler`` (Nsight Compute by default) and
    reported beside their times, or the report says why they were not.

    Before any GPU time the approval gate runs
    (:func:`~workbench.store.approval.require_approved`): a proposed or range-edited
    template needs an approval of exactly its key unless ``request.auto_approve``."""
    shape, dtype = request.shape, folder.check_dtype(request.dtype)
    folder.shape_values(shape)  # ShapeError naming the known shapes
    require_approved(store, folder, template, auto_approve=request.auto_approve)
    config = SearchConfig(shapes=(shape,), dtype=dtype, strategy=request.strategy,
                          seed=request.seed, budget=request.budget,
                          batch_size=request.batch_size if request.batch_size is not None
                          else batch_for(runner))
    baseline_us = _baseline_us(runner, shape, dtype)
    search = Search.for_template(folder, template, runner, config, runner.device, store=store,
                                 session_id=session_id, events=events,
                                 suggestions=request.suggestions,
                                 baselines_us={shape: baseline_us} if baseline_us else None)
    if on_search is not None:
        on_search(search)
    outcome = search.run()
    widened: tuple[str, ...] = ()
    original_params = template.params
    if request.widen and isinstance(runner, TemplateBound):
        template, rounds, last = widen_and_continue(
            search, runner, template, shape, rounds=request.widen,
            extra_evaluations=request.widen_budget, top=request.top,
            hard_max=runner.device.max_threads_per_block)
        if last is not None:  # the search's counts run on over its rounds
            outcome = last
        widened = tuple(r.describe().strip() for r in rounds)
    shape_outcome = outcome.shapes[shape]
    provenance = search.provenance or provenance_for(runner, template)
    results = stored_results(store, provenance, shape, dtype, template,
                             folder.env(shape, dtype, runner.device))

    stopped = shape_outcome.reason == "stopped"
    report = build_report(folder.name, shape, dtype, runner, results,
                          reason=shape_outcome.reason, measured_now=shape_outcome.measured_now,
                          top=request.top, confirm=0 if stopped else request.confirm,
                          conditions=request.conditions,
                          rule=request.pick_rule, template=template,
                          env=folder.env(shape, dtype, runner.device))
    why = ("the search was stopped before confirmation" if stopped and request.confirm > 0
           else "confirmation not asked for (confirm=0)" if request.confirm == 0 else "")
    report = store_pick(store, provenance, report, kernel=folder.name,
                        template_version=version_id(folder.name, template),
                        session_id=session_id, fallback_reason=why)
    if widened:
        report = replace(report, notes=(*widened, *report.notes))
    if request.widen and template.params != original_params:
        report = replace(report, widened=template)
    if stopped and request.confirm > 0 and report.top:
        report = replace(report, confirm_note="the search was stopped before confirmation")
    if request.l2_profile and not stopped and report.top and is_tiled_2d(template):
        report = replace(report, l2=finalist_l2(folder, template, runner, report.finalists,
                                                shape, dtype, profiler=profiler))
    return report


def store_pick(store: Store, provenance: Provenance, report: TuneReport, *, kernel: str,
               template_version: str, session_id: str | None,
               fallback_reason: str = "") -> TuneReport:
    """Store the pick ``report`` decided, with the confirmation measurements behind it, the
    moment it is decided (:func:`~workbench.engine.tuning.decide_pick`), and return the
    report with the pick, the confirmation's rounds and the speedup *read back* from the
    store: what every later view (export, dispatch, report notebook, sidebar, panel) reads.
    A report with no ok trial stores nothing."""
    decided = decide_pick(report, kernel=kernel, template_version=template_version,
                          session_id=session_id, pick_id=uuid.uuid4().hex,
                          device=provenance.device, fallback_reason=fallback_reason)
    if decided is None:
        return report
    store.record_pick(decided[0], provenance, decided[1])
    stored = store.pick(provenance, report.shape, report.dtype)
    if stored is None or stored.id != decided[0].id:  # another writer's pick came after
        stored = next((p for p in store.picks(provenance=provenance, shape=report.shape,
                                              dtype=report.dtype) if p.id == decided[0].id),
                      None)
    if stored is None:
        return report
    rows = [r.measurement for r in store.confirmations(stored.id)]
    confirmation = report.confirmation
    back = confirmation_from_store(stored, rows, report.finalists if confirmation is None
                                   else confirmation.finalists)
    if confirmation is not None and back is not None:
        # the rounds as stored; the per-condition table (conditions) is this call's own
        confirmation = replace(confirmation, selection=back.selection, chosen=back.chosen,
                               baseline=back.baseline or confirmation.baseline)
    return replace(report, stored_pick=stored, confirmation=confirmation,
                   speedup=stored_speedup(stored) or report.speedup)


def _baseline_us(runner: Runner, shape: str, dtype: str) -> float | None:
    try:
        base = runner.baseline(shape, dtype)
    except WorkbenchError:
        return None
    return base.median_us if base.status is Status.OK else None


def budget_of(evaluations: int | Budget | None, *, max_wall_s: float | None = None,
              patience: int | None = None) -> Budget:
    """A Budget from the entry points' plain arguments (``None`` evaluations: no limit)."""
    if isinstance(evaluations, Budget):
        return evaluations
    return Budget(max_evaluations=evaluations, max_wall_s=max_wall_s, patience=patience)

