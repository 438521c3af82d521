"""The DaskRunner measures the next batch in the slots the current batch's last candidates
leave (issue 29 item 5): the devices do not drain at each batch's end while the caller
stores its last results. A real LocalCluster of two CPU worker processes offering GPU=1,
each measuring with a simulated device (workbench.testing.paced_device) and compiling with
a fake nvcc through the real Compiler.

- the next batch's measure tasks are dispatched before its ``measure`` call, which takes
  them as they are: every candidate measured once, none dispatched twice;
- closing the current batch early (a stop) cancels what was measured ahead;
- a ``measure`` call for other candidates than those queued cancels them.

No sleeps: the tests wait on the compiles' futures and read the runner's counters. Each
test starts its own cluster, so one that stalls cannot take the next tests with it, and a
wait that runs out says what every worker was running and holding (the CI run of stop 49
timed out waiting for the compiles once, with nothing to tell why)."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Candidate, Status
from workbench.engine.dask_runner import (
    BOUNDARY_RESERVE_PER_GPU,
    QUEUED_PER_GPU,
    DaskRunner,
    dask_runner,
)
from workbench.engine.dask_tasks import MEASURES_PER_GPU
from workbench.testing.paced_device import PacedDeviceEndpoint, fake_nvcc

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[1]
SHAPE, DTYPE = "decode", "bf16"
WORKERS = 2
CAPACITY = (MEASURES_PER_GPU + QUEUED_PER_GPU) * WORKERS  # a batch's tasks in flight at most
DEVICE_S = 0.25  # each worker's device holds a candidate this long
COMPILE_WAIT_S = 60  # a fake nvcc compiles at once: a minute is a stall


@pytest.fixture(scope="module")
def folder() -> KernelFolder:
    return load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")


@pytest.fixture
def client(folder: KernelFolder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    work = tmp_path_factory.mktemp("ahead")
    home = fake_nvcc(work, work / "cuda", 0.0, folder.template.entry, "sm_90a")
    saved = {k: os.environ.get(k) for k in ("CUDA_HOME", "WORKBENCH_CACHE_DIR")}
    os.environ["CUDA_HOME"] = str(home)  # the workers inherit both
    os.environ["WORKBENCH_CACHE_DIR"] = str(work / "cache")
    try:
        with dask.config.set({"distributed.scheduler.work-stealing": False}):
            cluster = distributed.LocalCluster(n_workers=WORKERS, threads_per_worker=6,
                                               resources={"GPU": 1}, processes=True,
                                               dashboard_address=None)
        client = distributed.Client(cluster)
        client.wait_for_workers(WORKERS, timeout=120)
        yield client
        client.close()
        cluster.close()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _runner(client: Any, folder: KernelFolder) -> DaskRunner:
    return dask_runner(client, PacedDeviceEndpoint(folder, folder.template, "sm_90a",
                                                   DEVICE_S))


def _batches(runner: DaskRunner, folder: KernelFolder, sizes: list[int],
             offset: int = 0) -> list[list[Candidate]]:
    configs = list(folder.space(SHAPE, DTYPE, runner.device))[offset:]
    out, start = [], 0
    for size in sizes:
        out.append([Candidate(c, SHAPE, DTYPE) for c in configs[start:start + size]])
        start += size
    return out


def _compiled(runner: DaskRunner, candidates: list[Candidate]) -> None:
    """Wait until the queued compiles of ``candidates`` are done."""
    futures = []
    for candidate in candidates:
        instance = runner.endpoint.instance(candidate)
        assert instance is not None
        future = runner.compiles.future(instance.hash)
        if future is not None:
            futures.append(future)
    try:
        distributed.wait(futures, timeout=COMPILE_WAIT_S)
    except TimeoutError:
        pytest.fail(f"the compiles queued ahead did not finish in {COMPILE_WAIT_S} s: "
                    f"{_cluster_state(runner.client, futures)}")


def _used_resources(dask_scheduler: Any) -> dict[str, dict[str, float]]:
    return {address: dict(ws.used_resources)
            for address, ws in dask_scheduler.workers.items()}


def _cluster_state(client: Any, futures: list[Any]) -> str:
    """What the scheduler and the workers say, for a wait that ran out."""
    pending = [f.key for f in futures if not f.done()]
    try:
        processing = client.processing()
        stacks = client.call_stack()
        resources = client.run_on_scheduler(_used_resources)
    except Exception as exc:  # the cluster itself may be what stalled
        return f"{len(pending)} pending ({pending[:4]}); the cluster did not answer: {exc!r}"
    return (f"{len(pending)} pending ({pending[:4]}); processing {processing}; resources in "
            f"use {resources}; running {stacks}")


def test_the_next_batch_runs_in_the_last_slots_and_is_measured_once(
        client: Any, folder: KernelFolder) -> None:
    runner = _runner(client, folder)
    first, second = _batches(runner, folder, [CAPACITY, CAPACITY])
    results = runner.measure(first)
    runner.compile_ahead(second)
    _compiled(runner, second)  # before the first result: the slots it frees go ahead
    got = [r for r in results]
    dispatched_before_second = runner.dispatched
    assert sorted(r.config.key() for r in got) == sorted(c.config.key() for c in first)
    assert dispatched_before_second > len(first)  # some of the next batch already run
    again = list(runner.measure(second))
    assert sorted(r.config.key() for r in again) == sorted(c.config.key() for c in second)
    assert all(r.status is Status.OK for r in got + again)
    assert runner.dispatched == len(first) + len(second)  # nothing dispatched twice
    assert runner.compiles.submitted == len(first) + len(second)  # nor compiled twice
    assert runner.in_flight == ()


def test_a_stop_cancels_what_was_measured_ahead(client: Any, folder: KernelFolder) -> None:
    runner = _runner(client, folder)
    first, second = _batches(runner, folder, [CAPACITY, CAPACITY], offset=2 * CAPACITY)
    results = runner.measure(first)
    assert isinstance(results, Generator)
    runner.compile_ahead(second)
    _compiled(runner, second)
    next(results)
    next(results)
    assert runner.dispatched > len(first)  # the next batch runs in the freed slots
    in_flight = runner.in_flight
    assert len(in_flight) > len(first) - 2  # this batch's rest and the next's first
    results.close()  # the caller stopped
    assert runner.in_flight == ()
    assert all(f.status in ("cancelled", "finished") for f in in_flight)
    assert any(f.status == "cancelled" for f in in_flight)


def test_a_batch_other_than_the_queued_one_cancels_it(client: Any,
                                                      folder: KernelFolder) -> None:
    runner = _runner(client, folder)
    first, queued, other = _batches(runner, folder, [CAPACITY, CAPACITY, 3],
                                    offset=4 * CAPACITY)
    results = runner.measure(first)
    runner.compile_ahead(queued)
    _compiled(runner, queued)
    assert len(list(results)) == len(first)
    measured_ahead = runner.dispatched - len(first)
    assert measured_ahead > 0
    got = list(runner.measure(other))  # an edit: the queued batch never comes
    assert sorted(r.config.key() for r in got) == sorted(c.config.key() for c in other)
    assert runner.dispatched == len(first) + measured_ahead + len(other)
    assert runner.in_flight == ()


def test_a_reserve_of_the_next_batch_waits_beyond_the_running_slots(
        client: Any, folder: KernelFolder) -> None:
    """At the batch's end the next batch holds the running slots and a reserve queued on
    the workers, which start without the driver while it ends the batch."""
    runner = _runner(client, folder)
    assert runner.in_flight_limit == CAPACITY and BOUNDARY_RESERVE_PER_GPU > 0
    first, second = _batches(runner, folder, [CAPACITY, 3 * CAPACITY], offset=40)
    results = runner.measure(first)
    runner.compile_ahead(second)
    _compiled(runner, second)
    got = list(results)
    assert len(got) == len(first)
    # each of this batch's CAPACITY results freed a slot for the next batch, and the
    # reserve went out beside them (without it: CAPACITY, while none of them has finished)
    reserve = BOUNDARY_RESERVE_PER_GPU * WORKERS
    assert runner.dispatched - len(first) >= CAPACITY + reserve
    assert runner.ahead.running() <= CAPACITY + reserve
    again = list(runner.measure(second))
    assert sorted(r.config.key() for r in again) == sorted(c.config.key() for c in second)
    assert runner.dispatched == len(first) + len(second)  # none dispatched twice
    assert runner.in_flight == ()
