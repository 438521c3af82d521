"""A simulated GPU for CPU-only scaling checks of the DaskRunner (issue 29 item 5).

:class:`PacedDeviceEndpoint` gives every Dask worker a :class:`PacedDevice`: the
SyntheticRunner (invented times, a real :class:`~workbench.engine.compiler.Compiler`) whose
``finish`` (the part of a Dask measure task that holds the worker's device, under its turn
lock) keeps a simulated device busy for ``device_s``, plus ``spin_up_s`` when it was idle
longer than ``idle_gap_s`` (the GPU worker's spin-up before the change that made it
conditional; 0 models a warm GPU that skips it). It goes through the same plan / local
compile / finish path as the live LocalRunner, so compile tasks, cubins' travel, the turn
lock and the driver's store writes are those of a real sweep; only the device is a sleep.

Each result's ``extra["device"]`` says when the simulated device began and ended (the
worker's ``time.time()``), the idle gap before it and the spin-up it paid, so a benchmark
can tell the device's busy share from the coordinator's.

:func:`fake_nvcc` writes an ``nvcc`` stand-in (a POSIX shell script: ``--version``, then
``sleep`` for the compile and a ptxas report naming the entry) for a fixed compile time
without loading the CPU: point ``CUDA_HOME`` at its folder before the cluster starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from workbench.core.errors import WorkbenchError
from workbench.core.feasibility import config_rejection
from workbench.core.hardware import DeviceSpec
from workbench.core.identifiers import identifier_problem
from workbench.core.kernel_folder import KernelFolder
from workbench.core.records import Candidate, TrialResult
from workbench.core.space import SearchSpace
from workbench.core.template import KernelInstance, KernelTemplate
from workbench.core.write_policy import write_file
from workbench.engine.compiler import Compiler, CompileResult
from workbench.engine.dask_tasks import _digest, rendered
from workbench.engine.runner import PlannedCandidate, PlanningRunner, Runner
from workbench.testing.synthetic_runner import SyntheticRunner


class PacedDevice(PlanningRunner):
    """The SyntheticRunner holding a simulated device in ``finish`` (see the module
    docstring); ``clock`` (seconds) and ``sleep`` are injected for tests."""

    def __init__(self, inner: SyntheticRunner, device_s: float, spin_up_s: float = 0.0,
                 idle_gap_s: float = 0.05, *, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if inner.compiler is None:
            raise ValueError("a PacedDevice needs a SyntheticRunner with a compiler")
        self.inner = inner
        self.compiler: Compiler = inner.compiler
        self.description = inner.description
        self.device: DeviceSpec = inner.device
        self.device_s = device_s
        self.spin_up_s = spin_up_s
        self.idle_gap_s = idle_gap_s
        self.clock = clock
        self.sleep = sleep
        self.last_busy: float | None = None
        self._spaces: dict[tuple[str, str], SearchSpace] = {}

    def plan(self, candidate: Candidate) -> TrialResult | PlannedCandidate:
        """The checks before any compile with the space built once per problem, as
        LocalRunner.plan does (the SyntheticRunner builds it for every candidate: tens of
        milliseconds that a live worker does not spend, under the device's turn lock)."""
        key = (candidate.shape, candidate.dtype)
        space = self._spaces.get(key)
        if space is None:
            env = self.inner.folder.env(candidate.shape, candidate.dtype, self.device)
            space = self._spaces[key] = self.inner.template.space(env)
        try:
            config = self.inner.template.validate_config(candidate.config)
        except WorkbenchError:
            return self.inner.plan(candidate)  # the SyntheticRunner says why
        if space.rejection(config) is not None:
            return self.inner.plan(candidate)
        env = self.inner.folder.env(candidate.shape, candidate.dtype, self.device)
        launch, refused = config_rejection(self.inner.template.launch, config, env,
                                           self.device)
        if refused is not None or launch is None:
            return self.inner.plan(candidate)
        return PlannedCandidate(candidate, self.inner.template.render(config, candidate.dtype),
                                launch)

    def finish(self, plan: PlannedCandidate, compiled: CompileResult) -> TrialResult:
        began = self.clock()
        idle_s = began - self.last_busy if self.last_busy is not None else None
        spin_s = self.spin_up_s if idle_s is None or idle_s > self.idle_gap_s else 0.0
        self.sleep(self.device_s + spin_s)
        ended = self.last_busy = self.clock()
        result = self.inner.finish(plan, compiled)
        return replace(result, extra={**result.extra, "device": {
            "began": began, "ended": ended, "idle_s": idle_s, "spin_up_s": spin_s,
            "task": _task_key()}})

    @property
    def search_condition(self) -> str:
        return self.inner.search_condition

    def baseline(self, shape: str, dtype: str, *,
                 condition: str | None = None) -> TrialResult:
        return self.inner.baseline(shape, dtype, condition=condition)

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        list(self.inner.measure([], condition=condition))  # what it cannot, it refuses now
        return self._measure(candidates)

    def _measure(self, candidates: Sequence[Candidate]) -> Iterator[TrialResult]:
        for candidate in candidates:
            plan = self.plan(candidate)
            if isinstance(plan, TrialResult):
                yield plan
            else:
                yield self.finish(plan, self.compiler.compile(plan.instance))

    def close(self) -> None:
        self.inner.close()


def _task_key() -> str:
    """The Dask task running this (``wb-measure-<batch>-<index>``), "" outside one."""
    try:
        from distributed.worker import thread_state
    except ImportError:
        return ""
    return str(getattr(thread_state, "key", "") or "")


@dataclass(frozen=True)
class PacedDeviceEndpoint:
    """Each Dask worker measures with a :class:`PacedDevice` over ``folder``'s template,
    compiling for ``arch`` into the default cache (``WORKBENCH_CACHE_DIR``), as the
    cluster's compile tasks do, so their cubins are used as built."""

    folder: KernelFolder
    template: KernelTemplate
    arch: str
    device_s: float
    spin_up_s: float = 0.0
    idle_gap_s: float = 0.05

    @property
    def key(self) -> str:
        return "paced-device-" + _digest((str(self.folder.path), self.template, self.arch,
                                          self.device_s, self.spin_up_s, self.idle_gap_s))

    def build(self) -> Runner:
        inner = SyntheticRunner(self.folder, self.template, compiler=Compiler(self.arch))
        return PacedDevice(inner, self.device_s, self.spin_up_s, self.idle_gap_s)

    def instance(self, candidate: Candidate) -> KernelInstance | None:
        return rendered(self.template, candidate)


_FAKE_NVCC = """#!/bin/sh
# nvcc stand-in for CPU-only scaling checks (workbench.testing.paced_device): no CPU load
if [ "$1" = "--version" ]; then
  echo "fake nvcc for scaling checks, compile {compile_s} s"
  exit 0
fi
out=""
src=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift 2 ;;
    *) src="$1"; shift ;;
  esac
done
sleep {compile_s}
cksum "$src" > "$out"
echo "ptxas info    : Compiling entry function '{entry}' for '{arch}'"
echo "ptxas info    : Used 26 registers, used 1 barriers"
"""


def fake_nvcc(root: Path, folder: Path, compile_s: float, entry: str, arch: str) -> Path:
    """Write ``folder/bin/nvcc`` (inside ``root``) taking ``compile_s`` per compile and
    reporting ``entry``; returns ``folder`` (the ``CUDA_HOME`` to set). The entry, the
    arch and the seconds enter a shell script, so each is checked first."""
    for name in (entry, arch):
        problem = identifier_problem(name)
        if problem is not None:
            raise ValueError(f"{name!r} cannot go into the fake nvcc: it must be {problem}")
    if isinstance(compile_s, bool) or not 0.0 <= float(compile_s) <= 60.0:
        raise ValueError(f"compile_s must be seconds in [0, 60], got {compile_s!r}")
    target = folder / "bin" / "nvcc"
    write_file(root, target, _FAKE_NVCC.format(compile_s=f"{compile_s:g}", entry=entry,
                                               arch=arch), make_folders=True)
    target.chmod(0o755)
    return folder
