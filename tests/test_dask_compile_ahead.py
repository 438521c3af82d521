"""The DaskRunner's bounded compile-ahead queue on a real dask.distributed LocalCluster of
CPU worker processes, with real nvcc compiles (the synthetic runner times nothing real):
the queue never holds more than its bound, a batch larger than the bound completes, the
next batch's compiles queued while the current one measures are used, not compiled again,
and the batch and the bound follow the number of GPU workers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Candidate, TrialResult
from workbench.engine.compile_ahead import CompileAhead
from workbench.engine.dask_runner import BATCH_PER_GPU, QUEUED_BATCHES, dask_runner
from workbench.testing.cluster_endpoints import SyntheticEndpoint

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[1]
SHAPE, DTYPE = "decode", "bf16"
BOUND = 3


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with dask.config.set({"distributed.scheduler.work-stealing": False}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=2,
                                           resources={"GPU": 1}, processes=True,
                                           dashboard_address=None)
    client = distributed.Client(cluster)
    client.wait_for_workers(2, timeout=120)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def folder() -> KernelFolder:
    return load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")


def test_compiles_stay_within_the_bound_and_the_next_batch_is_compiled_once(
        client: Any, folder: KernelFolder, compiler: Any, tmp_path: Path) -> None:
    runner = dask_runner(client, SyntheticEndpoint(folder, folder.template, arch="sm_90a",
                                                   cache_dir=str(tmp_path / "cache")))
    assert runner.batch_size == BATCH_PER_GPU * 2
    assert runner.compile_limit == QUEUED_BATCHES * runner.batch_size  # this batch and the next
    runner.compiles = CompileAhead(BOUND)  # small, so that one batch overflows it
    configs = list(folder.space(SHAPE, DTYPE, runner.device))[:14]
    first = [Candidate(c, SHAPE, DTYPE) for c in configs[:8]]
    second = [Candidate(c, SHAPE, DTYPE) for c in configs[8:]]
    held: list[int] = []
    results: list[TrialResult] = []
    for result in runner.measure(first):
        held.append(len(runner.compiles))
        if len(results) == 0:  # the caller knows its next batch: compile it meanwhile
            assert runner.compile_ahead(second) == len(second)
        results.append(result)
    assert sorted(r.config.key() for r in results) == sorted(c.config.key() for c in first)
    assert max(held) <= BOUND and runner.compiles.peak == BOUND
    queued = runner.compiles.submitted
    assert queued > len(first)  # some of the next batch compiled while this one measured
    again = list(runner.measure(second))
    assert sorted(r.config.key() for r in again) == sorted(c.config.key() for c in second)
    assert runner.compiles.submitted == len(first) + len(second)  # nothing compiled twice
    assert runner.compiles.peak == BOUND and len(runner.compiles) == 0
