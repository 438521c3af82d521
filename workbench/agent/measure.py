"""The agent's measuring steps: ``tune`` (an orchestrator search over the approved template)
and ``test`` (the best re-measured with the baseline in the same runner), and the
measurements the prompts are built from (baseline, copy bandwidth, ncu metrics).

These are functions of the :class:`~workbench.agent.host.AgentMachine` they step; the
host owns the state and decides the transitions.
"""

from __future__ import annotations

from typing import Any

from workbench.agent.context import measurement, prompt_context
from workbench.agent.events import BestRetested, TuneBudget
from workbench.agent.records import AgentState, LoopState, StepHost, Version
from workbench.agent.runners import is_live, provenance_for
from workbench.core.errors import WorkbenchError
from workbench.core.events import PhaseChanged
from workbench.core.picks import improves
from workbench.core.records import Candidate, Config, Status, TrialResult
from workbench.core.template import KernelTemplate
from workbench.engine.bench import SpeedupInterval
from workbench.engine.capabilities import Facts
from workbench.engine.ncu import profile_config
from workbench.engine.runner import Runner
from workbench.search.budget import Budget
from workbench.search.tune import TuneRequest, tune

# -- what the prompts are told -----------------------------------------------------------

def measured_configs(host: StepHost, version: Version) -> list[Config]:
    """The configs of ``version`` already measured (pruned ones excluded)."""
    runner = host.runner_for(version.template)
    prov = provenance_for(runner, version.template)
    return [t.result.config for t in host.store.trials(prov, host.shape, host.dtype)
            if t.result.status is not Status.PRUNED]


def space_of(host: StepHost, template: KernelTemplate) -> Any:
    """``template``'s search space at the host's shape and dtype."""
    return template.space(host.folder.env(host.shape, host.dtype, host.device))


def copy_bandwidth(host: StepHost, loop: LoopState, runner: Runner) -> float | None:
    """The runner's copy bandwidth in GB/s, asked once; ``None`` where it has none."""
    if loop.copy_gb is False:
        value: float | None = None
        if isinstance(runner, Facts):
            try:
                copy = runner.copy_timing(host.shape, host.dtype)
            except WorkbenchError:
                copy = None
            value = float(copy.bandwidth_gb_per_s) if copy is not None else None
        loop.copy_gb = value
    return loop.copy_gb if isinstance(loop.copy_gb, float) else None


def measurement_context(host: StepHost, loop: LoopState) -> Any:
    """The hardware-aware prompt context: the device, the current version's measurements
    (profiled with ncu once per best config where asked for) and the iterations so far."""
    measurements = []
    if loop.current is not None:
        runner = host.runner_for(loop.current.template)
        best = loop.version_best
        ncu = None
        if best is not None and best.status is Status.OK and host.config.profile \
                and is_live(runner) and host.compiler is not None:
            key = (loop.current.id, best.config.key())
            if key not in loop.ncu:
                loop.ncu[key] = profile_config(host.folder, loop.current.template,
                                                   best.config, host.shape, host.dtype,
                                                   compiler=host.compiler)
            ncu = loop.ncu[key]
        measurements.append(measurement(
            host.folder, host.shape, host.dtype,
            baseline_us=loop.baselines.get(loop.current.text_sha256), best=best,
            copy_gb_per_s=copy_bandwidth(host, loop, runner), ncu_metrics=ncu, l2=loop.l2))
    return prompt_context(host.device, measurements, loop.history)


# -- tune and test -----------------------------------------------------------------------

def version_baseline_us(host: StepHost, loop: LoopState, version: Version, runner: Runner) -> float | None:
    """The baseline's median in µs beside ``version``, measured once per version."""
    key = version.text_sha256
    if key not in loop.baselines:
        try:
            base = runner.baseline(host.shape, host.dtype)
            loop.baselines[key] = base.median_us if base.status is Status.OK else None
        except WorkbenchError as exc:
            loop.detail.setdefault("notes", []).append(f"no baseline: {exc.message}")
            loop.baselines[key] = None
    return loop.baselines[key]


