"""The agent's measuring steps: ``tune`` (an orchestrator search over the approved template)
and ``test`` (the best re-measured with the baseline in the same runner), and the
measurements the prompts are built from (baseline, copy bandwidth, ncu metrics).

These are functions of the :class:`~workbench.agent.machine.AgentMachine` they step; the
machine owns the state and decides the transitions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.agent.context import measurement, prompt_context
from workbench.agent.events import BestRetested
from workbench.agent.profile import profile_config
from workbench.agent.records import AgentState
from workbench.agent.runners import is_live, provenance_for
from workbench.core.errors import WorkbenchError
from workbench.core.records import Candidate, Config, Status
from workbench.core.template import KernelTemplate
from workbench.engine.runner import Runner
from workbench.llm.review import require_approved
from workbench.search.budget import Budget
from workbench.search.orchestrator import Search
from workbench.search.tune import TuneRequest, tune

if TYPE_CHECKING:
    from workbench.agent.machine import AgentMachine
    from workbench.agent.propose import Version


# -- what the prompts are told -----------------------------------------------------------

def measured_configs(machine: AgentMachine, version: Version) -> list[Config]:
    """The configs of ``version`` already measured (pruned ones excluded)."""
    runner = machine._runner_for(version.template)
    prov = provenance_for(runner, version.template)
    return [t.result.config for t in machine.store.trials(prov, machine.shape, machine.dtype)
            if t.result.status is not Status.PRUNED]


def space_of(machine: AgentMachine, template: KernelTemplate) -> Any:
    """``template``'s search space at the machine's shape and dtype."""
    return template.space(machine.folder.env(machine.shape, machine.dtype, machine.device))


def copy_bandwidth(machine: AgentMachine, runner: Runner) -> float | None:
    """The runner's copy bandwidth in GB/s, asked once; ``None`` where it has none."""
    if machine._copy_gb is False:
        copy = getattr(runner, "copy_timing", None)
        value: float | None = None
        if callable(copy):
            try:
                value = float(copy(machine.shape, machine.dtype).bandwidth_gb_per_s)
            except WorkbenchError:
                value = None
        machine._copy_gb = value
    return machine._copy_gb if isinstance(machine._copy_gb, float) else None


def measurement_context(machine: AgentMachine) -> Any:
    """The hardware-aware prompt context: the device, the current version's measurements
    (profiled with ncu once per best config where asked for) and the iterations so far."""
    measurements = []
    if machine._current is not None:
        runner = machine._runner_for(machine._current.template)
        best = machine._version_best
        ncu = None
        if best is not None and best.status is Status.OK and machine.config.profile \
                and is_live(runner) and machine.compiler is not None:
            key = (machine._current.id, best.config.key())
            if key not in machine._ncu:
                machine._ncu[key] = profile_config(machine.folder, machine._current.template,
                                                   best.config, machine.shape, machine.dtype,
                                                   compiler=machine.compiler)
            ncu = machine._ncu[key]
        measurements.append(measurement(
            machine.folder, machine.shape, machine.dtype,
            baseline_us=machine._baselines.get(machine._current.text_sha256), best=best,
            copy_gb_per_s=copy_bandwidth(machine, runner), ncu_metrics=ncu))
    return prompt_context(machine.device, measurements, machine._history)


# -- tune and test -----------------------------------------------------------------------

def version_baseline_us(machine: AgentMachine, version: Version, runner: Runner) -> float | None:
    """The baseline's median in µs beside ``version``, measured once per version."""
    key = version.text_sha256
    if key not in machine._baselines:
        try:
            base = runner.baseline(machine.shape, machine.dtype)
            machine._baselines[key] = base.median_us if base.status is Status.OK else None
        except WorkbenchError as exc:
            machine._detail.setdefault("notes", []).append(f"no baseline: {exc.message}")
            machine._baselines[key] = None
    return machine._baselines[key]


