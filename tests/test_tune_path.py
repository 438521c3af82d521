"""The one tune path: Python, CLI and panel resume and re-launch through the same call and
report every stored trial (replay tier: a committed H100 recording, a real SQLite file)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from workbench.api import Workbench
from workbench.cli import main
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Status
from workbench.engine.replay import ReplayRunner

pytestmark = [pytest.mark.replay, pytest.mark.timeout(120)]

SILU = Path(__file__).resolve().parents[1] / "sample_kernels" / "silu_and_mul"


def _workbench(store: Path) -> Workbench:
    folder = load_kernel_folder(SILU)
    return Workbench(folder, store=store, runner=ReplayRunner(folder))


def _stored_best_us(wb: Workbench) -> float:
    ok = [t.result.median_us for t in wb.store.trials(wb.provenance(), "decode", "bf16")
          if t.result.status is Status.OK and t.result.median_us is not None]
    return min(ok)


def test_python_resume_and_a_second_strategy_report_every_stored_trial(tmp_path: Path) -> None:
    wb = _workbench(tmp_path / "s.sqlite")
    first = wb.tune("decode", "bf16", "tpe", budget=24, confirm=0)
    assert first.measured_now == 24 and first.evaluated == 24
    again = wb.tune("decode", "bf16", "tpe", budget=24, confirm=0)
    assert again.measured_now == 0 and again.reason == "budget"
    assert len(again.results) == len(first.results)  # nothing lost on a re-run
    assert again.best is not None and again.best.median_us == first.best.median_us  # type: ignore[union-attr]
    wider = wb.tune("decode", "bf16", "exhaustive", budget=400, confirm=0)
    stored = wb.store.trials(wb.provenance(), "decode", "bf16")
    assert len(wider.results) == len(stored)  # the 24 resumed and the new ones
    assert wider.best is not None and wider.best.median_us == _stored_best_us(wb)
    assert wider.measured_now == wider.evaluated - first.evaluated


def test_cli_resume_reports_every_stored_trial(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    wb = _workbench(store)
    wb.tune("decode", "bf16", "tpe", budget=10, confirm=0)
    out = io.StringIO()
    code = main(["tune", str(SILU), "--shape", "decode", "--replay", "--budget", "16",
                 "--strategy", "random", "--confirm", "0", "--store", str(store)], stdout=out)
    text = out.getvalue()
    assert code == 0, text
    assert "16 evaluated (6 measured now" in text
    n = len(wb.store.trials(wb.provenance(), "decode", "bf16"))
    assert f"{n} stored trials" in text
    assert f"{_stored_best_us(wb):9.2f} us" in text


def test_panel_on_the_real_workbench_relaunches_with_every_stored_trial(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ipywidgets")
    from workbench.ui.panel import WorkbenchPanel

    wb = _workbench(tmp_path / "s.sqlite")
    wb.tune("decode", "bf16", "tpe", budget=8, confirm=0)  # from code, before the panel
    panel = WorkbenchPanel(wb)
    try:
        panel.shape.value, panel.dtype.value = "decode", "bf16"
        # opened on what the store holds (8 evaluated, and the configs the recording never
        # measured, stored as pruned)
        assert len(panel.table) == len(wb.store.trials(wb.provenance(), "decode", "bf16")) >= 8
        panel.strategy.value, panel.budget.value = "random", 8
        panel.launch_button.click()
        assert panel.join(60)
        panel.pusher.flush()
        assert "finished (budget)" in panel.header.value
        assert len(panel.table) == len(wb.store.trials(wb.provenance(), "decode", "bf16"))
        assert panel.run_view.field("budget") == 8  # pruned configs count too
        assert "wb-trials-table" in panel.run_view.field("table_html")
        panel.budget.value = 14
        panel.launch_button.click()
        assert panel.join(60)
        panel.pusher.flush()
        stored = wb.store.trials(wb.provenance(), "decode", "bf16")
        assert len(panel.table) == len(stored) and panel.run_view.field("budget") == 14
        assert panel.last_report.best.median_us == _stored_best_us(wb)
        monkeypatch.chdir(tmp_path)
        panel.export_path.value = "out"
        panel._export("csv")()
        with (tmp_path / "out.csv").open() as fh:
            assert len(list(csv.DictReader(fh))) == len(stored)
    finally:
        panel.close()


def test_panel_review_diff_names_the_parameters_beside_the_code(tmp_path: Path) -> None:
    pytest.importorskip("ipywidgets")
    from workbench.ui.panel import WorkbenchPanel

    wb = _workbench(tmp_path / "s.sqlite")
    panel = WorkbenchPanel(wb)
    try:
        html = panel.diff_view.value
        chips = html.count('class="wb-param"')
        assert chips > 0, "the Template tab's diff draws no parameter notes"
        assert all(p.name in html for p in wb.params)
    finally:
        panel.close()
