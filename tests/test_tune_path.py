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



@pytest.mark.parametrize(("kernel", "knob", "size", "shape"), [
    ("silu_and_mul", "D_CONST", "d", {"tokens": 1536, "d": 4864}),
    ("fused_add_rmsnorm", "HIDDEN_CONST", "hidden", {"tokens": 45, "hidden": 1536}),
    ("merge_attn_states_lse", "HEAD_DIM_CONST", "head_dim",
     {"tokens": 211, "heads": 12, "head_dim": 80}),
])
def test_a_shape_outside_the_kernel_toml_is_searched_with_its_own_compiled_in_size(
        tmp_path: Path, kernel: str, knob: str, size: str, shape: dict[str, int]) -> None:
    """Through the Workbench (the path of notebooks, the CLI, the agent and peers.py --tune)
    a user's own shape gets its own value of a shape-aware knob, measured and stored. Until
    the eleventh session the Workbench's template lost its shape-aware parts and a search at
    such a shape never tried it (found on the H100: 200 evaluations at 1536 x 4864 and not
    one full tile). Every other knob is pinned to its default by a range edit, so the space
    is the knob's two values; synthetic runner: times from a model, no GPU."""
    import dataclasses

    from workbench.testing.synthetic_runner import SyntheticRunner

    folder = load_kernel_folder(SILU.parent / kernel)
    assert shape[size] not in {p.name: p for p in folder.template.params}[knob].values()
    folder = dataclasses.replace(folder, shapes={**folder.shapes, "mine": shape})
    wb = Workbench(folder, store=tmp_path / "wb.sqlite", runner=SyntheticRunner(folder))
    default = folder.template.default_config()
    wb.set_params([p if p.name == knob else dataclasses.replace(
        p, **({"values_": (default[p.name],)} if hasattr(p, "values_")
              else {"min": default[p.name], "max": default[p.name]}))
        for p in wb.params])
    report = wb.tune("mine", "bf16", budget=None, confirm=0, auto_approve=True,
                     l2_profile=False, strategy="exhaustive")
    assert report.reason == "exhausted"
    measured = {r.config[knob] for r in report.results if r.status is Status.OK}
    assert measured == {0, shape[size]}, [(dict(r.config), r.reason) for r in report.results]