def tune_step(machine: AgentMachine) -> None:
    """``tune``: search the approved version, the plan's suggested configs enqueued."""
    version = machine._current
    assert version is not None
    template = version.template
    # the gate, once more, right before GPU time is spent
    require_approved(template, machine._reviews(version))
    runner = machine._runner_for(template)
    baseline_us = version_baseline_us(machine, version, runner)
    prov = provenance_for(runner, template)
    space = space_of(machine, template).require_nonempty()
    already = sum(1 for t in machine.store.trials(prov, machine.shape, machine.dtype)
                  if t.result.status is not Status.PRUNED and t.result.config in space)
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    for config in machine._suggestions:
        try:
            ok = Config(config) in space
        except (WorkbenchError, TypeError, ValueError):
            ok = False
        (kept if ok else dropped).append(dict(config))
    b = machine.config.budget
    budget = Budget(max_evaluations=(already + b.max_evaluations
                                     if b.max_evaluations is not None else None),
                    max_wall_s=b.max_wall_s, patience=b.patience)
    request = TuneRequest(shape=machine.shape, dtype=machine.dtype,
                          strategy=machine.config.strategy, seed=machine.config.seed,
                          budget=budget, confirm=0, suggestions=tuple(kept))

    def hold(search: Search) -> None:
        machine._search = search
        if machine._stop.is_set():
            search.stop()
    try:  # the one tune path; the test step re-measures the best beside the baseline
        report = tune(machine.folder, template, runner, machine.store, request,
                      session_id=machine.session_id, events=machine.events, on_search=hold)
    finally:
        machine._search = None
    machine._version_best = report.best
    machine._detail["search"] = {
        "version_id": version.id, "reason": report.reason,
        "evaluated": report.evaluated, "measured_now": report.measured_now,
        "pruned": report.status_counts.get(Status.PRUNED.value, 0), "enqueued": kept,
        "dropped_suggestions": dropped, "provenance": dict(prov.__dict__),
        "baseline_us": baseline_us, "runner": runner.description}
    if report.reason == "stopped":
        machine._finish(AgentState.DONE, "stopped")
        return
    machine._enter(AgentState.TEST)


def retest_step(machine: AgentMachine) -> None:
    """``test``: re-measure the version's best beside the baseline in the same runner."""
    version = machine._current
    assert version is not None
    best = machine._version_best
    if best is None or best.status is not Status.OK:
        machine._detail["test"] = {"status": "no valid config"}
        machine._end_iteration("test", f"tuned version {version.id[:12]}",
                               "no config verified and timed")
        machine._enter(AgentState.PLAN)
        return
    runner = machine._runner_for(version.template)
    again = next(iter(runner.measure([Candidate(best.config, machine.shape, machine.dtype)])))
    try:
        base = runner.baseline(machine.shape, machine.dtype)
        baseline_us = base.median_us if base.status is Status.OK else None
    except WorkbenchError:
        baseline_us = None
    best_us = again.median_us if again.status is Status.OK else None
    speedup = baseline_us / best_us if baseline_us and best_us else None
    machine._detail["test"] = {"status": again.status.value, "reason": again.reason,
                               "config": dict(best.config), "best_us": best_us,
                               "search_best_us": best.median_us, "baseline_us": baseline_us,
                               "speedup": speedup, "source": again.source,
                               "version_id": version.id}
    if best_us is not None and (machine._best is None
                                or best_us < (machine._best[0].median_us or float("inf"))):
        machine._best = (again, baseline_us, version.id)
    machine.events.publish(BestRetested(machine.iteration, dict(best.config),
                                        again.status.value, best_us, baseline_us, speedup))
    result = (f"best {best_us:.2f} us at {dict(best.config)}"
              + (f", {speedup:.2f}x vs baseline" if speedup else "")
              if best_us is not None else f"re-test {again.status.value}: {again.reason}")
    machine._end_iteration("test", f"tuned version {version.id[:12]} ({version.origin})",
                           result)
    machine._enter(AgentState.PLAN)
