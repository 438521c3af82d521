"""Who the GPU workers of a Dask cluster are: the workers offering the GPU resource, each
one's runner started and described (:func:`meet_workers`), and the refusal of workers
whose times would not compare (:func:`require_one_kind`)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench.core.errors import ClusterError
from workbench.engine import dask_tasks
from workbench.engine.dask_tasks import GPU_RESOURCE, Endpoint, PackedEndpoint, WorkerInfo

HELLO_TIMEOUT_S = 300.0
_tokens = itertools.count()


def next_token() -> int:
    """A number no other task key of this driver carries (task keys name it)."""
    return next(_tokens)


@dataclass(frozen=True)
class CompilerIdentity:
    """The compiler the workers share (what a provenance records of it)."""

    version: str
    flags: tuple[str, ...]


def gpu_workers(client: Any, resource: str) -> list[str]:
    """The addresses of the workers offering ``resource`` (one GPU each), sorted."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    return sorted(address for address, info in workers.items()
                  if float((info.get("resources") or {}).get(resource, 0)) >= 1)


def require_one_kind(workers: Sequence[WorkerInfo]) -> None:
    """Raise ClusterError unless every worker measures the same way (device model, driver,
    compiler, timing method): only then may their times share one provenance."""
    groups: dict[tuple[Any, ...], list[WorkerInfo]] = {}
    for info in workers:
        groups.setdefault(info.identity, []).append(info)
    if len(groups) > 1:
        listing = "; ".join(f"{', '.join(i.label for i in members)}: {key[0]} (driver "
                            f"{key[1] or '?'}, {key[4]})" for key, members in groups.items())
        raise ClusterError(
            f"the GPU workers measure differently, so their times cannot share one "
            f"provenance: {listing}. Start each kind with its own resource name "
            f"(`dask cuda worker ... --resources H100=1`) and tune with one runner per "
            f"resource", groups={str(k): [i.address for i in v] for k, v in groups.items()})


def meet_workers(client: Any, endpoint: Endpoint, resource: str = GPU_RESOURCE,
                 timeout_s: float = HELLO_TIMEOUT_S) -> tuple[WorkerInfo, ...]:
    """Start every GPU worker's runner; refuse workers whose times would not compare."""
    addresses = gpu_workers(client, resource)
    if not addresses:
        raise ClusterError(
            f"no worker of the Dask cluster at {client.scheduler.address} offers the "
            f"resource {resource}=1; start GPU workers with `dask cuda worker ADDRESS "
            f"--resources {resource}=1`", resource=resource)
    futures = [client.submit(dask_tasks.hello, PackedEndpoint.pack(endpoint), key=f"wb-hello-{address}-"
                             f"{next_token()}", workers=[address], allow_other_workers=False,
                             resources={resource: 1}, pure=False) for address in addresses]
    try:
        infos = [f.result(timeout=timeout_s) for f in futures]
    except Exception as exc:
        client.cancel(futures)
        raise ClusterError(f"a GPU worker could not start its runner: {exc}",
                           workers=addresses) from exc
    require_one_kind(infos)
    return tuple(infos)


def stealing_enabled(client: Any) -> bool:
    """Whether the scheduler moves queued tasks between workers (pinned tasks never move)."""
    return bool(client.run_on_scheduler(
        lambda dask_scheduler: "stealing" in dask_scheduler.extensions))
