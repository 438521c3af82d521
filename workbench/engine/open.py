"""One place that opens a runner: :func:`open_runner`, used by the API, the CLI, the agent's
entry points and the proposal gate's GPU check, so every entry point measures (and
confirms) with the same kind of runner for the same request.

- ``replay``: a :class:`~workbench.engine.replay.ReplayRunner` of that recording (``""``:
  the folder's newest), answering for ``template``;
- ``cluster``: a :class:`~workbench.engine.dask_runner.DaskRunner` over ``local`` (a
  LocalCUDACluster of ``gpus`` GPUs) or a scheduler address, a LocalRunner with
  ``settings`` on every GPU worker;
- neither: a :class:`~workbench.engine.runner.LocalRunner` on this machine's GPU, or a
  :class:`~workbench.core.errors.NoGPUError` stating
  :func:`~workbench.engine.discovery.no_live_reason` (``details["no_live"]``) before any
  worker starts.

A runner for another template is its sibling (``runner.for_template(template)``:
:class:`~workbench.engine.capabilities.TemplateBound`), not another call here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from workbench.core.errors import NoGPUError, UsageError
from workbench.core.kernel_folder import KernelFolder
from workbench.core.template import KernelTemplate
from workbench.engine.bench import BenchSettings
from workbench.engine.runner import Runner

__all__ = ["open_runner"]


def open_runner(folder: KernelFolder, template: KernelTemplate | None = None, *,
                replay: str | Path | None = None, cluster: str | None = None,
                gpus: int | None = None, settings: BenchSettings | None = None,
                pace: str | float = 0.0, **live: Any) -> Runner:
    """The runner that measures ``template`` (default: the folder's) of ``folder``: see the
    module docstring. ``pace`` is a replay's (seconds per config, or ``"recorded"``);
    ``live`` goes to the LocalRunner (``compiler``, ``seed``, ``jobs``, ``python``: a
    named worker interpreter is not checked against this machine's driver first)."""
    if replay is not None and cluster is not None:
        raise UsageError("a runner replays a recording or measures on a cluster, not both",
                         key="replay", value=str(replay),
                         expected="replay=None with cluster, or cluster=None")
    if replay is not None:
        from workbench.engine.replay import ReplayRunner

        return ReplayRunner(folder, replay or None, template, pace=pace)
    if cluster is not None:
        return _cluster_runner(folder, template, cluster, gpus, settings)
    return _live_runner(folder, template, settings, live)


def _live_runner(folder: KernelFolder, template: KernelTemplate | None,
                 settings: BenchSettings | None, live: dict[str, Any]) -> Runner:
    from workbench.engine.discovery import no_live_reason
    from workbench.engine.runner import LocalRunner

    if live.get("python") is None:
        reason = no_live_reason()
        if reason is not None:
            raise NoGPUError(f"no live measurement here: {reason.text}", no_live=reason,
                             missing=reason.kind.value)
    return LocalRunner(folder, template, settings, **live)


def _cluster_runner(folder: KernelFolder, template: KernelTemplate | None, cluster: str,
                    gpus: int | None, settings: BenchSettings | None) -> Runner:
    from workbench.engine.dask_cluster import open_dask_runner
    from workbench.engine.dask_tasks import LiveEndpoint

    # the workers read the folder (reference.py) at the driver's absolute path
    folder = dataclasses.replace(folder, path=Path(folder.path).resolve())
    endpoint = LiveEndpoint(folder, template or folder.template, settings or BenchSettings())
    return open_dask_runner(endpoint, cluster, gpus)
