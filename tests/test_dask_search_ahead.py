"""The tune path on a Dask cluster compiles the next batch while it measures one: a real
dask.distributed LocalCluster of two CPU worker processes, the synthetic runner with real
nvcc compiles (no GPU), driven through ``Workbench.tune`` with no batch named.

- the batch follows the GPU count (``BATCH_PER_GPU`` per worker) and so does the bound of
  the compile-ahead queue;
- the search asks for the next batch when it hands the runner the current one, and those
  compiles are submitted before the next ``measure`` call (each config compiled once);
- a worker SIGKILLed mid-run loses nothing: every config of the budget stored exactly once.

No sleeps: the checks read counters the runner keeps and the store."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from workbench.api import Workbench
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Candidate, Status, TrialResult
from workbench.engine import dask_runner as dask_runner_module
from workbench.engine.capabilities import ManyDevices
from workbench.engine.dask_runner import DaskRunner, dask_runner
from workbench.search.orchestrator import batch_for
from workbench.testing.cluster_endpoints import KillingEndpoint, SyntheticEndpoint

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[1]
SHAPE, DTYPE = "decode", "bf16"
WORKERS = 2
PER_GPU = 3  # small batches (real nvcc on a shared CPU): 6 per batch on two workers
BATCHES = 3


def _cluster() -> tuple[Any, Any]:
    with dask.config.set({"distributed.scheduler.work-stealing": False}):
        cluster = distributed.LocalCluster(n_workers=WORKERS, threads_per_worker=2,
                                           resources={"GPU": 1}, processes=True,
                                           dashboard_address=None)
    client = distributed.Client(cluster)
    client.wait_for_workers(WORKERS, timeout=120)
    return cluster, client


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """One cluster for the module (each start and stop costs about 3 CPU s). The test that
    kills a worker waits for the nanny's fresh one before it ends, so every test starts on
    both workers; each test's runner, store and compile cache are its own."""
    cluster, client = _cluster()
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def folder() -> KernelFolder:
    return load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")


class _Spy:
    """Records what the search hands the runner: each batch's size and how many compiles
    the runner had submitted when the batch came; each compile-ahead call's size."""

    def __init__(self, runner: DaskRunner) -> None:
        self.batches: list[int] = []
        self.submitted_at_batch: list[int] = []
        self.ahead: list[int] = []
        measure, ahead = runner.measure, runner.compile_ahead

        def spy_measure(candidates: Sequence[Candidate], *,
                        condition: str | None = None) -> Iterator[TrialResult]:
            self.batches.append(len(candidates))
            self.submitted_at_batch.append(runner.compiles.submitted)
            return measure(candidates, condition=condition)

        def spy_ahead(candidates: Sequence[Candidate]) -> int:
            self.ahead.append(len(candidates))
            return ahead(candidates)

        runner.measure = spy_measure  # type: ignore[method-assign]
        runner.compile_ahead = spy_ahead  # type: ignore[method-assign]


def _keys(wb: Workbench) -> list[str]:
    return [r.config.key() for r in wb.results(SHAPE, DTYPE)]


def test_tune_batches_follow_the_gpus_and_the_next_batch_compiles_meanwhile(
        client: Any, folder: KernelFolder, compiler: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dask_runner_module, "BATCH_PER_GPU", PER_GPU)
    runner = dask_runner(client, SyntheticEndpoint(folder, folder.template, arch="sm_90a",
                                                   cache_dir=str(tmp_path / "cache")))
    batch = PER_GPU * WORKERS
    assert isinstance(runner, ManyDevices)
    assert batch_for(runner) == runner.batch_size == batch
    assert runner.compile_limit == dask_runner_module.QUEUED_BATCHES * batch
    spy = _Spy(runner)
    wb = Workbench(folder, store=tmp_path / "wb.sqlite", runner=runner)
    report = wb.tune(SHAPE, DTYPE, "exhaustive", budget=batch * BATCHES, confirm=0,
                     l2_profile=False)  # no batch named: the runner's
    assert report.measured_now == batch * BATCHES
    assert spy.batches == [batch] * BATCHES
    # the next batch was asked for with each batch but the last (the budget ends there)
    assert spy.ahead == [batch] * (BATCHES - 1)
    # by each later measure call the runner had submitted that batch's compiles already
    for k, submitted in enumerate(spy.submitted_at_batch[1:], start=1):
        assert submitted == batch * (k + 1), (k, spy.submitted_at_batch)
    assert runner.compiles.submitted == batch * BATCHES  # each config compiled once
    assert runner.compiles.peak <= runner.compile_limit and len(runner.compiles) == 0
    keys = _keys(wb)
    assert len(keys) == len(set(keys)) == batch * BATCHES


def test_a_named_batch_is_kept(client: Any, folder: KernelFolder, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dask_runner_module, "BATCH_PER_GPU", PER_GPU)
    runner = dask_runner(client, SyntheticEndpoint(folder, folder.template))
    spy = _Spy(runner)
    wb = Workbench(folder, store=tmp_path / "wb.sqlite", runner=runner)
    wb.tune(SHAPE, DTYPE, "exhaustive", budget=8, batch=4, confirm=0, l2_profile=False)
    assert spy.batches == [4, 4] and spy.ahead == [4]


def test_a_worker_killed_while_the_next_batch_compiles_loses_nothing(
        client: Any, folder: KernelFolder, compiler: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dask_runner_module, "BATCH_PER_GPU", PER_GPU)
    batch = PER_GPU * WORKERS
    marker = tmp_path / "killed-once"
    inner = SyntheticEndpoint(folder, folder.template, arch="sm_90a",
                              cache_dir=str(tmp_path / "cache"))
    probe = dask_runner(client, inner)
    order = list(folder.space(SHAPE, DTYPE, probe.device))
    victim = dict(order[batch + 1])  # in the second batch: its compile was queued ahead
    runner = dask_runner(client, KillingEndpoint(inner, victim, str(marker)))
    wb = Workbench(folder, store=tmp_path / "wb.sqlite", runner=runner)
    report = wb.tune(SHAPE, DTYPE, "exhaustive", budget=batch * BATCHES, confirm=0,
                     l2_profile=False)
    assert marker.exists()  # a worker process died with SIGKILL holding the victim
    stored = wb.results(SHAPE, DTYPE)
    keys = [r.config.key() for r in stored]
    assert len(keys) == len(set(keys)) == batch * BATCHES == report.evaluated
    assert victim in [dict(r.config) for r in stored]
    assert all(r.status is Status.OK for r in stored)
    client.wait_for_workers(WORKERS, timeout=120)  # the nanny started a fresh worker
    assert runner.baseline(SHAPE, DTYPE).status is Status.OK  # the reference is a live one
