"""Pause, stop and range edits reach every worker of a DaskRunner: a real dask.distributed
LocalCluster of three CPU worker processes running the synthetic runner (no GPU). The search
is steered from its own event callbacks (which run on the search thread, between results),
and the test waits on events and on the tasks' futures, never on sleeps."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.core.events import TrialFinished
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.params import Choice
from workbench.core.records import TrialResult
from workbench.engine.dask_runner import DaskRunner, dask_runner
from workbench.search.budget import Budget, SearchConfig
from workbench.search.orchestrator import Search
from workbench.store.sqlite import SQLiteStore
from workbench.testing.cluster_endpoints import SyntheticEndpoint

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[1]
SHAPE, DTYPE = "decode", "bf16"
WORKERS = 3
BATCH = 96  # one batch is far more than the tasks in flight (runner.in_flight_limit: 24)
WAIT_S = 120.0
SETTLE_S = 10.0  # the scheduler retries an early cancel 5 x 0.2 s


@pytest.fixture(scope="module")
def folder() -> KernelFolder:
    return load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with dask.config.set({"distributed.scheduler.work-stealing": False}):
        cluster = distributed.LocalCluster(n_workers=WORKERS, threads_per_worker=2,
                                           resources={"GPU": 1}, processes=True,
                                           dashboard_address=None)
    client = distributed.Client(cluster)
    client.wait_for_workers(WORKERS, timeout=WAIT_S)
    yield client
    client.close()
    cluster.close()


def _search(folder: KernelFolder, runner: DaskRunner, store: SQLiteStore,
            evaluations: int) -> Search:
    config = SearchConfig(shapes=(SHAPE,), dtype=DTYPE, strategy="random", seed=3,
                          budget=Budget(max_evaluations=evaluations), batch_size=BATCH)
    return Search.for_template(folder, folder.template, runner, config, runner.device,
                               store=store)


def _measure_tasks(client: Any) -> list[str]:
    """The measure tasks the scheduler still has to run or is running (finished ones whose
    futures the test holds stay in memory and are left out), once the scheduler has acted
    on every cancel the runner sent.

    A cancel that reaches the scheduler before the submission of the tasks it names (both
    are messages; a task dispatched just before the stop) is retried by the scheduler
    itself every 0.2 s, five times, so the scheduler's state settles shortly after the
    runner's cancel returns. The check waits on the scheduler's loop for that, up to
    SETTLE_S; a task the runner never cancelled stays and is returned."""
    async def settled(dask_scheduler: Any) -> list[str]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_S
        while True:
            left = sorted(f"{key} {task.state}" for key, task in dask_scheduler.tasks.items()
                          if str(key).startswith("wb-measure") and task.state != "memory")
            # the scheduler's cancel retries run within 5 x 0.2 s; a cancelled task's
            # release arrives from its worker; both are events on this loop
            if not left or loop.time() > deadline:
                return left
            await asyncio.sleep(0.05)

    return client.run_on_scheduler(settled)


def _idle(client: Any) -> bool:
    return all(not tasks for tasks in client.processing().values())


class _Steer:
    """Counts the measured results as the search records them and acts at given counts
    (on the search thread, right after the result is in the store)."""

    def __init__(self, search: Search, runner: DaskRunner, store: SQLiteStore) -> None:
        self.search, self.runner, self.store = search, runner, store
        self.results: list[TrialResult] = []
        self.actions: dict[int, str] = {}
        self.seen: dict[str, dict[str, Any]] = {}
        self.reached = {name: threading.Event() for name in ("pause", "stop")}
        search.events.subscribe(self)

    def __call__(self, event: object) -> None:
        if not isinstance(event, TrialFinished) or "worker" not in event.result.extra:
            return
        self.results.append(event.result)
        action = self.actions.get(len(self.results))
        if action is None:
            return
        getattr(self.search, action)()
        self.seen[action] = {"dispatched": self.runner.dispatched,
                             "in_flight": self.runner.in_flight,
                             "stored": self.store.count_trials(), "at": len(self.results)}
        self.reached[action].set()


def test_pause_holds_every_worker_and_stop_cancels_what_is_in_flight(
        client: Any, folder: KernelFolder, tmp_path: Path) -> None:
    runner = dask_runner(client, SyntheticEndpoint(folder, folder.template))
    assert len(runner.workers) == WORKERS
    store = SQLiteStore(tmp_path / "wb.sqlite")
    search = _search(folder, runner, store, evaluations=3 * BATCH)
    steer = _Steer(search, runner, store)
    steer.actions = {10: "pause", 30: "stop"}
    search.start()
    assert steer.reached["pause"].wait(WAIT_S)
    paused = steer.seen["pause"]
    # the search holds: what was dispatched before the pause finishes, nothing follows it
    assert 0 < len(paused["in_flight"]) <= runner.in_flight_limit
    done, not_done = distributed.wait(list(paused["in_flight"]), timeout=WAIT_S)
    assert not not_done and all(f.status == "finished" for f in done)
    assert _idle(client)  # no worker runs or holds a task
    assert runner.dispatched == paused["dispatched"] < BATCH  # the batch was not all sent
    assert store.count_trials() == paused["stored"] == 10
    assert len({r.extra["worker"]["address"] for r in steer.results}) >= 2

    search.resume()
    assert steer.reached["stop"].wait(WAIT_S)
    outcome = search.join(timeout_s=WAIT_S)
    assert outcome is not None and outcome.reason == "stopped"
    stopped = steer.seen["stop"]
    assert stopped["in_flight"]  # there was work in flight to cancel
    assert all(f.status in ("cancelled", "finished") for f in stopped["in_flight"])
    assert _measure_tasks(client) == [] and runner.in_flight == ()
    # every result was stored as it arrived; none after the stop
    assert store.count_trials() == stopped["stored"] == len(steer.results) == 30
    assert runner.dispatched < 3 * BATCH
    store.close()


def test_a_range_edit_applies_to_every_task_dispatched_after_it(
        client: Any, folder: KernelFolder, tmp_path: Path) -> None:
    runner = dask_runner(client, SyntheticEndpoint(folder, folder.template))
    store = SQLiteStore(tmp_path / "wb.sqlite")
    search = _search(folder, runner, store, evaluations=40)
    steer = _Steer(search, runner, store)
    steer.actions = {8: "pause"}
    search.start()
    assert steer.reached["pause"].wait(WAIT_S)
    paused = steer.seen["pause"]
    assert paused["dispatched"] < BATCH  # most of the first batch is still on the driver
    vec = next(p for p in folder.template.params if p.name == "VEC_BYTES")
    narrowed = [Choice(name="VEC_BYTES", values_=(16,), default=16) if p is vec else p
                for p in folder.template.params]
    old_space = search.space(SHAPE)
    search.edit_params(narrowed)
    search.resume()
    outcome = search.join(timeout_s=WAIT_S)
    assert outcome is not None and outcome.shapes[SHAPE].reason in ("budget", "exhausted")
    new_space = search.space(SHAPE)
    assert new_space.size < old_space.size
    after = steer.results[8:]
    assert after, "nothing was measured after the edit"
    # without the edit taking hold mid-batch, the first batch's other configs (random over
    # every VEC_BYTES) would still be dispatched and measured here
    assert all(r.config in new_space for r in after), [dict(r.config) for r in after
                                                       if r.config not in new_space]
    assert _measure_tasks(client) == []
    store.close()
