"""Runners: evaluate candidates and yield :class:`TrialResult` s as each one finishes.

:class:`LocalRunner` owns a GPU worker subprocess (:mod:`workbench.engine.worker`, the only
process with a CUDA context). Its pipeline per ``measure`` call:

1. arithmetic first: a config a constraint rejects, or whose launch exceeds a device
   limit, is ``pruned`` with the reason before any compile;
2. rendering and compiling run on all CPU cores (``Compiler.compile_many`` in a background
   thread) while the GPU worker verifies and times what has already compiled;
3. with the compiler's resource report, a config with zero occupancy is ``pruned``;
4. an identical cubin with the same launch on the same problem is never timed twice: the
   earlier result is reused (the note ``extra["reused_from"]`` names the config measured);
5. the worker verifies on two random input sets against the baseline's outputs, then
   times; a crash or hang costs only that candidate (the worker is restarted).

A confirmation round (``measure(candidates, condition=...)``, ``baseline(shape, dtype,
condition=...)``: measured again under a cache condition, never from memory) compiles with the compiler's nvcc-only twin (:meth:`Compiler.faithful`) where the search's
compiler may build other code (NVRTC for every kernel), so the stored pick and its numbers
are measured on nvcc's code; every measured result names its builder in
``extra["built_by"]`` (``"nvcc"`` or ``"nvrtc"``).

Every runner answers the one :class:`Runner` contract: this one, the recording's
(:class:`workbench.engine.replay.ReplayRunner`), a Dask cluster's
(:class:`workbench.engine.dask_runner.DaskRunner`) and the tests' stand-ins. What some can
do beyond it is in :mod:`workbench.engine.capabilities` (three protocols).
"""

from __future__ import annotations

import abc
import hashlib
import importlib.util
import logging
import os
import queue
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from workbench.core.conditions import check_conditions
from workbench.core.errors import NoGPUError, TemplateError, WorkbenchError, WorkerError
from workbench.core.feasibility import config_rejection, occupancy, resource_rejection
from workbench.core.hardware import DeviceSpec
from workbench.core.kernel_folder import KernelFolder
from workbench.core.records import Candidate, Config, Status, TrialResult
from workbench.core.space import SearchSpace
from workbench.core.template import KernelInstance, KernelTemplate, Launch
from workbench.engine.bench import BenchSettings, CopyTiming, resolve_timer
from workbench.engine.compiler import Compiler, CompileResult
from workbench.engine.conditions import condition_of
from workbench.engine.discovery import device_facts, spec_from_hello
from workbench.engine.timing_loop import TIMING_KERNELS_SOURCE
from workbench.engine.worker import (
    CHECK_KERNELS_ENTRY,
    CHECK_KERNELS_SOURCE,
    WorkerClient,
    WorkerDied,
    WorkerTimeout,
    rule_for_event,
)
from workbench.engine.worker_messages import (
    CopyReply,
    CopyRequest,
    EvaluateReply,
    EvaluateRequest,
    HelloReply,
    HelloRequest,
    LaunchGeometry,
    LoadReply,
    LoadRequest,
    ProblemSpec,
    failure_in,
)

log = logging.getLogger(__name__)

REPLAY_HINT = ("no GPU here: use the recorded measurements instead "
               "(`workbench tune --replay`, or ReplayRunner(folder) in Python)")
HELLO_TIMEOUT_S = 120.0
LOAD_TIMEOUT_S = 300.0


def live_description(device_name: str, settings: BenchSettings) -> str:
    """A live runner's description, which store provenance carries: the timer is part of
    what a time means, so trials measured with another one never share a provenance (a
    resumed store does not mix event-pair and CUPTI times)."""
    method = f", {settings.timer} timer" if settings.timer != "events" else ""
    return f"{device_name} (live{method})"


