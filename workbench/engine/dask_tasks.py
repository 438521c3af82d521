"""What a Dask worker runs for :class:`~workbench.engine.dask_runner.DaskRunner`.

Every public function here is a task body that the driver ships to a worker. A worker
process builds its measuring runner once per :class:`Endpoint` and keeps it for the tasks
that follow: for live measurement a :class:`~workbench.engine.runner.LocalRunner`, whose GPU
worker subprocess owns the one CUDA context, on the GPU that dask-cuda pinned for this Dask
worker with ``CUDA_VISIBLE_DEVICES`` (the subprocess inherits it and opens device 0). Each
task that touches the runner asks for the worker's GPU resource (``resources={"GPU": 1}``),
so a worker runs one of them at a time and a config is verified and timed in one task, on
one device.

Several measure tasks per GPU worker run at once (:data:`MEASURES_PER_GPU`, each asking
for that share of the worker's GPU resource), but only one at a time holds the runner (a
lock per runner): while one verifies and times on the device, the next unpack their
arguments, adopt their cubins and pass the runner's arithmetic checks, so the device does
not wait for any of that between candidates.

Compiles are tasks of their own, with no resource: they spread over every worker thread of
the cluster. A cubin travels back as bytes and is adopted into the measuring worker's
compile cache (:meth:`Compiler.adopt`), so the runner there answers from its cache even on
another host; on the host that compiled it, the compile's own result is used as it is.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from workbench.core.conditions import CONDITIONS
from workbench.core.errors import ClusterError, WorkerError
from workbench.core.hardware import DeviceSpec
from workbench.core.kernel_folder import KernelFolder
from workbench.core.records import Candidate, TrialResult
from workbench.core.template import KernelInstance, KernelTemplate
from workbench.engine.bench import BenchSettings, CopyTiming
from workbench.engine.capabilities import Facts
from workbench.engine.compiler import Compiler, CompileResult
from workbench.engine.conditions import ConditionUnavailable
from workbench.engine.runner import LocalRunner, PlannedCandidate, PlanningRunner, Runner

#: The worker resource a GPU task asks for; ``dask cuda worker --resources "GPU=1"``.
GPU_RESOURCE = "GPU"
#: Measure tasks a GPU worker holds at once (each asks for this share of its GPU resource):
#: they take turns on the runner, so the device times one candidate at a time, while the
#: others wait ready behind it, covering the driver's round trip to refill (measured on the
#: H100: a config's verify + timing takes about 14 ms, and the round trip is longer while
#: the batch's compiles load every core).
MEASURES_PER_GPU = 4


@runtime_checkable
class Endpoint(Protocol):
    """How each worker builds the runner that measures on it. Sent to the workers, so it
    must pickle; ``key`` names it (one runner per worker process per key)."""

    @property
    def key(self) -> str: ...

    def build(self) -> Runner:
        """The worker's runner (called once per worker process)."""
        ...

    def instance(self, candidate: Candidate) -> KernelInstance | None:
        """The source to compile before measuring ``candidate`` (on the driver; None: the
        runner compiles nothing, or the config does not render and the runner will say
        why)."""
        ...


def rendered(template: KernelTemplate, candidate: Candidate) -> KernelInstance | None:
    """``candidate`` rendered from ``template`` for the driver to compile, or None when its
    config does not validate or render (the runner then prunes it with the reason)."""
    try:
        return template.render(template.validate_config(candidate.config), candidate.dtype)
    except Exception:
        return None


def _digest(value: object) -> str:
    return hashlib.sha256(pickle.dumps(value)).hexdigest()[:16]


@dataclass(frozen=True)
class LiveEndpoint:
    """A LocalRunner on each GPU worker. ``folder`` must be readable at the same path on
    every host (its reference.py runs in the GPU worker)."""

    folder: KernelFolder
    template: KernelTemplate
    settings: BenchSettings = field(default_factory=BenchSettings)
    seed: int = 0

    @property
    def key(self) -> str:
        return "live-" + _digest((str(self.folder.path), self.template, self.settings,
                                  self.seed))

    def build(self) -> Runner:
        # jobs=1: the cluster compiles; this runner compiles only what it was not handed
        return LocalRunner(self.folder, self.template, self.settings, seed=self.seed, jobs=1)

    def instance(self, candidate: Candidate) -> KernelInstance | None:
        return rendered(self.template, candidate)


