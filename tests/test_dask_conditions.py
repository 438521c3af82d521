"""A Dask cluster confirms under cache conditions exactly as the direct runner does: a real
dask.distributed LocalCluster of two CPU worker processes, each building the scripted
condition runner (the same table of times per config and condition), so the two
confirmations see the same numbers and must give the same records, table and pick. The
finalists are measured on one pinned worker, every condition and both rounds there. A
runner that cannot measure under conditions says so in the report."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.core.conditions import CONDITIONS, condition_table
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Candidate, Config, TrialResult
from workbench.engine.capabilities import ManyDevices
from workbench.engine.dask_runner import dask_runner
from workbench.engine.tuning import TuneReport, build_report
from workbench.testing.cluster_endpoints import SyntheticEndpoint
from workbench.testing.scripted_conditions import (
    ScriptedConditionRunner,
    ScriptedConditionsEndpoint,
    truth_table,
)

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[1]
SHAPE, DTYPE = "decode", "bf16"
ALL = tuple(CONDITIONS)
FAST_READ = Config(VEC_BYTES=4, ROW_SPLIT=4)
STEADY = Config(VEC_BYTES=16, ROW_SPLIT=2)
DEFAULT = Config(VEC_BYTES=16, ROW_SPLIT=1)
OTHERS = [Config(VEC_BYTES=8, ROW_SPLIT=r) for r in (1, 2, 4, 8)]
# shaped like issue 18's H100 measurement: the fastest under the search's (read) condition
# is slower than the baseline once the L2 holds dirty lines, so the rule picks another
TRUTH = truth_table({
    None: {"read": 4.94, "write": 8.70, "warm": 4.10, "graph": 3.90},
    FAST_READ: {"read": 4.27, "write": 9.20, "warm": 3.60, "graph": 3.40},
    STEADY: {"read": 4.50, "write": 8.40, "warm": 3.80, "graph": 3.60},
    DEFAULT: {"read": 4.60, "write": 8.71, "warm": 4.10, "graph": 3.90},
})


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


def _candidates() -> list[Candidate]:
    return [Candidate(c, SHAPE, DTYPE) for c in (FAST_READ, STEADY, DEFAULT, *OTHERS)]


def _report(runner: Any, results: list[TrialResult], seen: list[TrialResult]) -> TuneReport:
    return build_report("silu_and_mul", SHAPE, DTYPE, runner, results, confirm=3,
                        conditions=ALL, on_confirm=lambda _, r: seen.append(r))


def _records(results: Any) -> list[tuple[Any, ...]]:
    """What a confirmation measured, as the store keeps it (the worker aside)."""
    return [(r.config, r.extra["condition"], r.extra["round"], r.extra["is_baseline"],
             r.status, r.median_us) for r in results]


def test_the_cluster_confirms_under_conditions_like_the_direct_runner(client: Any) -> None:
    direct = ScriptedConditionRunner(TRUTH)
    direct_seen: list[TrialResult] = []
    expected = _report(direct, list(direct.measure(_candidates())), direct_seen)

    runner = dask_runner(client, ScriptedConditionsEndpoint(TRUTH))
    assert isinstance(runner, ManyDevices)
    assert {w.conditions for w in runner.workers} == {tuple(CONDITIONS)}
    searched = list(runner.measure(_candidates()))  # the search: both workers
    assert len({r.extra["worker"]["address"] for r in searched}) == 2
    seen: list[TrialResult] = []
    got = _report(runner, searched, seen)

    assert expected.confirmation is not None and expected.confirmation.conditions is not None
    assert got.confirmation is not None
    assert got.confirmation.conditions is not None, got.summary()  # not the one-condition path
    assert got.pick is not None and expected.pick is not None
    assert got.pick.config == expected.pick.config == STEADY  # not the read-fastest
    ours, theirs = got.confirmation.conditions, expected.confirmation.conditions
    assert condition_table(ours.selection) == condition_table(theirs.selection)
    assert condition_table(ours.reported) == condition_table(theirs.reported)
    assert ours.summary() == theirs.summary()
    assert _records(ours.results) == _records(theirs.results)
    assert _records(seen) == _records(direct_seen)
    assert got.speedup == expected.speedup
    # one device for the whole confirmation: every condition, both rounds, the baseline
    assert {r.extra["worker"]["address"] for r in ours.results} == {runner.reference.address}


def test_a_confirmation_stays_on_the_worker_it_pinned(client: Any) -> None:
    from workbench.engine.tuning import confirm_finalists

    runner = dask_runner(client, ScriptedConditionsEndpoint(TRUTH))
    other = runner.workers[1].address
    assert other != runner.reference.address
    finalists = list(ScriptedConditionRunner(TRUTH).measure(_candidates()[:3]))
    got = confirm_finalists(runner.one_device(other), finalists, conditions=ALL)
    assert not isinstance(got, str) and got.conditions is not None
    assert got.chosen.config == STEADY
    assert {r.extra["worker"]["address"] for r in got.conditions.results} == {other}


def test_a_runner_that_cannot_measure_under_conditions_says_so(
        client: Any, folder: KernelFolder) -> None:
    runner = dask_runner(client, SyntheticEndpoint(folder, folder.template))
    assert {w.conditions for w in runner.workers} == {("read",)}  # the model's one
    space = list(folder.space(SHAPE, DTYPE, runner.device))[:6]
    results = list(runner.measure([Candidate(c, SHAPE, DTYPE) for c in space]))
    report = build_report(folder.name, SHAPE, DTYPE, runner, results, confirm=3,
                          conditions=ALL)
    assert report.confirmation is not None and report.confirmation.conditions is None
    text = report.summary()
    assert "cannot measure under cache conditions" in text, text
    assert "no condition table" in text
    # the search's condition only was asked for: nothing to say
    quiet = build_report(folder.name, SHAPE, DTYPE, runner, results, confirm=3,
                         conditions=("read",))
    assert "cannot measure under cache conditions" not in quiet.summary()
