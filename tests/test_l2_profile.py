"""The L2 hit rate of a 2-D tiled kernel's finalists: measured with Nsight Compute where it
is present, shown beside their times (report, CLI text) and given to the planner; without
ncu the report says so (pure tier: a fake profiler at the ncu boundary, the synthetic
runner's invented times; the real measurement is benchmarks/corpus_bench.py on the H100)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from workbench.api import Workbench
from workbench.core.cache_profile import L2_HIT_METRIC, FinalistL2, L2Profile, is_tiled_2d
from workbench.core.hardware import default_device
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Config, Status, Timing, TrialResult
from workbench.core.template import KernelTemplate
from workbench.engine.ncu import finalist_l2, metric_value, parse_ncu_csv
from workbench.llm.prompts import KernelBrief, Measurement, PromptContext, context_text
from workbench.testing.synthetic_runner import SyntheticRunner

pytestmark = pytest.mark.timeout(120)

CORPUS = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus"

# ncu --csv as Nsight Compute 2025 prints it for one metric (unit "%")
NCU_CSV = ('==PROF== Connected to process 4242 (/usr/bin/python3.12)\n'
           '==PROF== Profiling "transpose" - 0: 0%....50%....100% - 1 pass\n'
           '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
           '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
           '"Metric Value"\n'
           '"0","4242","python3.12","127.0.0.1","transpose","1","7","(32, 8, 1)",'
           '"(256, 256, 1)","0","9.0","Command line profiler metrics",'
           '"lts__t_sector_hit_rate.pct","%","47.83"\n')


class FakeNcu:
    """The ncu boundary: a hit rate per config (a function of BLOCK_ORDER), or absent."""

    def __init__(self, missing: str | None = None, silent_for: int | None = None) -> None:
        self.why, self.silent_for, self.calls = missing, silent_for, 0

    def missing(self) -> str | None:
        return self.why

    def profile(self, folder: KernelFolder, template: KernelTemplate,
                configs: Sequence[Config], shape: str, dtype: str, *, compiler: Any,
                metrics: Sequence[str]) -> list[Mapping[str, float | str] | None]:
        assert tuple(metrics) == (L2_HIT_METRIC,)
        self.calls += len(configs)
        return [None if c.get("BLOCK_ORDER") == self.silent_for  # ncu printed no value
                else parse_ncu_csv(NCU_CSV.replace("47.83", str(40.0 + 10 * int(
                    c.get("BLOCK_ORDER", 0))))) for c in configs]


def _ok(config: Config, us: float) -> TrialResult:
    timing = Timing(median_us=us, min_us=us, q1_us=us, q3_us=us, mean_us=us, reps=10,
                    rse_median_pct=0.2, l2_flushed=True)
    return TrialResult(config, "large", "fp32", Status.OK, timing=timing, bytes_moved=1 << 20)


def test_two_d_tiled_kernels_are_told_apart() -> None:
    assert is_tiled_2d(load_kernel_folder(CORPUS / "transpose").template)
    assert is_tiled_2d(load_kernel_folder(CORPUS / "stencil5").template)
    assert not is_tiled_2d(load_kernel_folder(CORPUS / "gelu").template)
    assert not is_tiled_2d(load_kernel_folder(CORPUS / "rms_norm").template)


def test_the_hit_rate_is_read_from_ncu_csv() -> None:
    metrics = parse_ncu_csv(NCU_CSV)
    assert metrics == {"lts__t_sector_hit_rate.pct (%)": 47.83}
    assert metric_value(metrics, L2_HIT_METRIC) == 47.83
    assert metric_value(metrics, "dram__throughput.avg.pct_of_peak_sustained_elapsed") is None
    assert metric_value(None, L2_HIT_METRIC) is None


def test_finalists_are_profiled_on_a_live_runner_and_failures_named() -> None:
    folder = load_kernel_folder(CORPUS / "transpose")
    runner = SyntheticRunner(folder)  # re-measures and compiles: what finalist_l2 asks of it
    finalists = [_ok(Config(BLOCK_ORDER=o), 10.0 + o) for o in (2, 0, 1)]
    profile = finalist_l2(folder, folder.template, runner, finalists, "large", "fp32",
                          profiler=FakeNcu(silent_for=1))
    assert [(f.config["BLOCK_ORDER"], f.l2_hit_pct) for f in profile.finalists] == [
        (2, 60.0), (0, 40.0), (1, None)]
    assert profile.measured and "no L2 hit rate for 1 of 3 finalists" in profile.note
    text = "\n".join(profile.lines())
    assert "L2 hit  60.0 %" in text and "L2 hit   n/a" in text


def test_without_a_profiler_or_a_live_gpu_it_says_why_and_gives_no_number() -> None:
    folder = load_kernel_folder(CORPUS / "transpose")
    finalists = [_ok(Config(BLOCK_ORDER=0), 10.0)]
    absent = finalist_l2(folder, folder.template, SyntheticRunner(folder), finalists, "large",
                         "fp32", profiler=FakeNcu(missing="ncu (Nsight Compute) is not on PATH"))
    assert not absent.measured and absent.finalists == ()
    assert absent.lines() == ["L2 hit rate of the finalists: not measured: ncu (Nsight "
                              "Compute) is not on PATH"]

    class Recorded:  # a replay: it cannot run anything
        description = "replay of an H100 recording"

    replay = finalist_l2(folder, folder.template, Recorded(), finalists, "large", "fp32",
                         profiler=FakeNcu())
    assert "replay of an H100 recording does not run kernels here" in replay.note
    if shutil.which("ncu") is None:  # this machine: the real profiler says so
        real = finalist_l2(folder, folder.template, SyntheticRunner(folder), finalists,
                           "large", "fp32")
        assert real.note == "ncu (Nsight Compute) is not on PATH"


def test_tune_reports_the_rates_beside_the_finalists_times(tmp_path: Path) -> None:
    folder = load_kernel_folder(CORPUS / "transpose")
    wb = Workbench(folder, store=tmp_path / "s.sqlite", runner=SyntheticRunner(folder))
    fake = FakeNcu()
    wb.profiler = fake
    report = wb.tune("large", "fp32", "random", budget=12, confirm=3, auto_approve=True)
    assert report.l2 is not None and report.l2.measured
    assert fake.calls == len(report.finalists) == 3
    for r in report.finalists:
        assert report.l2.hit_pct(r.config) == 40.0 + 10 * int(r.config["BLOCK_ORDER"])
    lines = report.summary().splitlines()
    # each top line that was profiled carries its rate between the time and the config
    top = [line for line in lines if "GB/s" in line and "{" in line]
    assert sum("L2 hit" in line for line in top) == 3
    assert any(line.strip().startswith("L2 hit rate of the finalists (Nsight Compute "
                                       "lts__t_sector_hit_rate.pct") for line in lines)
    skipped = wb.tune("large", "fp32", "random", budget=12, confirm=3, auto_approve=True,
                      l2_profile=False)
    assert skipped.l2 is None and fake.calls == 3


def test_kernels_that_are_not_2d_tiled_are_not_profiled(tmp_path: Path) -> None:
    folder = load_kernel_folder(CORPUS / "gelu")
    wb = Workbench(folder, store=tmp_path / "s.sqlite", runner=SyntheticRunner(folder))
    wb.profiler = fake = FakeNcu()
    report = wb.tune("large", folder.dtypes[0], "random", budget=6, confirm=2,
                     auto_approve=True)
    assert report.l2 is None and fake.calls == 0 and "L2 hit" not in report.summary()


def test_the_planner_prompt_carries_the_finalists_rates() -> None:
    folder = load_kernel_folder(CORPUS / "transpose")
    l2 = L2Profile(finalists=(FinalistL2(Config(BLOCK_ORDER=2, TILE=32), 301.5, 71.25),
                              FinalistL2(Config(BLOCK_ORDER=0, TILE=32), 318.0, 52.5)))
    m = Measurement(shape="large", dtype="fp32", sizes=folder.shape_values("large"),
                    bytes_moved=folder.bytes_moved_for("large", "fp32"), l2=l2)
    text = context_text(KernelBrief.from_folder(folder),
                        PromptContext(device=default_device(), measurements=(m,)))
    assert "the finalists' L2 hit rates" in text
    assert "301.50 us  L2 hit  71.2 %  {'BLOCK_ORDER': 2, 'TILE': 32}" in text
    assert "318.00 us  L2 hit  52.5 %" in text
    unmeasured = Measurement(shape="large", dtype="fp32", sizes={}, bytes_moved=1,
                             l2=L2Profile(note="ncu (Nsight Compute) is not on PATH"))
    assert "not measured: ncu (Nsight Compute) is not on PATH" in context_text(
        KernelBrief.from_folder(folder),
        PromptContext(device=default_device(), measurements=(unmeasured,)))


def test_one_ncu_run_profiles_every_finalist_on_its_second_launch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch: one driver process launches each finalist's cubin twice; ncu's results
    come back by launch ID and each config gets its second launch (caches flushed)."""
    import subprocess
    from types import SimpleNamespace

    import workbench.engine.ncu as ncu

    folder = load_kernel_folder(CORPUS / "transpose")
    configs = [Config({**folder.template.default_config(), "BLOCK_ORDER": o}) for o in (0, 2)]
    header = NCU_CSV.splitlines()[2]
    row = NCU_CSV.splitlines()[3]
    text = "\n".join([header, *(row.replace('"0","4242"', f'"{i}","4242"').replace(
        "47.83", f"{10 + i}.5") for i in range(4))])
    seen: dict[str, Any] = {}

    def fake_run(command: list[str], **kw: Any) -> SimpleNamespace:
        import json

        seen["command"] = command
        seen["problem"] = json.loads(Path(command[-1]).read_text())
        return SimpleNamespace(returncode=0, stdout=text, stderr="")

    class Compiled:
        ok, cubin_path = True, "/nonexistent/k.cubin"

    monkeypatch.setattr(ncu, "ncu_available", lambda: True)
    monkeypatch.setattr(ncu.shutil, "which", lambda name: "/opt/ncu")
    monkeypatch.setattr(subprocess, "run", fake_run)
    got = ncu.profile_configs(folder, folder.template, configs, "large", "fp32",
                              compiler=SimpleNamespace(compile=lambda instance: Compiled()),
                              metrics=(L2_HIT_METRIC,))
    assert [metric_value(m, L2_HIT_METRIC) for m in got] == [11.5, 13.5]
    command = seen["command"]
    assert command[:9] == ["/opt/ncu", "--csv", "--clock-control", "none", "--cache-control",
                           "all", "--metrics", L2_HIT_METRIC, "--kernel-name"]
    problem = seen["problem"]
    assert problem["launches"] == 2 and len(problem["kernels"]) == 2
    assert problem["kernels"][0]["grid"] == [256, 256, 1]  # 8192 / TILE 32, at the large shape
    assert [a["name"] for a in problem["args"]] == ["out", "in", "rows", "cols"]


def test_the_agent_keeps_the_finalists_l2_for_its_planner(tmp_path: Path) -> None:
    """The agent's tune step carries the report's L2 profile into the iteration's record
    and the planner's measurement (here: no ncu, so the reason, never a number)."""
    from workbench.agent import run_agent
    from workbench.store.sqlite import SQLiteStore

    folder = load_kernel_folder(CORPUS / "transpose")
    with SQLiteStore(tmp_path / "agent.sqlite") as store:
        outcome = run_agent(folder, runner=SyntheticRunner(folder), store=store,
                            iterations=1, strategy="random", budget=3, shape="small",
                            dtype="fp32", auto_approve=True, allow_unverified=True,
                            initial_template=folder.template)
        searches = [r.detail["search"] for r in store.iterations(outcome.session_id)
                    if "search" in r.detail]
    assert searches and all("l2" in s for s in searches)
    l2 = searches[0]["l2"]
    assert l2 is not None and l2["method"].startswith("Nsight Compute")
    if shutil.which("ncu") is None:
        assert l2["note"] == "ncu (Nsight Compute) is not on PATH" and l2["finalists"] == []