@runtime_checkable
class Runner(Protocol):
    """The one runner contract: what the search, the confirmation, the API, CLI, agent and
    UI need from a place that measures candidates. Stateless per call.

    ``search_condition`` is the cache condition its search measures under
    (:func:`~workbench.engine.conditions.condition_of` its settings; a recording's). With
    ``condition=None`` a call measures under it and may reuse what the runner already
    measured (an identical cubin); a named condition (one of
    :data:`workbench.core.conditions.CONDITIONS`) measures again under that condition,
    never from memory, compiled as every confirmation is. A runner that cannot raises
    :class:`~workbench.engine.conditions.ConditionUnavailable` at the call, before any
    result (so ``measure([], condition=c)`` asks whether it can)."""

    description: str
    device: DeviceSpec

    @property
    def search_condition(self) -> str: ...

    def baseline(self, shape: str, dtype: str, *,
                 condition: str | None = None) -> TrialResult: ...

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        """One result per candidate, each yielded when it is ready: in any order (compiles
        finish out of order), so pair results with candidates by ``result.config``."""
        ...

    def close(self) -> None: ...


class PlanningRunner(abc.ABC):
    """A runner whose checks and compile come apart from its device work: a Dask measure
    task plans on the worker, compiles off the device and finishes in the device's turn
    (:func:`workbench.engine.dask_tasks.measure`). A base class of the concrete runners
    that have the split (this module's :class:`LocalRunner`, the tests' synthetic ones),
    not a capability callers probe."""

    compiler: Any

    @abc.abstractmethod
    def plan(self, candidate: Candidate) -> TrialResult | PlannedCandidate:
        """The checks before any compile: a pruned result, or what to compile and launch."""

    @abc.abstractmethod
    def finish(self, plan: PlannedCandidate, compiled: CompileResult) -> TrialResult:
        """Verify and time a planned candidate from its compile (the device part)."""


class BaselineError(WorkerError):
    """The baseline kernel disagrees with reference.py (or leaves outputs unwritten)."""


_WORKER_KERNELS_SOURCE = CHECK_KERNELS_SOURCE + TIMING_KERNELS_SOURCE


@dataclass(frozen=True)
class _CheckKernels:
    """The worker's own kernels (device-side comparison, gate, L2 eviction), compiled like
    any instance into one module."""

    name: str = "workbench_checks"
    entry: str = CHECK_KERNELS_ENTRY
    source: str = _WORKER_KERNELS_SOURCE
    hash: str = field(default_factory=lambda: hashlib.sha256(
        _WORKER_KERNELS_SOURCE.encode()).hexdigest()[:16])


@dataclass
class RunnerStats:
    """Where a LocalRunner's time went (seconds) and how often the worker was replaced."""

    compiled: int = 0
    compile_cpu_s: float = 0.0   # summed per-instance nvcc time (runs in parallel)
    compile_wall_s: float = 0.0  # wall time of the compile thread
    verified: int = 0
    verify_s: float = 0.0
    timed: int = 0
    bench_s: float = 0.0
    load_s: float = 0.0
    loads: int = 0
    reused: int = 0
    pruned: int = 0
    restarts: int = 0
    recovery_s: list[float] = field(default_factory=list)  # failure seen -> worker ready again
    status_counts: dict[str, int] = field(default_factory=dict)

    def count(self, status: Status) -> None:
        self.status_counts[status.value] = self.status_counts.get(status.value, 0) + 1


@dataclass(frozen=True)
class PlannedCandidate:
    """A candidate that passed the arithmetic checks: its source and its launch."""

    candidate: Candidate
    instance: KernelInstance
    launch: Launch


def _geometry(launch: Launch) -> LaunchGeometry:
    return LaunchGeometry(tuple(launch.grid), tuple(launch.block),  # type: ignore[arg-type]
                          launch.smem_bytes, launch.pdl)


def request_phases(worker_phases: Mapping[str, float], request_s: float) -> dict[str, float]:
    """The worker's phases of one evaluation plus the parent's view of it: ``request_s``
    from sending the request to holding the decoded reply, ``pipe_s`` the part of it the
    worker did not spend evaluating (framing, JSON, the pipe, waking the reader thread)."""
    phases = {**worker_phases, "request_s": round(request_s, 6)}
    if "evaluate_s" in worker_phases:
        phases["pipe_s"] = round(max(0.0, request_s - worker_phases["evaluate_s"]), 6)
    return phases