@dataclass(frozen=True)
class CompiledArtifact:
    """A compile's result and, when it succeeded, the cubin's bytes (to travel hosts); where
    and by which compiler it was built (host, cache folder, nvcc version, flags), so that the
    measuring worker on the same host and compiler uses it without checking the source again
    (:func:`_local_compile`)."""

    result: CompileResult
    cubin: bytes = b""
    host: str = ""
    cache_dir: str = ""
    compiler_version: str = ""
    compiler_flags: tuple[str, ...] = ()

    def built_by(self, compiler: Compiler) -> bool:
        """Whether ``compiler`` on this host would have answered with this very entry: the
        same host and cache folder, nvcc version, flags and arch, and the cubin in place."""
        result = self.result
        return (result.ok and self.host == socket.gethostname()
                and self.cache_dir == str(compiler.cache_dir)
                and self.compiler_version == compiler.version
                and self.compiler_flags == compiler.flags and result.arch == compiler.arch
                and result.cubin_path is not None and Path(result.cubin_path).is_file())


@dataclass(frozen=True)
class WorkerInfo:
    """One GPU worker as its runner sees it: where it is and what a time from it means."""

    address: str
    host: str
    gpu: str                  # the first entry of CUDA_VISIBLE_DEVICES ("" when unset)
    description: str          # the runner's description (device model, timer, carveout)
    device: DeviceSpec
    compiler_version: str
    compiler_flags: tuple[str, ...]
    driver: str
    # the cache conditions its runner measures again under (none: a confirmation on this
    # worker cannot run; a replay's: its recording's confirmation)
    conditions: tuple[str, ...] = ()
    search_condition: str = "read"  # the condition its runner's search measures under

    @property
    def identity(self) -> tuple[str, str, str, tuple[str, ...], str]:
        """What must agree for two workers' times to share a provenance."""
        return (self.description, self.driver, self.compiler_version, self.compiler_flags,
                self.device.arch)

    @property
    def label(self) -> str:
        """``host GPU n`` for tables and the panel."""
        return f"{self.host} GPU {self.gpu or '?'}"


_RUNNERS: dict[str, Runner] = {}
_TURNS: dict[str, threading.Lock] = {}  # one per runner: who holds its device
_RUNNERS_LOCK = threading.Lock()


def _worker_address() -> str:
    from distributed import get_worker

    try:
        return str(get_worker().address)
    except ValueError:  # not inside a Dask worker (a direct call in a test)
        return f"local-{os.getpid()}"


def _gpu_label() -> str:
    return os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()


@dataclass(frozen=True)
class PackedEndpoint:
    """An endpoint pickled once on the driver. Tasks carry these bytes: Dask neither walks
    the endpoint's nested records for every task (milliseconds each) nor unpickles them on
    the worker, which unpacks an endpoint only the first time it meets its key."""

    key: str
    blob: bytes

    @classmethod
    def pack(cls, endpoint: Endpoint) -> PackedEndpoint:
        return cls(endpoint.key, pickle.dumps(endpoint))


def _runner(packed: PackedEndpoint) -> Runner:
    with _RUNNERS_LOCK:
        runner = _RUNNERS.get(packed.key)
        if runner is None:
            endpoint: Endpoint = pickle.loads(packed.blob)
            runner = _RUNNERS[packed.key] = endpoint.build()
            _TURNS[packed.key] = threading.Lock()
        return runner


def _turn(packed: PackedEndpoint) -> threading.Lock:
    """The lock held while a task uses the runner of ``packed`` (its device)."""
    _runner(packed)
    return _TURNS[packed.key]


def _compiler_of(runner: Runner) -> Compiler | None:
    """The compiler of ``runner`` (a live one's, the synthetic one's), if it compiles."""
    compiler = runner.compiler if isinstance(runner, (Facts, PlanningRunner)) else None
    return compiler if isinstance(compiler, Compiler) else None


