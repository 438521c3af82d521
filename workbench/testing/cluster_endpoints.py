"""Endpoints for DaskRunner tests on CPU workers (no GPU): what each worker measures with.

- :class:`ReplayEndpoint`: every worker replays the committed recording (real H100 times);
- :class:`SyntheticEndpoint`: the SyntheticRunner; with an arch, with a real nvcc compiler,
  so the compile tasks, the cubins' travel and their adoption into the worker's cache run
  for real. Its times are invented (see :mod:`workbench.testing.synthetic_runner`);
- :class:`KillingEndpoint`: another endpoint whose worker process dies with SIGKILL when it
  reaches one config, which is what a worker killed mid-run looks like to the cluster;
- :class:`PacedEndpoint`: another endpoint holding its worker a fixed time per candidate
  (simulated device time, for the scaling benchmark; not used by tests).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.core.hardware import DeviceSpec
from workbench.core.kernel_folder import KernelFolder
from workbench.core.records import Candidate, TrialResult, Value
from workbench.core.template import KernelInstance, KernelTemplate
from workbench.engine.compiler import Compiler
from workbench.engine.dask_tasks import _digest
from workbench.engine.replay import ReplayRunner
from workbench.engine.runner import Runner
from workbench.testing.synthetic_runner import SyntheticRunner


class _EachCandidate:
    """Another runner's measurements, one candidate at a time, :meth:`_before` each."""

    def __init__(self, inner: Runner) -> None:
        self.inner = inner
        self.description = inner.description
        self.device: DeviceSpec = inner.device

    @property
    def search_condition(self) -> str:
        return self.inner.search_condition

    def baseline(self, shape: str, dtype: str, *,
                 condition: str | None = None) -> TrialResult:
        return self.inner.baseline(shape, dtype, condition=condition)

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        list(self.inner.measure([], condition=condition))  # what it cannot, it refuses now
        return self._measure(candidates, condition)

    def _measure(self, candidates: Sequence[Candidate],
                 condition: str | None) -> Iterator[TrialResult]:
        for candidate in candidates:
            self._before(candidate)
            yield from self.inner.measure([candidate], condition=condition)

    def _before(self, candidate: Candidate) -> None:
        pass

    def close(self) -> None:
        self.inner.close()


class _KillingRunner(_EachCandidate):
    """Another endpoint's runner whose worker process dies on one config (see the module
    docstring)."""

    def __init__(self, inner: Runner, kill_config: Mapping[str, Value],
                 kill_marker: str | None) -> None:
        super().__init__(inner)
        self.kill_config = dict(kill_config)
        self.kill_marker = Path(kill_marker) if kill_marker else None

    def _before(self, candidate: Candidate) -> None:
        if dict(candidate.config) == self.kill_config and (
                self.kill_marker is None or not self.kill_marker.exists()):
            if self.kill_marker is not None:
                self.kill_marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)


class _PacedRunner(_EachCandidate):
    """Another runner that holds its worker for a fixed time per candidate: a stand-in for
    the device time of a measurement, for simulated scaling runs (benchmarks/)."""

    def __init__(self, inner: Runner, seconds_per_candidate: float) -> None:
        super().__init__(inner)
        self.seconds_per_candidate = seconds_per_candidate

    def _before(self, candidate: Candidate) -> None:
        time.sleep(self.seconds_per_candidate)


@dataclass(frozen=True)
class PacedEndpoint:
    """``inner``'s runner holding its worker ``seconds_per_candidate`` per candidate."""

    inner: ReplayEndpoint | SyntheticEndpoint
    seconds_per_candidate: float

    @property
    def key(self) -> str:
        return "paced-" + _digest((self.inner.key, self.seconds_per_candidate))

    def build(self) -> Runner:
        return _PacedRunner(self.inner.build(), self.seconds_per_candidate)

    def instance(self, candidate: Candidate) -> KernelInstance | None:
        return self.inner.instance(candidate)


@dataclass(frozen=True)
class ReplayEndpoint:
    """Each worker replays ``recording`` of ``folder``."""

    folder: KernelFolder
    recording: str

    @property
    def key(self) -> str:
        return "replay-" + _digest((str(self.folder.path), self.recording))

    def build(self) -> Runner:
        return ReplayRunner(self.folder, self.recording)

    def instance(self, candidate: Candidate) -> KernelInstance | None:
        return None


@dataclass(frozen=True)
class SyntheticEndpoint:
    """Each worker runs the SyntheticRunner (invented times); with ``arch``, with a real
    compiler whose cache is ``cache_dir`` (candidates are compiled by cluster tasks)."""

    folder: KernelFolder
    template: KernelTemplate
    arch: str | None = None
    cache_dir: str | None = None

    @property
    def key(self) -> str:
        return "synthetic-" + _digest((str(self.folder.path), self.template, self.arch,
                                       self.cache_dir))

    def build(self) -> Runner:
        compiler = Compiler(self.arch, cache_dir=self.cache_dir) if self.arch else None
        return SyntheticRunner(self.folder, self.template, compiler=compiler)

    def instance(self, candidate: Candidate) -> KernelInstance | None:
        return self.template.render(candidate.config, candidate.dtype) if self.arch else None


@dataclass(frozen=True)
class KillingEndpoint:
    """``inner``'s runner, but the worker process measuring ``kill_config`` dies with
    SIGKILL: once when ``kill_marker`` names a file (created first), on every try
    otherwise."""

    inner: ReplayEndpoint | SyntheticEndpoint
    kill_config: Mapping[str, Value]
    kill_marker: str | None = None

    @property
    def key(self) -> str:
        return "killing-" + _digest((self.inner.key, sorted(self.kill_config.items()),
                                     self.kill_marker))

    def build(self) -> Runner:
        return _KillingRunner(self.inner.build(), self.kill_config, self.kill_marker)

    def instance(self, candidate: Candidate) -> KernelInstance | None:
        return self.inner.instance(candidate)
