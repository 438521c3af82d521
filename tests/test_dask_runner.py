"""DaskRunner on a real dask.distributed LocalCluster of CPU worker processes (no GPU): each
worker replays the committed H100 recording (or runs the synthetic model with real nvcc
compiles). Proves the fan-out, the one-device view, ordering, streaming into the store, and
what happens when a worker process is killed mid-run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.core.errors import ClusterError
from workbench.core.hardware import get_device
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Candidate, Status
from workbench.engine.dask_runner import dask_runner
from workbench.engine.dask_tasks import WorkerInfo
from workbench.engine.dask_workers import require_one_kind
from workbench.engine.replay import ReplayRunner
from workbench.engine.tuning import build_report
from workbench.search.budget import Budget, SearchConfig
from workbench.search.orchestrator import Search
from workbench.store.base import provenance_for
from workbench.store.sqlite import SQLiteStore
from workbench.testing.cluster_endpoints import (
    KillingEndpoint,
    ReplayEndpoint,
    SyntheticEndpoint,
)

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[1]
SHAPE, DTYPE = "decode", "bf16"


@pytest.fixture(scope="module")
def folder() -> KernelFolder:
    return load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")


@pytest.fixture(scope="module")
def recording(folder: KernelFolder) -> str:
    return str(sorted((Path(folder.path) / "recordings").glob("*.json"))[-1])


def _cluster() -> tuple[Any, Any]:
    """Two worker processes, each offering GPU=1 (as dask-cuda workers do), stealing off;
    Dask gives up on a task at the first worker death (the runner then runs it alone)."""
    config = {"distributed.scheduler.work-stealing": False,
              "distributed.scheduler.allowed-failures": 0}
    with dask.config.set(config):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=2,
                                           resources={"GPU": 1}, processes=True,
                                           dashboard_address=None)
    return cluster, distributed.Client(cluster)


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A cluster whose workers no test kills."""
    cluster, client = _cluster()
    yield client
    client.close()
    cluster.close()


@pytest.fixture
def doomed() -> Iterator[Any]:
    """A cluster of its own for a test that kills its workers."""
    cluster, client = _cluster()
    yield client
    client.close()
    cluster.close()


def _candidates(folder: KernelFolder, count: int) -> list[Candidate]:
    space = folder.space(SHAPE, DTYPE, get_device("h100_sxm"))
    return [Candidate(config, SHAPE, DTYPE) for config in list(space)[:count]]


def _wait_for_workers(client: Any, count: int) -> None:
    client.wait_for_workers(count, timeout=120)


def test_fans_out_and_each_time_is_one_devices_measurement(
        client: Any, folder: KernelFolder, recording: str) -> None:
    runner = dask_runner(client, ReplayEndpoint(folder, recording))
    assert runner.stealing is False and len(runner.workers) == 2
    assert runner.description == ReplayRunner(folder, recording).description
    candidates = _candidates(folder, 40)
    results = list(runner.measure(candidates))
    assert sorted(r.config.key() for r in results) == sorted(c.config.key() for c in candidates)
    assert {r.extra["worker"]["address"] for r in results} == {w.address for w in runner.workers}
    # each result is exactly what one worker measured (here: its replay), untouched
    direct = {r.config: r for r in ReplayRunner(folder, recording).measure(candidates)}
    for result in results:
        assert result.timing == direct[result.config].timing
        assert result.status is direct[result.config].status


def test_one_device_measures_in_the_order_given(
        client: Any, folder: KernelFolder, recording: str) -> None:
    runner = dask_runner(client, ReplayEndpoint(folder, recording))
    one = runner.one_device()
    candidates = _candidates(folder, 12)
    results = list(one.measure(candidates))
    assert [r.config for r in results] == [c.config for c in candidates]
    assert {r.extra["worker"]["address"] for r in results} == {runner.reference.address}
    baseline = runner.baseline(SHAPE, DTYPE)
    assert baseline.extra["worker"]["address"] == runner.reference.address
    with pytest.raises(ClusterError):
        runner.one_device("tcp://127.0.0.1:1")