def measurable(runner: Runner) -> tuple[str, ...]:
    """The cache conditions ``runner`` measures again under (the contract refuses the
    others at the call: ``measure([], condition=c)``)."""
    conditions = []
    for condition in CONDITIONS:
        try:
            list(runner.measure([], condition=condition))
        except ConditionUnavailable:
            continue
        conditions.append(condition)
    return tuple(conditions)


def hello(endpoint: PackedEndpoint) -> WorkerInfo:
    """Start this worker's runner (a CUDA context, for a live one) and describe it."""
    runner = _runner(endpoint)
    compiler = _compiler_of(runner)
    facts = runner.facts if isinstance(runner, Facts) else {}
    return WorkerInfo(address=_worker_address(), host=socket.gethostname(), gpu=_gpu_label(),
                      description=runner.description, device=runner.device,
                      compiler_version=compiler.version if compiler else "",
                      compiler_flags=compiler.flags if compiler else (),
                      driver=str(facts.get("driver") or ""),
                      conditions=measurable(runner), search_condition=runner.search_condition)


def compile_instance(arch: str, instance: KernelInstance, *,
                     faithful: bool = False) -> CompiledArtifact:
    """Compile (or answer from this host's cache) and carry the cubin back as bytes;
    ``faithful``: with the compiler whose code is nvcc's (:meth:`Compiler.faithful`: a
    confirmation's finalists)."""
    compiler = Compiler(arch)
    if faithful:
        compiler = compiler.faithful()
    result = compiler.compile(instance)
    cubin = Path(result.cubin_path).read_bytes() if result.ok and result.cubin_path else b""
    return CompiledArtifact(result, cubin, host=socket.gethostname(),
                            cache_dir=str(compiler.cache_dir),
                            compiler_version=compiler.version,
                            compiler_flags=compiler.flags)


class _PhaseClock:
    """The seconds of one measure task by phase: each :meth:`mark` names the time since the
    previous one, less the waits for the runner's turn, which add up in ``wait_turn_s``."""

    def __init__(self, began: float, clock: Any = time.perf_counter) -> None:
        self.clock = clock
        self.began = self.last = began
        self.waited = 0.0
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def turn(self, lock: threading.Lock) -> Iterator[None]:
        asked = self.clock()
        with lock:
            waited = self.clock() - asked
            self.waited += waited
            self.last += waited
            yield

    def mark(self, name: str) -> None:
        now = self.clock()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self.last
        self.last = now

    def phases(self) -> dict[str, float]:
        """The marked phases, ``wait_turn_s`` and ``task_s`` (the whole task so far)."""
        return {**self.seconds, "wait_turn_s": self.waited,
                "task_s": self.clock() - self.began}


def task_phases(result: TrialResult, phases: Mapping[str, float]) -> TrialResult:
    """``result`` with ``phases`` (seconds) added to ``extra["phases_s"]``."""
    merged = {**(result.extra.get("phases_s") or {}),
              **{k: round(v, 6) for k, v in phases.items()}}
    return replace(result, extra={**result.extra, "phases_s": merged})


def where(result: TrialResult) -> TrialResult:
    """``result`` with ``extra["worker"]``: the Dask worker, host and GPU that measured it."""
    return replace(result, extra={**result.extra, "worker": {
        "address": _worker_address(), "host": socket.gethostname(), "gpu": _gpu_label()}})


def measure(endpoint: PackedEndpoint, description: str, candidate: Candidate,
            artifact: CompiledArtifact | None) -> TrialResult:
    """Verify and time one candidate on this worker's device (compiled by the cluster when
    ``artifact`` is given). ``description`` is what the driver's runner measures with: a
    worker of another kind that joined later refuses rather than mixing its times in.

    Everything but the device work runs before this task takes its turn on the runner.
    The result's ``extra["phases_s"]`` adds the task's own phases (:func:`task_phases`)."""
    began = time.perf_counter()
    runner = _runner(endpoint)
    if runner.description != description:
        raise ClusterError(f"{_worker_address()} measures with {runner.description}, not "
                           f"{description}: give it its own resource name",
                           value=runner.description, expected=description)
    if artifact is not None and isinstance(runner, PlanningRunner) and isinstance(
            runner.compiler, Compiler):
        clock = _PhaseClock(began)
        with clock.turn(_turn(endpoint)):  # plan() keeps the runner's caches and counters
            plan = runner.plan(candidate)
        clock.mark("plan_s")
        if isinstance(plan, TrialResult):
            return where(plan)
        compiled = _local_compile(runner.compiler, plan, artifact)
        clock.mark("local_compile_s")
        with clock.turn(_turn(endpoint)):
            result = runner.finish(plan, compiled)
        clock.mark("finish_s")
        return where(task_phases(result, clock.phases()))
    compiler = _compiler_of(runner)
    if artifact is not None and artifact.result.ok and compiler is not None:
        compiler.adopt(artifact.result, artifact.cubin)
    with _turn(endpoint):
        results = list(runner.measure([candidate]))
    if len(results) != 1:
        raise WorkerError(f"{runner.description} answered {len(results)} results for one "
                          f"candidate {dict(candidate.config)}", runner=str(runner.description),
                          value=len(results), expected="1 result")
    return where(results[0])