def tune_step(host: StepHost, loop: LoopState) -> LoopState:
    """``tune``: search the approved version, the plan's suggested configs enqueued."""
    version = loop.current
    assert version is not None
    template = version.template
    runner = host.runner_for(template)
    baseline_us = version_baseline_us(host, loop, version, runner)
    prov = provenance_for(runner, template)
    space = space_of(host, template).require_nonempty()
    already = sum(1 for t in host.store.trials(prov, host.shape, host.dtype)
                  if t.result.status is not Status.PRUNED and t.result.config in space)
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    for config in loop.suggestions:
        try:
            ok = Config(config) in space
        except (WorkbenchError, TypeError, ValueError):
            ok = False
        (kept if ok else dropped).append(dict(config))
    b = host.config.budget
    budget = Budget(max_evaluations=(already + b.max_evaluations
                                     if b.max_evaluations is not None else None),
                    max_wall_s=b.max_wall_s, patience=b.patience)
    # the one budget wording, "N more, M stored": no evaluation limit (wall time or patience
    # bound the step) means at most the rest of the space
    planned = TuneBudget(host.iteration, version.id, budget.max_evaluations
                         if budget.max_evaluations is not None else already + space.size,
                         already)
    host.events.publish(planned)
    host.events.publish(PhaseChanged("agent: tune", planned.line))
    request = TuneRequest(shape=host.shape, dtype=host.dtype,
                          strategy=host.config.strategy, seed=host.config.seed,
                          budget=budget, confirm=host.config.confirm, suggestions=tuple(kept),
                          l2_profile=host.config.profile, widen=host.config.widen)
    # no auto_approve here: the review step stored the approval the gate checks

    try:  # the one tune path, its confirmation included (reported by the test step)
        report = tune(host.folder, template, runner, host.store, request,
                      session_id=host.session_id, events=host.events,
                      on_search=host.hold_search)
    finally:
        host.hold_search(None)
    ended = TuneBudget(host.iteration, version.id, planned.budget_evaluations,
                       already + report.measured_now, report.reason)
    host.events.publish(ended)
    host.events.publish(PhaseChanged("agent: tune", ended.line))
    loop.version_best = report.best
    loop.l2 = report.l2
    loop.version_report = report
    loop.detail["search"] = {
        "budget": ended.words, "budget_evaluations": ended.budget_evaluations,
        "stored_before": already,
        "version_id": version.id, "reason": report.reason,
        "evaluated": report.evaluated, "measured_now": report.measured_now,
        "pruned": report.status_counts.get(Status.PRUNED.value, 0), "enqueued": kept,
        "dropped_suggestions": dropped, "provenance": dict(prov.__dict__),
        "baseline_us": baseline_us, "runner": runner.description,
        "l2": report.l2.to_dict() if report.l2 is not None else None,
        "confirmation": (report.confirmation.summary() if report.confirmation is not None
                         else report.confirm_note),
        # what widening did (`--widen`): each round's edges and new ranges
        "widened": [n for n in report.notes if n.lstrip().startswith("widen:")],
        "edges": [e.describe() for e in report.edges]}
    if report.reason == "stopped":
        host.finish(AgentState.DONE, "stopped")
        return loop
    host.enter(AgentState.TEST)
    return loop


def _confirmed(loop: LoopState) -> tuple[TrialResult, float, SpeedupInterval | None] | None:
    """The tune's confirmed pick, its baseline (same round and condition) and the speedup
    interval; None where the tune could not confirm (a replay) or the pick failed."""
    report = loop.version_report
    if report is None or report.confirmed is None or report.baseline_us is None:
        return None
    if report.confirmed.status is not Status.OK or report.confirmed.median_us is None:
        return None
    return report.confirmed, report.baseline_us, report.speedup


def _remeasured(host: StepHost, version: Version,
                best: TrialResult) -> tuple[TrialResult, float | None]:
    """The best measured again beside the baseline in the same runner."""
    runner = host.runner_for(version.template)
    again = next(iter(runner.measure([Candidate(best.config, host.shape, host.dtype)])))
    try:
        base = runner.baseline(host.shape, host.dtype)
        baseline_us = base.median_us if base.status is Status.OK else None
    except WorkbenchError:
        baseline_us = None
    return again, baseline_us


def retest_step(host: StepHost, loop: LoopState) -> LoopState:
    """``test``: report the tune's confirmed pick beside the baseline of the same round;
    where the runner could not confirm (it answers from a recording), re-measure the
    version's best beside the baseline in the same runner."""
    version = loop.current
    assert version is not None
    best = loop.version_best
    budget = str((loop.detail.get("search") or {}).get("budget", ""))  # "N more, M stored"
    said, noted = (f": {budget}", f"; {budget}") if budget else ("", "")
    if best is None or best.status is not Status.OK:
        loop.detail["test"] = {"status": "no valid config"}
        host.end_iteration("test", f"tuned version {version.id[:12]}{said}",
                           f"no config verified and timed{noted}")
        host.enter(AgentState.PLAN)
        return loop
    confirmed = _confirmed(loop)
    interval: SpeedupInterval | None = None
    baseline_us: float | None
    if confirmed is not None:
        again, baseline_us, interval = confirmed
    else:
        again, baseline_us = _remeasured(host, version, best)
    best_us = again.median_us if again.status is Status.OK else None
    speedup = baseline_us / best_us if baseline_us and best_us else None
    report = loop.version_report
    loop.detail["test"] = {"status": again.status.value, "reason": again.reason,
                               "config": dict(again.config), "best_us": best_us,
                               "search_best_us": best.median_us, "baseline_us": baseline_us,
                               "speedup": speedup, "source": again.source,
                               "version_id": version.id, "confirmed": confirmed is not None,
                               "speedup_ci": ([interval.low, interval.high]
                                              if interval is not None else None),
                               "confirm_note": report.confirm_note if report else ""}
    if improves(again, loop.best[0] if loop.best is not None else None):
        loop.best = (again, baseline_us, version.id)
    host.events.publish(BestRetested(host.iteration, dict(again.config),
                                        again.status.value, best_us, baseline_us, speedup))
    result = (f"best {best_us:.2f} us at {dict(again.config)}"
              + (" (confirmed)" if confirmed is not None else "")
              + (f", {speedup:.2f}x vs baseline" if speedup else "")
              if best_us is not None else f"re-test {again.status.value}: {again.reason}")
    host.end_iteration("test", f"tuned version {version.id[:12]} ({version.origin}){said}",
                       result + noted)
    host.enter(AgentState.PLAN)
    return loop