def test_search_streams_every_trial_into_the_store_and_resumes(
        client: Any, folder: KernelFolder, recording: str, tmp_path: Path) -> None:
    runner = dask_runner(client, ReplayEndpoint(folder, recording))
    store = SQLiteStore(tmp_path / "wb.sqlite")
    config = SearchConfig(shapes=(SHAPE,), dtype=DTYPE, strategy="random",
                          budget=Budget(max_evaluations=24), batch_size=8)
    seen: list[int] = []

    def search() -> Search:
        found = Search.for_template(folder, folder.template, runner, config, runner.device,
                                    store=store)
        found.events.subscribe(lambda event: seen.append(store.count_trials()))
        return found

    outcome = search().run()
    provenance = provenance_for(runner, folder.template)
    stored = store.trials(provenance)
    # configs the recording never measured (PDL 1, added since) are stored as pruned
    measured = [t for t in stored if t.result.status is Status.OK]
    assert outcome.shapes[SHAPE].measured_now == 24 == len(measured)
    assert all("worker" in t.result.extra for t in measured)
    # each trial was committed before its event was published, so the store grows with them
    assert seen == sorted(seen) and seen[-1] == len(stored)
    again = search().run()
    assert again.shapes[SHAPE].measured_now == 0  # resumed from the store: nothing twice
    report = build_report(folder.name, SHAPE, DTYPE, runner, [t.result for t in stored],
                          confirm=3)
    assert report.confirmation is None and "cannot measure again" in report.confirm_note
    store.close()


def test_a_worker_killed_mid_run_loses_nothing(
        doomed: Any, folder: KernelFolder, tmp_path: Path) -> None:
    client = doomed
    candidates = _candidates(folder, 30)
    victim = dict(candidates[10].config)
    marker = tmp_path / "killed-once"
    runner = dask_runner(client, KillingEndpoint(SyntheticEndpoint(folder, folder.template),
                                                 victim, str(marker)))
    before = {w.address for w in runner.workers}
    results = list(runner.measure(candidates))
    assert marker.exists()  # a worker process did die with SIGKILL holding the victim
    assert sorted(r.config.key() for r in results) == sorted(c.config.key() for c in candidates)
    assert all(r.status is Status.OK for r in results)  # the victim ran again elsewhere
    _wait_for_workers(client, 2)  # the nanny started a fresh worker
    assert runner.baseline(SHAPE, DTYPE).status is Status.OK  # the reference is a live one
    assert {w.address for w in runner.workers} != before


def test_a_candidate_that_keeps_killing_workers_is_recorded_crashed(
        doomed: Any, folder: KernelFolder) -> None:
    client = doomed
    candidates = _candidates(folder, 6)
    poison = dict(candidates[2].config)
    runner = dask_runner(client, KillingEndpoint(SyntheticEndpoint(folder, folder.template),
                                                 poison))
    results = {r.config: r for r in runner.measure(candidates)}
    assert len(results) == 6
    crashed = results[candidates[2].config]
    assert crashed.status is Status.CRASHED and "also when it ran alone" in crashed.reason
    assert all(r.status is Status.OK for c, r in results.items() if c != candidates[2].config), [
        (r.status, r.reason) for r in results.values()]


def test_compiles_run_as_cluster_tasks_and_cubins_are_adopted(
        client: Any, folder: KernelFolder, tmp_path: Path, compiler: Any) -> None:
    _wait_for_workers(client, 2)
    cache = tmp_path / "worker-cache"
    runner = dask_runner(client, SyntheticEndpoint(folder, folder.template, arch="sm_90a",
                                                   cache_dir=str(cache)))
    candidates = _candidates(folder, 3)
    results = list(runner.measure(candidates))
    assert [r.status for r in results] == [Status.OK] * 3
    for r in results:  # each trial says where its task's seconds went
        phases = r.extra["phases_s"]
        assert {"plan_s", "local_compile_s", "finish_s", "wait_turn_s", "task_s"} <= set(phases)
        assert phases["task_s"] >= phases["local_compile_s"] + phases["finish_s"]
    # the measuring workers' cache holds the cluster's cubins, adopted (no source.cu: an
    # adopted entry was compiled elsewhere; a local compile keeps its source)
    entries = [p.parent for p in cache.glob("*/*/result.json")]
    assert len(entries) >= 3
    adopted = [e for e in entries if not (e / "source.cu").exists()]
    assert len(adopted) >= 3  # the baseline (compiled on the worker) may add one with source