def _local_compile(compiler: Compiler, plan: PlannedCandidate,
                   artifact: CompiledArtifact) -> CompileResult:
    """The compile of ``plan`` on this host: built by this very compiler into this host's
    cache, the compile's own result (no second source check and hash: tens of milliseconds
    of Python in the process that feeds the GPU, measured in issue 29 item 5); else the
    cubin adopted into this compiler's cache and looked up, with the cluster's compile
    time; a compiler that differs misses and compiles itself. A failed compile is final."""
    compiled = artifact.result
    same = compiled.instance_hash == plan.instance.hash
    if same and not compiled.ok:
        return compiled
    if same and artifact.built_by(compiler):
        return replace(compiled, cached=True)
    if compiled.ok:
        compiler.adopt(compiled, artifact.cubin)
    local = compiler.compile(plan.instance)
    return replace(local, compile_s=compiled.compile_s) if same and local.cached else local


def _checked(endpoint: PackedEndpoint, description: str) -> Runner:
    runner = _runner(endpoint)
    if runner.description != description:
        raise ClusterError(f"{_worker_address()} measures with {runner.description}, not "
                           f"{description}: give it its own resource name",
                           value=runner.description, expected=description)
    return runner


def measure_condition(endpoint: PackedEndpoint, description: str, condition: str,
                      candidates: list[Candidate],
                      artifacts: list[CompiledArtifact | None]) -> list[TrialResult]:
    """Measure ``candidates`` again under a cache condition on this worker's device, in one
    turn on its runner (``artifacts``: the cluster's compiles, adopted into this worker's
    cache first, so the runner answers its compiles from the cache: they are the faithful
    compiler's, :func:`compile_instance` with ``faithful``, as the runner's own compiles
    under a condition are). A runner that cannot raises ConditionUnavailable."""
    runner = _checked(endpoint, description)
    compiler = _compiler_of(runner)
    for artifact in artifacts:
        if artifact is not None and artifact.result.ok and compiler is not None:
            compiler.faithful().adopt(artifact.result, artifact.cubin)
    with _turn(endpoint):
        return [where(r) for r in runner.measure(candidates, condition=condition)]


def baseline(endpoint: PackedEndpoint, description: str, shape: str, dtype: str,
             condition: str | None = None) -> TrialResult:
    """The baseline kernel measured on this worker's device (under a named cache
    condition: measured again)."""
    runner = _checked(endpoint, description)
    with _turn(endpoint):
        return where(runner.baseline(shape, dtype, condition=condition))


def copy_timing(endpoint: PackedEndpoint, shape: str, dtype: str) -> CopyTiming | None:
    """A device-to-device copy of the problem's bytes on this worker's device (None when
    the runner cannot time one)."""
    runner = _runner(endpoint)
    with _turn(endpoint):
        return runner.copy_timing(shape, dtype) if isinstance(runner, Facts) else None


def close_runners() -> int:
    """Close every runner of this worker process (their CUDA contexts go with them)."""
    with _RUNNERS_LOCK:
        runners = list(_RUNNERS.values())
        _RUNNERS.clear()
        _TURNS.clear()
    for runner in runners:
        runner.close()
    return len(runners)


def worker_pid() -> int:
    """This worker's process id (tests kill it)."""
    return os.getpid()


def runner_count(**_: Any) -> int:
    """How many runners this worker process holds."""
    return len(_RUNNERS)
