"""The stage 1 summary at the top of the README's corpus section
(benchmarks/readme_tables/stage1_summary.py): one row per kernel from its latest measurement,
its first (unseen) ratio, and issue 28's targets, over small synthetic result docs."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from readme_tables import stage1_summary as summary  # noqa: E402
from readme_tables.registry import RENDERERS, Result  # noqa: E402

pytestmark = pytest.mark.timeout(60)


def kernel(name: str, ratio: float, *, memory: bool = False, expert: float = 2.0,
           pct: float | None = None, statuses: dict[str, int] | None = None,
           gate: str = "correct at 40/40 configs checked (1 defaults; shape small)"
           ) -> dict[str, Any]:
    """A kernel record as stage1_corpus.bench_pair writes one whose template was written."""
    tune = {"speedup": ratio * expert, "statuses": statuses or {"ok": 40},
            "best_pct_of_copy": pct}
    return {"kernel": name, "memory_bound": memory,
            "templater": {"propose": {"gate": gate, "written": True}, "tune": tune},
            "expert": {"tune": {"speedup": expert, "best_pct_of_copy": 99.0}},
            "speedup_templater": ratio * expert, "speedup_expert": expert,
            "ratio_templater_to_expert": ratio}


def refused(name: str, expert: float = 4.0) -> dict[str, Any]:
    """A kernel whose templater wrote no template: 1x, ratio 1 / expert (as the file has it)."""
    last = "error: the offline templater found nothing to lift in k's baseline.cu: BLOCK_X: no"
    return {"kernel": name, "memory_bound": False,
            "templater": {"propose": {"gate": None, "written": False, "last_line": last},
                          "error": f"propose --write wrote no template: {last}"},
            "expert": {"tune": {"speedup": expert}},
            "speedup_templater": 1.0, "speedup_expert": expert,
            "ratio_templater_to_expert": 1.0 / expert}


def result(rel: str, set_name: str, date: str | None, *kernels: dict[str, Any],
           run_date: str = "2026-11-27") -> Result:
    env = {"date": date} if date else {}
    run = {"kind": "stage1_corpus", "date": run_date, "command": "python3 stage1_corpus.py"}
    return Result(rel, run, {"set": set_name, "environment": env, "kernels": list(kernels)})


EACH = "every compute-bound/tiled kernel's templater / expert ≥ 0.80"
GEO = "geometric mean over compute-bound/tiled ≥ 0.90"


def rows_by_kernel(results: list[Result]) -> dict[str, summary.KernelRow]:
    return {row.latest.kernel: row for row in summary.summarise(results).rows}


def targets_by_start(results: list[Result]) -> dict[str, summary.Target]:
    return {t.name.split(" (")[0] + (" unseen" if "unseen" in t.name else ""): t
            for t in summary.summarise(results).targets}


def test_the_latest_measurement_is_chosen_by_the_files_date_not_its_name() -> None:
    # the later run sits in the file whose name sorts first
    early = result("corpus/h100/stage1-compute-z.json", "compute", "2026-11-27T09:00:00+00:00",
                   kernel("gemm", 0.70))
    late = result("corpus/h100/stage1-compute-a.json", "compute", "2026-11-27T10:00:00+00:00",
                  kernel("gemm", 0.95))
    for order in ([early, late], [late, early]):
        row = rows_by_kernel(order)["gemm"]
        assert (row.latest.ratio, row.latest.file) == (0.95, "corpus/h100/stage1-compute-a.json")
        assert row.first.ratio == 0.70


def test_a_file_without_an_environment_date_falls_back_to_its_run_stamp() -> None:
    assert summary.measured_at({"date": "2026-11-27T150409Z"}, {"environment": {}}) == (
        datetime(2026, 11, 27, 15, 4, 9, tzinfo=UTC))
    assert summary.measured_at({"date": "2026-11-26"}, {}) == datetime(2026, 11, 26,
                                                                        tzinfo=UTC)
    assert summary.measured_at({"date": "someday"}, {}) is None


def test_a_refusal_is_a_measurement_and_can_be_the_latest() -> None:
    results = [result("a.json", "unseen7", "2026-11-27T13:00:00+00:00", kernel("rbf", 0.9)),
               result("b.json", "unseen7", "2026-11-27T15:00:00+00:00", refused("rbf", 5.0))]
    row = rows_by_kernel(results)["rbf"]
    assert row.latest.ratio == pytest.approx(0.2) and row.latest.speedup_templater == 1.0
    assert row.latest.gate.startswith("no template: found nothing to lift")
    assert not row.latest.written


def test_a_kernel_that_errored_counts_with_no_ratio() -> None:
    results = [result("a.json", "compute", "2026-11-27T01:00:00+00:00", kernel("k", 0.9)),
               result("b.json", "compute", "2026-11-27T02:00:00+00:00",
                      {"kernel": "k", "error": "CalledProcessError: nvcc | failed"})]
    row = rows_by_kernel(results)["k"]
    assert row.latest.ratio is None
    assert row.latest.gate == "error: CalledProcessError: nvcc / failed"
    assert row.memory_bound is False  # from the earlier record: the error record has none
    below = targets_by_start(results)[EACH]
    assert not below.met and "k —" in below.detail


def test_skipped_records_and_one_route_checks_are_not_measurements() -> None:
    expert_only = kernel("k", 0.5)
    expert_only["templater"] = {"error": summary.ROUTE_NOT_RUN}
    results = [result("a.json", "compute", "2026-11-27T01:00:00+00:00", kernel("k", 0.9)),
               result("b.json", "compute", "2026-11-27T02:00:00+00:00",
                      {"kernel": "k", "skipped": "the run's deadline (480 s) had passed"}),
               result("c.json", "compute", "2026-11-26T23:00:00+00:00", expert_only)]
    row = rows_by_kernel(results)["k"]
    assert row.latest.file == row.first.file == "a.json"


def test_the_first_measurement_of_a_held_back_set_is_marked_unseen() -> None:
    results = [result("u1.json", "unseen3", "2026-11-27T01:00:00+00:00", refused("dense", 4.0)),
               result("u2.json", "unseen3", "2026-11-27T04:00:00+00:00", kernel("dense", 0.84)),
               result("c1.json", "compute", "2026-11-27T01:00:00+00:00", kernel("gemm", 0.6)),
               result("c2.json", "compute", "2026-11-27T04:00:00+00:00", kernel("gemm", 1.0))]
    rows = rows_by_kernel(results)
    assert rows["dense"].first_is_unseen and rows["dense"].first.ratio == 0.25
    assert not rows["gemm"].first_is_unseen
    text = summary.render(results)
    assert "| 0.25 (unseen), `u1.json` | `u2.json` |" in text
    assert "| 0.60, `c1.json` | `c2.json` |" in text
    # the compute set comes before the held-back ones
    assert text.index("| compute | gemm |") < text.index("| unseen3 | dense |")


def test_geomean_and_the_ratio_targets_met_and_not_met() -> None:
    assert summary.geomean([0.5, 2.0]) == pytest.approx(1.0)
    assert summary.geomean([]) is None
    good = [result("a.json", "compute", "2026-11-27T01:00:00+00:00", kernel("a", 0.81),
                   kernel("b", 1.1), kernel("m", 0.5, memory=True, pct=95.0))]
    met = targets_by_start(good)
    assert met[EACH].met
    geo = met[GEO]
    assert geo.met and geo.detail == "0.94 over 2 kernels"  # sqrt(0.81 * 1.1); m is memory
    bad = [result("a.json", "compute", "2026-11-27T01:00:00+00:00", kernel("a", 0.79),
                  kernel("b", 1.0))]
    missed = targets_by_start(bad)
    each = missed[EACH]
    assert not each.met and each.detail == "1 of 2 at or above; below: a 0.79"
    assert not missed[GEO].met  # 0.89


def test_the_unseen_targets_read_first_measurements_of_held_back_kernels_only() -> None:
    results = [result("u1.json", "unseen", "2026-11-26T19:00:00+00:00", kernel("bmm", 0.47)),
               result("u2.json", "unseen", "2026-11-27T04:00:00+00:00", kernel("bmm", 1.22)),
               result("c.json", "compute", "2026-11-26T19:00:00+00:00", kernel("gemm", 0.1))]
    found = targets_by_start(results)
    assert found[GEO + " unseen"].detail == (
        "0.47 over 1 kernels")
    assert "gemm" not in found[EACH + " unseen"].detail
    assert found[GEO].detail == (
        "0.35 over 2 kernels")  # latest: sqrt(1.22 * 0.1)


def test_the_copy_and_wrong_config_targets() -> None:
    results = [result("a.json", "compute", "2026-11-27T01:00:00+00:00",
                      kernel("fast", 1.0, memory=True, pct=92.0),
                      kernel("slow", 1.0, memory=True, pct=54.4,
                             statuses={"ok": 36, "pruned": 4}),
                      kernel("fickle", 1.0, statuses={"ok": 29, "wrong_result": 11}),
                      refused("none"))]
    found = targets_by_start(results)
    copy = found["memory-bound kernels ≥ 90 % of copy"]
    assert not copy.met and copy.detail == "1 of 2 at or above; below: slow 54 %"
    wrong = found["0 wrong configs in any written template"]
    # pruned configs were never run: not wrong; the refused kernel wrote no template
    assert not wrong.met and wrong.detail == "3 written templates; wrong configs in: fickle 11"
    rows = rows_by_kernel(results)
    assert rows["slow"].latest.not_ok == (("pruned", 4),) and rows["slow"].latest.wrong_configs == 0
    clean = [result("a.json", "compute", "2026-11-27T01:00:00+00:00",
                    kernel("fast", 1.0, memory=True, pct=92.0))]
    assert targets_by_start(clean)["0 wrong configs in any written template"].met
    assert targets_by_start(clean)["memory-bound kernels ≥ 90 % of copy"].met


def test_the_gate_verdict_is_shortened() -> None:
    assert summary.short_gate(kernel("k", 1.0)) == "40/40 correct"
    failed = refused("k")
    failed["templater"]["propose"]["gate"] = "wrong at 2/41 configs checked (1 defaults)"
    failed["templater"]["error"] = ("propose --write wrote no template: propose failed: "
                                    "[correctness] small/fp32")
    assert summary.short_gate(failed) == "no template (2/41 wrong): propose failed"


def test_the_readme_section_draws_the_summary_before_each_files_table() -> None:
    results = [result("corpus/h100/stage1-compute-2026-11-27.json", "compute",
                      "2026-11-27T01:00:00+00:00", kernel("gemm", 0.8))]
    text = RENDERERS["stage1_corpus"].render(results)
    assert text.index("Issue 28's targets") < text.index(
        "`corpus/h100/stage1-compute-2026-11-27.json`:\n\nSet `compute`")
