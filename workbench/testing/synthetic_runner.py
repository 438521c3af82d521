"""SyntheticRunner: a stand-in runner for TESTS ONLY. Its times are NOT measurements.

Tests of the agent loop need a runner for templates that no recording covers (an LLM's
proposal, the offline templater's output) on a machine without a GPU. This runner does
everything a real one does before the GPU, for real: constraint and launch checks
(``pruned`` with the reason) and, with a :class:`~workbench.engine.compiler.Compiler`, a
real nvcc compile (``compile_error`` with the log; ``usage`` and ``occupancy`` from ptxas).
Only the time is invented, by a fixed arithmetic model of the launch: roofline bytes over a
fraction of the device's datasheet bandwidth that grows with occupancy, plus a fixed launch
cost and a small deterministic per-config term (a hash of the config) so that configs
differ. Every result says so: ``source == "synthetic"``, ``extra["synthetic"] is True`` and
``extra["model"]`` names the model. Never use it to report performance.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.core.errors import WorkbenchError
from workbench.core.feasibility import config_rejection, occupancy, resource_rejection
from workbench.core.hardware import DEFAULT_DEVICE, DeviceSpec, get_device
from workbench.core.kernel_folder import KernelFolder
from workbench.core.records import (
    Candidate,
    Config,
    Occupancy,
    ResourceUsage,
    Status,
    Timing,
    TrialResult,
)
from workbench.core.template import KernelTemplate
from workbench.engine.bench import CopyTiming
from workbench.engine.compiler import Compiler, CompileResult
from workbench.engine.conditions import ConditionUnavailable
from workbench.engine.runner import PlannedCandidate, PlanningRunner

SYNTHETIC_SOURCE = "synthetic"
MODEL_NAME = "synthetic-roofline-v1 (not a measurement)"


@dataclass(frozen=True)
class SyntheticModel:
    """The arithmetic behind the invented times (microseconds, fractions of peak)."""

    launch_us: float = 2.0  # fixed cost per launch
    base_efficiency: float = 0.30  # fraction of peak bandwidth at zero occupancy
    occupancy_gain: float = 0.55  # extra fraction at full occupancy
    config_spread: float = 0.10  # deterministic per-config fraction in [0, spread)

    def time_us(self, bytes_moved: int, peak_gb_per_s: float, occupancy_fraction: float,
                config_key: str) -> float:
        digest = hashlib.sha256(config_key.encode()).digest()
        jitter = int.from_bytes(digest[:4], "big") / 2 ** 32 * self.config_spread
        efficiency = self.base_efficiency + self.occupancy_gain * occupancy_fraction + jitter
        return self.launch_us + bytes_moved / (peak_gb_per_s * 1e9 * efficiency) * 1e6


class SyntheticRunner(PlanningRunner):
    """A :class:`workbench.engine.runner.Runner` whose times are invented.

    For tests only (see the module docstring). ``compiler=None`` skips compiling and
    assumes ``assumed_regs_per_thread`` registers for the occupancy model. It measures
    again under its search's condition ("read": every call evaluates the model again, so a
    confirmation runs, on invented numbers like everything here) and under no other.
    """

    search_condition = "read"

    def __init__(self, folder: KernelFolder, template: KernelTemplate | None = None, *,
                 device: DeviceSpec | str = DEFAULT_DEVICE, compiler: Compiler | None = None,
                 model: SyntheticModel | None = None, assumed_regs_per_thread: int = 32) -> None:
        self.folder = folder
        self.template = template or folder.template
        self.device = get_device(device) if isinstance(device, str) else device
        self.compiler = compiler
        self.model = model or SyntheticModel()
        self.assumed_regs_per_thread = assumed_regs_per_thread
        self.description = f"synthetic model of {self.device.name} (NOT a measurement)"
        self.measure_calls = 0  # how many candidates were handed to measure()

    def for_template(self, template: KernelTemplate) -> SyntheticRunner:
        """The same runner for another template (shares the compiler and the model)."""
        return SyntheticRunner(self.folder, template, device=self.device, compiler=self.compiler,
                               model=self.model,
                               assumed_regs_per_thread=self.assumed_regs_per_thread)

    def use_template(self, template: KernelTemplate) -> None:
        """Evaluate ``template`` from now on."""
        self.template = template

    @property
    def facts(self) -> dict[str, Any]:
        """No machine behind the model: nothing to key its trials by."""
        return {}

    def copy_timing(self, shape: str, dtype: str) -> CopyTiming | None:
        """No device to copy on."""
        return None

    def close(self) -> None:
        """Nothing to release."""

    def _check_condition(self, condition: str | None) -> None:
        if condition is not None and condition != self.search_condition:
            raise ConditionUnavailable(
                f"{self.description} cannot measure under '{condition}': its model has one "
                f"cache condition ('{self.search_condition}')", runner=self.description,
                condition=condition, measurable=[self.search_condition],
                why="the synthetic model has one condition")

    def __enter__(self) -> SyntheticRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _result(self, candidate: Candidate, status: Status, reason: str = "", *,
                usage: ResourceUsage | None = None, occ: Occupancy | None = None,
                timing: Timing | None = None, instance_hash: str = "",
                log: str = "") -> TrialResult:
        return TrialResult(
            config=candidate.config, shape=candidate.shape, dtype=candidate.dtype, status=status,
            reason=reason, timing=timing, usage=usage, occupancy=occ, instance_hash=instance_hash,
            bytes_moved=self.folder.bytes_moved_for(candidate.shape, candidate.dtype),
            device=self.device.name, source=SYNTHETIC_SOURCE, log_excerpt=log,
            extra={"synthetic": True, "model": MODEL_NAME})

    def _plan(self, template: KernelTemplate, candidate: Candidate,
              check_space: bool) -> TrialResult | PlannedCandidate:
        env = self.folder.env(candidate.shape, candidate.dtype, self.device)
        config = candidate.config
        if check_space:
            try:
                config = template.validate_config(candidate.config)
            except WorkbenchError as exc:
                return self._result(candidate, Status.PRUNED, f"invalid config: {exc}")
            rejection = template.space(env).rejection(config)
            if rejection is not None:
                return self._result(candidate, Status.PRUNED,
                                    f"not in the search space: {rejection}")
        launch, refused = config_rejection(template.launch, config, env, self.device)
        if refused is not None or launch is None:
            return self._result(candidate, Status.PRUNED, str(refused))
        return PlannedCandidate(candidate, template.render(config, candidate.dtype), launch)

    def _finish(self, template: KernelTemplate, plan: PlannedCandidate,
                compiled: CompileResult | None) -> TrialResult:
        candidate, instance, launch = plan.candidate, plan.instance, plan.launch
        usage = ResourceUsage(regs_per_thread=self.assumed_regs_per_thread)
        if compiled is not None:
            if not compiled.ok:
                return self._result(candidate, Status.COMPILE_ERROR,
                                    f"{compiled.error_kind}: {compiled.error_summary}",
                                    instance_hash=instance.hash, log=compiled.log[-1500:])
            usage = compiled.usage or usage
        full = usage.with_dynamic_smem(launch.smem_bytes)
        occ = occupancy(self.device, full, launch.threads_per_block)
        refused = resource_rejection(self.device, full, launch.threads_per_block)
        if refused is not None:
            return self._result(candidate, Status.PRUNED, refused.reason,
                                usage=usage, occ=occ, instance_hash=instance.hash)
        t_us = self.model.time_us(self.folder.bytes_moved_for(candidate.shape, candidate.dtype),
                                  self.device.peak_mem_bandwidth_gb_per_s, occ.fraction,
                                  f"{template.source_sha256}:{candidate.config.key()}")
        timing = Timing(median_us=t_us, min_us=t_us, q1_us=t_us, q3_us=t_us, mean_us=t_us,
                        reps=1, rse_median_pct=0.0, l2_flushed=False)
        return self._result(candidate, Status.OK, usage=usage, occ=occ, timing=timing,
                            instance_hash=instance.hash)

    def _evaluate(self, template: KernelTemplate, candidate: Candidate,
                  check_space: bool) -> TrialResult:
        plan = self._plan(template, candidate, check_space)
        if isinstance(plan, TrialResult):
            return plan
        compiled = self.compiler.compile(plan.instance) if self.compiler is not None else None
        return self._finish(template, plan, compiled)

    def plan(self, candidate: Candidate) -> TrialResult | PlannedCandidate:
        """The checks before any compile, as LocalRunner.plan."""
        return self._plan(self.template, candidate, check_space=True)

    def finish(self, plan: PlannedCandidate, compiled: CompileResult) -> TrialResult:
        """The invented time of a planned candidate from its compile, as LocalRunner.finish
        (counted in ``measure_calls`` like a measured one)."""
        self.measure_calls += 1
        return self._finish(self.template, plan, compiled)

    def baseline(self, shape: str, dtype: str, *,
                 condition: str | None = None) -> TrialResult:
        """The baseline under the same synthetic model (compiled for real with a compiler)."""
        self._check_condition(condition)
        return self._evaluate(self.folder.baseline, Candidate(Config(), shape, dtype),
                              check_space=False)

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        """Synthetic results, in the order given."""
        self._check_condition(condition)
        return self._results(candidates)

    def _results(self, candidates: Sequence[Candidate]) -> Iterator[TrialResult]:
        for candidate in candidates:
            self.measure_calls += 1
            yield self._evaluate(self.template, candidate, check_space=True)
