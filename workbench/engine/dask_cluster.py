"""Connecting to a Dask cluster of GPU workers (dask.distributed, dask-cuda): no cluster code
of our own, only how the workbench asks for one.

- ``local``: ``dask_cuda.LocalCUDACluster`` on this host, one worker per GPU (pinned with
  ``CUDA_VISIBLE_DEVICES``), each offering ``GPU=1`` and as many threads as this host has
  cores per GPU (plus one per measure task it holds), work stealing off;
- an address (``tcp://host:8786``): the scheduler of a cluster started by hand::

      DASK_DISTRIBUTED__SCHEDULER__WORK_STEALING=False dask scheduler
      dask cuda worker tcp://host:8786 --resources GPU=1 --nthreads 20   # on every GPU host
"""

from __future__ import annotations

import os
from typing import Any

from workbench.core.errors import ClusterError, NoGPUError
from workbench.engine.dask_runner import DaskRunner, dask_runner
from workbench.engine.dask_tasks import GPU_RESOURCE, MEASURES_PER_GPU, Endpoint

#: Scheduler settings for clusters the workbench starts itself.
SCHEDULER_CONFIG = {"distributed.scheduler.work-stealing": False}
INSTALL_HINT = ('install the cluster extra: `pip install -e ".[cluster]"` (dask, distributed; '
                'dask-cuda on GPU hosts)')


def threads_per_gpu_worker(gpus: int, cpus: int | None = None) -> int:
    """Compile threads for each GPU worker of one host (its share of the cores) plus one
    per measure task it holds (:data:`MEASURES_PER_GPU`), so compiles never keep the next
    measure task waiting for a thread."""
    cores = cpus or os.cpu_count() or 1
    return max(1, cores // max(1, gpus)) + MEASURES_PER_GPU


def start_local_gpu_cluster(gpus: int | None = None, *, threads_per_worker: int | None = None,
                            dashboard_address: str = ":8787") -> Any:
    """A ``LocalCUDACluster`` of ``gpus`` workers (all visible GPUs by default)."""
    try:
        import dask
        from dask_cuda import LocalCUDACluster
    except ImportError as exc:
        raise NoGPUError(f"--cluster local needs dask-cuda ({exc}); {INSTALL_HINT}",
                         missing="dask_cuda", hint=INSTALL_HINT) from exc
    visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    count = len(visible) if visible else _gpu_count()
    if count < 1:
        raise NoGPUError("--cluster local found no GPU on this host", missing="GPU")
    wanted = count if gpus is None else gpus
    if not 1 <= wanted <= count:
        raise ClusterError(f"--gpus {wanted}: this host has {count} GPU(s)", key="gpus",
                           value=wanted, expected=f"1..{count}")
    devices = (visible or [str(i) for i in range(count)])[:wanted]
    with dask.config.set(SCHEDULER_CONFIG):
        return LocalCUDACluster(
            CUDA_VISIBLE_DEVICES=devices, n_workers=wanted,
            threads_per_worker=threads_per_worker or threads_per_gpu_worker(wanted),
            resources={GPU_RESOURCE: 1}, dashboard_address=dashboard_address)


def _gpu_count() -> int:
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:
        return 0


def connect(cluster: str, gpus: int | None = None) -> tuple[Any, tuple[Any, ...]]:
    """A ``distributed.Client`` for ``--cluster local|ADDRESS`` and what the caller must close
    after it (the client, and the cluster when it was started here)."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise ClusterError(f"--cluster needs dask.distributed ({exc}); {INSTALL_HINT}",
                           missing="distributed", hint=INSTALL_HINT) from exc
    if cluster == "local":
        local = start_local_gpu_cluster(gpus)
        client = Client(local)
        return client, (client, local)
    if gpus is not None:
        raise ClusterError(f"--gpus applies to --cluster local; the cluster at {cluster} has "
                           f"the GPU workers started on its hosts", key="gpus", value=gpus,
                           expected="--cluster local")
    try:
        client = Client(cluster, timeout="30s")
    except OSError as exc:
        raise ClusterError(f"no Dask scheduler answered at {cluster}: {exc}", key="cluster",
                           value=cluster, expected="local or a scheduler address "
                           "(tcp://host:8786)") from exc
    return client, (client,)


def open_dask_runner(endpoint: Endpoint, cluster: str, gpus: int | None = None) -> DaskRunner:
    """A DaskRunner over ``--cluster local|ADDRESS`` that closes what it opened."""
    client, owned = connect(cluster, gpus)
    try:
        return dask_runner(client, endpoint, owns=owned)
    except BaseException:
        for thing in owned:
            thing.close()
        raise


def dashboard_link(runner: DaskRunner) -> str:
    """The Dask dashboard's address (the dask-labextension panel takes it too)."""
    return str(runner.client.dashboard_link or "")