def _gpu_python_available() -> bool:
    return importlib.util.find_spec("pycuda") is not None


class LocalRunner(PlanningRunner):
    """Measures on the local GPU through a worker subprocess. Use as a context manager."""

    def __init__(self, folder: KernelFolder, template: KernelTemplate | None = None,
                 settings: BenchSettings | None = None, *, compiler: Compiler | None = None,
                 seed: int = 0, jobs: int | None = None, python: str | None = None) -> None:
        if python is None and not _gpu_python_available():
            raise NoGPUError(f"pycuda is not installed, so this machine cannot run kernels; "
                             f"{REPLAY_HINT}", hint=REPLAY_HINT, missing="pycuda")
        self.folder = folder
        self.template = template or folder.template
        self.settings = settings or BenchSettings()
        self.seed = seed
        self.jobs = jobs or os.cpu_count() or 1
        self.stats = RunnerStats()
        self._client = WorkerClient(python=python)
        try:
            reply = self._client.request(HelloRequest().to_message(), timeout_s=HELLO_TIMEOUT_S)
        except WorkerError as exc:
            self._client.close()
            tail = str(exc.details.get("stderr", ""))[-600:]
            raise NoGPUError(f"the GPU worker could not start a CUDA context ({exc.message}); "
                             f"{REPLAY_HINT}\n{tail}", hint=REPLAY_HINT, stderr=tail) from exc
        failure = failure_in(reply)
        if failure is not None:
            self._client.close()
            raise NoGPUError(f"GPU worker: {failure.error}; {REPLAY_HINT}", hint=REPLAY_HINT)
        try:
            self.hello: HelloReply = HelloReply.from_message(reply)
            self.device: DeviceSpec = spec_from_hello(self.hello)
            self.facts = device_facts(self.hello)
            self.settings, self.timer_note = resolve_timer(self.settings, self.hello.cupti_error)
        except WorkbenchError:
            self._client.close()
            raise
        log.info("timer %s", self.timer_note)
        self.description = live_description(self.device.name, self.settings)
        self.compiler = compiler or Compiler(self.device.arch)
        self._loaded: tuple[str, str] | None = None
        self._failed_at: float | None = None
        self._baselines: dict[tuple[str, str], TrialResult] = {}
        self._measured: dict[tuple[str, str, str, str], TrialResult] = {}
        self._cubin_digests: dict[str, str] = {}
        self._checks: CompileResult | None = None
        self._spaces: dict[tuple[str, str], SearchSpace] = {}
        self._templates: dict[tuple[str, str], KernelTemplate] = {}
        self._under: str | None = None  # the cache condition of a confirmation round

    # -- context manager -----------------------------------------------------------------------

    def __enter__(self) -> LocalRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker (its CUDA context goes with it)."""
        self._client.close()

    # -- problem set-up ------------------------------------------------------------------------

    def _env(self, shape: str, dtype: str) -> dict[str, Any]:
        return self.folder.env(shape, dtype, self.device)

    def _problem(self, shape: str, dtype: str, launch: Launch) -> ProblemSpec:
        return ProblemSpec(shape, self.folder.shape_values(shape),
                           self.folder.arg_layout(shape, dtype), _geometry(launch),
                           self.folder.constant_layout(shape, dtype))

    def _compile_checks(self) -> CompileResult:
        if self._checks is None:
            result = self.compiler.compile(_CheckKernels())
            if not result.ok:
                raise WorkerError(f"the workbench's own check kernels failed to compile:\n"
                                  f"{result.log[-2000:]}", log_path=result.log_path)
            self._checks = result
        return self._checks

    def _builder(self) -> Compiler:
        """The compiler of the code measured now: under a confirmation's cache condition
        the one whose code is nvcc's (:meth:`Compiler.faithful`), else the search's."""
        return self.compiler if self._under is None else self.compiler.faithful()

    def _baseline_build(self, shape: str, dtype: str) -> tuple[CompileResult, Launch]:
        instance = self.folder.baseline.render({}, dtype)
        result = self._builder().compile(instance)
        if not result.ok:
            raise BaselineError(f"the baseline of {self.folder.name} does not compile for "
                                f"{dtype}: {result.error_summary}", log_path=result.log_path)
        launch = self.folder.baseline.launch_for({}, self._env(shape, dtype))
        return result, launch

    def _ensure_loaded(self, shape: str, dtype: str) -> None:
        if self._loaded == (shape, dtype) and self._client.alive:
            return
        started = time.perf_counter()
        if not self._client.alive:
            reply = self._client.request(HelloRequest().to_message(), timeout_s=HELLO_TIMEOUT_S)
            if "error" in reply:
                raise WorkerError(f"restarted GPU worker failed: {reply['error']}")
        checks = self._compile_checks()
        base, launch = self._baseline_build(shape, dtype)
        check_shape = self.folder.check_shape
        _, check_launch = self._baseline_build(check_shape, dtype)
        key = f"{self.folder.name}/{shape}/{dtype}/{self.seed}"
        assert checks.cubin_path is not None and base.cubin_path is not None
        request = LoadRequest(key=key, folder=str(Path(self.folder.path).resolve()),
                              dtype=dtype, seed=self.seed, check_kernels=checks.cubin_path,
                              baseline_cubin=base.cubin_path,
                              baseline_entry=self.folder.baseline.entry,
                              main=self._problem(shape, dtype, launch),
                              check=self._problem(check_shape, dtype, check_launch))
        try:
            reply = self._client.request(request.to_message(), timeout_s=LOAD_TIMEOUT_S)
        except WorkerError as exc:
            raise WorkerError(f"loading {key} into the GPU worker failed: {exc.message}",
                              **exc.details) from exc
        failure = failure_in(reply)
        if failure is not None:
            self._loaded = None
            if failure.kind == "baseline_wrong":
                raise BaselineError(f"{self.folder.name} ({dtype}): {failure.error}",
                                    shape=shape, dtype=dtype)
            raise WorkerError(f"loading {key} failed: {failure.error}",
                              traceback=failure.traceback)
        LoadReply.from_message(reply)  # a load reply names its time and device memory
        self._loaded = (shape, dtype)
        self.stats.loads += 1
        self.stats.load_s += time.perf_counter() - started
        if self._failed_at is not None:
            self.stats.recovery_s.append(time.perf_counter() - self._failed_at)
            self._failed_at = None

    # -- one evaluation on the GPU -------------------------------------------------------------

    def _evaluate(self, shape: str, dtype: str, cubin: str, entry: str, launch: Launch,
                  *, time_it: bool = True) -> EvaluateReply:
        """Ask the worker; failures of the worker itself become replies with a status."""
        self._ensure_loaded(shape, dtype)
        request = EvaluateRequest(key=f"{self.folder.name}/{shape}/{dtype}/{self.seed}",
                                  cubin=cubin, entry=entry, launch=_geometry(launch),
                                  settings=self.settings, time=time_it,
                                  condition=self._under or condition_of(self.settings))
        sent = time.perf_counter()
        try:
            reply = self._client.request(request.to_message(),
                                         timeout_s=self.settings.timeout_s)
        except (WorkerTimeout, WorkerDied) as exc:
            event = "watchdog" if isinstance(exc, WorkerTimeout) else "worker_died"
            rule = rule_for_event(event)
            self._worker_lost()
            tail = str(exc.details.get("stderr", ""))[-1500:]
            return EvaluateReply(status=rule.status, reason=f"{rule.meaning} ({exc.message})",
                                 log_excerpt=tail)
        failure = failure_in(reply)
        if failure is not None:
            if failure.restart_worker:
                self._worker_lost()
            raise WorkerError(f"GPU worker: {failure.error}", kind=failure.kind,
                              traceback=failure.traceback)
        parsed = EvaluateReply.from_message(reply)
        if parsed.restart_worker:
            self._worker_lost()
        return replace(parsed, phases_s=request_phases(parsed.phases_s,
                                                       time.perf_counter() - sent))

    def _worker_lost(self) -> None:
        self._client.kill()
        self._loaded = None
        self.stats.restarts += 1
        self._failed_at = time.perf_counter()

    def _result(self, candidate: Candidate, instance_hash: str, compiled: CompileResult | None,
                launch: Launch | None, reply: EvaluateReply) -> TrialResult:
        usage = compiled.usage if compiled else None
        occ = None
        if usage is not None and launch is not None:
            occ = occupancy(self.device, usage.with_dynamic_smem(launch.smem_bytes),
                            launch.threads_per_block)
        extra: dict[str, Any] = {}
        if compiled is not None:
            extra["built_by"] = compiled.compiler  # "nvcc" or "nvrtc": whose code was timed
        if launch is not None:
            extra["launch"] = _geometry(launch).to_message()
        if reply.nvml:
            extra["nvml"] = dict(reply.nvml)  # clocks and temperature around the timing
        if reply.phases_s:
            extra["phases_s"] = dict(reply.phases_s)  # where the evaluation's seconds went
        if reply.spin_up is not None:
            extra["spin_up"] = reply.spin_up.to_message()  # warmed first or not, and why
        self.stats.count(reply.status)
        if reply.verify_s is not None:
            self.stats.verified += 1
            self.stats.verify_s += float(reply.verify_s)
        if reply.timing is not None:
            self.stats.timed += 1
            self.stats.bench_s += float(reply.bench_s or 0.0)
        return TrialResult(
            config=candidate.config, shape=candidate.shape, dtype=candidate.dtype,
            status=reply.status, reason=reply.reason, timing=reply.timing, usage=usage,
            occupancy=occ, instance_hash=instance_hash,
            bytes_moved=self.folder.bytes_moved_for(candidate.shape, candidate.dtype),
            compile_s=compiled.compile_s if compiled else None,
            verify_s=reply.verify_s, bench_s=reply.bench_s, max_abs_err=reply.max_abs_err,
            device=self.device.name, source="live", log_excerpt=reply.log_excerpt,
            samples_us=reply.samples_us, event_samples_us=reply.event_samples_us,
            method=reply.method, extra=extra)

    # -- the Runner contract -------------------------------------------------------------------

    def baseline(self, shape: str, dtype: str, *,
                 condition: str | None = None) -> TrialResult:
        """Verify (against itself, after the reference check) and time the baseline kernel;
        under a named cache condition measured again, compiled as :meth:`measure` compiles
        under one."""
        if condition is not None:
            with self._condition(condition):
                return self._baseline(shape, dtype)
        return self._baseline(shape, dtype)

    def _baseline(self, shape: str, dtype: str) -> TrialResult:
        key = (shape, dtype)
        if key not in self._baselines:
            compiled, launch = self._baseline_build(shape, dtype)
            assert compiled.cubin_path is not None
            reply = self._evaluate(shape, dtype, compiled.cubin_path, self.folder.baseline.entry,
                                   launch)
            result = self._result(Candidate(Config(), shape, dtype), compiled.instance_hash,
                                  compiled, launch, reply)
            if result.status is not Status.OK:
                raise BaselineError(f"the baseline of {self.folder.name} failed at {shape}/"
                                    f"{dtype}: {result.status.value}: {result.reason}")
            self._baselines[key] = result
        return self._baselines[key]

    def copy_timing(self, shape: str, dtype: str) -> CopyTiming:
        """Time cuMemcpyDtoD of bytes_moved/2 bytes (read + written = bytes_moved)."""
        nbytes = self.folder.bytes_moved_for(shape, dtype) // 2
        if not self._client.alive:
            self._client.request(HelloRequest().to_message(), timeout_s=HELLO_TIMEOUT_S)
        checks = self._compile_checks().cubin_path
        assert checks is not None
        request = CopyRequest(nbytes=nbytes, seed=self.seed, settings=self.settings,
                              check_kernels=checks)
        reply = self._client.request(request.to_message(),
                                     timeout_s=max(60.0, self.settings.timeout_s))
        failure = failure_in(reply)
        if failure is not None:
            raise WorkerError(f"timing a device copy failed: {failure.error}",
                              kind=failure.kind, traceback=failure.traceback)
        copied = CopyReply.from_message(reply)
        return CopyTiming(shape=shape, dtype=dtype, bytes_moved=2 * copied.nbytes,
                          timing=copied.timing, samples_us=copied.samples_us)

    def _prune(self, candidate: Candidate, event: str, reason: str,
               instance_hash: str = "", compiled: CompileResult | None = None) -> TrialResult:
        rule = rule_for_event(event)
        self.stats.pruned += rule.status is Status.PRUNED
        self.stats.count(rule.status)
        return TrialResult(config=candidate.config, shape=candidate.shape, dtype=candidate.dtype,
                           status=rule.status, reason=reason, instance_hash=instance_hash,
                           usage=compiled.usage if compiled else None,
                           compile_s=compiled.compile_s if compiled else None,
                           bytes_moved=self.folder.bytes_moved_for(candidate.shape,
                                                                   candidate.dtype),
                           device=self.device.name, source="live",
                           log_excerpt=(compiled.log[-1500:] if compiled else ""))

    def plan(self, candidate: Candidate) -> TrialResult | PlannedCandidate:
        """Constraint and launch checks (no compile, no GPU): a pruned result or the source
        to compile and the launch (:meth:`finish` measures it)."""
        env = self._env(candidate.shape, candidate.dtype)
        key = (candidate.shape, candidate.dtype)
        template = self._templates.get(key)
        if template is None:  # shape-aware ranges resolved for this problem
            template = self._templates[key] = self.template.for_env(env)
        try:
            config = template.validate_config(candidate.config)
        except (TemplateError, WorkbenchError) as exc:
            return self._prune(candidate, "not_in_space", f"invalid config: {exc}")
        space = self._spaces.get((candidate.shape, candidate.dtype))
        if space is None:
            space = self._spaces[(candidate.shape, candidate.dtype)] = template.space(env)
        rejection = space.rejection(config)
        if rejection is not None:
            return self._prune(candidate, "not_in_space", f"not in the search space: {rejection}")
        launch, refused = config_rejection(template.launch, config, env, self.device)
        if refused is not None or launch is None:
            return self._prune(candidate, "launch_problem", str(refused))
        return PlannedCandidate(candidate, template.render(config, candidate.dtype), launch)

    def _cubin_digest(self, path: str) -> str:
        if path not in self._cubin_digests:
            self._cubin_digests[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        return self._cubin_digests[path]

    def use_template(self, template: KernelTemplate) -> None:
        """Render and validate with ``template`` from now on (``tune --widen``: same source,
        wider ranges)."""
        self.template = template
        self._spaces.clear()
        self._templates.clear()

    def for_template(self, template: KernelTemplate) -> LocalRunner:
        """A sibling for ``template``: the same settings, compiler and seed, its own
        isolated GPU worker (LLM-written CUDA only ever runs there). The caller closes it."""
        return LocalRunner(self.folder, template, self.settings, compiler=self.compiler,
                           seed=self.seed, jobs=self.jobs)

    @contextmanager
    def _condition(self, condition: str) -> Iterator[None]:
        """Time under a cache condition for the duration (nothing answered from memory),
        compiled by :meth:`Compiler.faithful` (nvcc's code: see :meth:`_builder`)."""
        check_conditions([condition])
        saved, baselines = self._under, self._baselines
        self._under, self._baselines = condition, {}
        self._measured.clear()
        try:
            yield
        finally:
            self._under, self._baselines = saved, baselines
            self._measured.clear()

    @property
    def search_condition(self) -> str:
        """The condition this runner's search measures under (its settings')."""
        return condition_of(self.settings)

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        """Evaluate candidates; yield each result as soon as it is known (in the order the
        GPU got to them, not the order given: match by ``result.config``). Under a named
        cache condition every candidate is measured again (nothing from memory), compiled
        by :meth:`Compiler.faithful` (nvcc's code), and the results come at once."""
        if condition is None:
            return self._measure(candidates)
        check_conditions([condition])  # every condition is measurable here
        if not candidates:
            return iter(())
        with self._condition(condition):
            return iter(list(self._measure(candidates)))

    def _measure(self, candidates: Sequence[Candidate]) -> Iterator[TrialResult]:
        pending: dict[str, list[PlannedCandidate]] = {}
        for candidate in candidates:
            plan = self.plan(candidate)
            if isinstance(plan, TrialResult):
                yield plan
            else:
                pending.setdefault(plan.instance.hash, []).append(plan)
        if not pending:
            return
        compiled_q: queue.Queue[CompileResult | BaseException | None] = queue.Queue()
        stop = threading.Event()
        instances = [items[0].instance for items in pending.values()]
        builder = self._builder()  # chosen now: the generator may resume outside _condition

        def produce() -> None:
            began = time.perf_counter()
            try:
                for result in builder.compile_many(instances, workers=self.jobs):
                    compiled_q.put(result)
                    if stop.is_set():
                        break
            except BaseException as exc:
                compiled_q.put(exc)
            finally:
                self.stats.compile_wall_s += time.perf_counter() - began
                compiled_q.put(None)

        thread = threading.Thread(target=produce, name="workbench-compile", daemon=True)
        thread.start()
        ready: list[tuple[PlannedCandidate, CompileResult]] = []
        done = False
        try:
            while not done or ready:
                # take everything compiled so far without waiting; wait only when idle
                while not done:
                    try:
                        item = compiled_q.get(block=not ready, timeout=None)
                    except queue.Empty:
                        break
                    if item is None:
                        done = True
                    elif isinstance(item, BaseException):
                        raise item
                    else:
                        self.stats.compiled += 1
                        self.stats.compile_cpu_s += item.compile_s
                        ready.extend((p, item) for p in pending.pop(item.instance_hash, []))
                if not ready:
                    continue
                # keep the loaded problem on the GPU: prefer its candidates
                pick = next((i for i, (p, _) in enumerate(ready)
                             if (p.candidate.shape, p.candidate.dtype) == self._loaded), 0)
                plan, compiled = ready.pop(pick)
                yield self.finish(plan, compiled)
        finally:
            stop.set()
            thread.join(timeout=1.0)

    def finish(self, plan: PlannedCandidate, compiled: CompileResult) -> TrialResult:
        """Verify and time a planned candidate from its compile (the GPU part of
        :meth:`measure`; one call at a time)."""
        candidate, launch = plan.candidate, plan.launch
        if not compiled.ok or compiled.cubin_path is None:
            rule = rule_for_event("compile_failed")
            self.stats.count(rule.status)
            return TrialResult(config=candidate.config, shape=candidate.shape,
                               dtype=candidate.dtype, status=rule.status,
                               reason=f"{compiled.error_kind}: {compiled.error_summary}",
                               instance_hash=plan.instance.hash, compile_s=compiled.compile_s,
                               bytes_moved=self.folder.bytes_moved_for(candidate.shape,
                                                                       candidate.dtype),
                               device=self.device.name, source="live",
                               log_excerpt=compiled.log[-1500:],
                               extra={"built_by": compiled.compiler})
        if compiled.usage is not None:
            refused = resource_rejection(
                self.device, compiled.usage.with_dynamic_smem(launch.smem_bytes),
                launch.threads_per_block)
            if refused is not None:
                return self._prune(candidate, "zero_occupancy", refused.reason,
                                   plan.instance.hash, compiled)
        key = (self._cubin_digest(compiled.cubin_path), repr(launch), candidate.shape,
               candidate.dtype)
        earlier = self._measured.get(key)
        if earlier is not None:
            self.stats.reused += 1
            self.stats.count(earlier.status)
            kept = {k: v for k, v in earlier.extra.items() if k != "phases_s"}  # not spent now
            return replace(earlier, config=candidate.config, instance_hash=plan.instance.hash,
                           compile_s=compiled.compile_s,
                           extra={**kept, "reused_from": dict(earlier.config)})
        reply = self._evaluate(candidate.shape, candidate.dtype, compiled.cubin_path,
                               plan.instance.entry, launch)
        result = self._result(candidate, plan.instance.hash, compiled, launch, reply)
        if result.status in (Status.OK, Status.WRONG_RESULT):
            self._measured[key] = result  # crashes and hangs are not cached: rerun if asked
        return result