def test_workers_that_measure_differently_are_refused() -> None:
    h100, h200 = get_device("h100_sxm"), get_device("h100_sxm")

    def info(address: str, description: str) -> WorkerInfo:
        return WorkerInfo(address=address, host="node", gpu=address[-1],
                          description=description, device=h100 if "H100" in description
                          else h200, compiler_version="nvcc 13.0", compiler_flags=("-O3",),
                          driver="580", conditions=("read",))

    same = [info("a0", "NVIDIA H100 80GB HBM3 (live, cupti timer)"),
            info("a1", "NVIDIA H100 80GB HBM3 (live, cupti timer)")]
    require_one_kind(same)
    mixed = [*same, info("b2", "NVIDIA H200 (live, cupti timer)")]
    with pytest.raises(ClusterError) as caught:
        require_one_kind(mixed)
    assert "node GPU 2" in caught.value.message and "resource" in caught.value.message
    assert len(caught.value.details["groups"]) == 2


def test_a_config_pickled_in_another_process_hashes_like_one_made_here() -> None:
    """Tasks and results cross processes: a Config's hash must not travel with it (str
    hashes differ between processes), or dict look-ups by config fail in the driver."""
    import pickle
    import subprocess
    import sys

    code = ("import pickle, sys; from workbench.core.records import Config; "
            "sys.stdout.buffer.write(pickle.dumps(Config(BLOCK=128, MODE='fast')))")
    made = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                          env={**__import__("os").environ, "PYTHONHASHSEED": "12345",
                               "PYTHONPATH": str(ROOT)}).stdout
    from workbench.core.records import Config

    here = Config(BLOCK=128, MODE="fast")
    assert {here: 1}[pickle.loads(made)] == 1


def test_cli_cluster_options(client: Any, folder: KernelFolder, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    """``workbench tune --cluster ADDRESS`` reaches the cluster: these CPU workers cannot
    start a live runner, which the CLI says (exit 3) rather than a traceback."""
    from workbench.cli import main

    base = ["tune", str(folder.path), "--shape", SHAPE, "--store", str(tmp_path / "s.sqlite")]
    assert main([*base, "--gpus", "2"]) == 2
    assert "--gpus goes with --cluster local" in capsys.readouterr().err
    assert main([*base, "--cluster", client.scheduler.address, "--replay"]) == 2
    _wait_for_workers(client, 2)
    assert main([*base, "--cluster", client.scheduler.address]) == 3
    err = capsys.readouterr().err
    assert "could not start its runner" in err and "Traceback" not in err


def test_finalists_are_confirmed_on_one_device(client: Any, folder: KernelFolder) -> None:
    from workbench.engine.tuning import confirm_finalists

    _wait_for_workers(client, 2)
    runner = dask_runner(client, SyntheticEndpoint(folder, folder.template))
    assert {w.conditions for w in runner.workers} == {("read",)}  # each measures again
    results = list(runner.measure(_candidates(folder, 8)))
    assert len({r.extra["worker"]["address"] for r in results}) == 2
    finalists = sorted(results, key=lambda r: r.median_us or 0.0)[:4]
    seen: list[Any] = []
    got = confirm_finalists(runner, finalists, on_result=lambda _, r: seen.append(r))
    assert not isinstance(got, str) and len(seen) == 5  # round 1: four, round 2: the pick
    assert {r.extra["worker"]["address"] for r in seen} == {runner.reference.address}
