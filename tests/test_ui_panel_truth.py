"""One truth on screen, on the real Workbench over a replay: a template the recording does
not hold is named in the header before Launch and Launch refuses it (no "0 evaluated")."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.api import Workbench
from workbench.core.events import TrialFinished
from workbench.ui.panel import WorkbenchPanel

pytest.importorskip("ipywidgets")

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.replay
@pytest.mark.timeout(120)
def test_replay_of_an_unrecorded_template_says_so_before_launch(tmp_path: Path) -> None:
    wb = Workbench(ROOT / "sample_kernels" / "silu_and_mul", store=tmp_path / "s.sqlite")
    assert wb.replay_problem == ""  # the curated template is the recorded one
    panel = WorkbenchPanel(wb)
    try:
        assert "cannot measure here" not in panel.header.value
        panel.propose_button.click()  # the offline templater's template: not recorded
        assert "proposed by" in panel.message.value, panel.message.value
        assert "cannot measure here" in panel.header.value
        assert "holds template" in panel.header.value
        panel.launch_button.click()
        assert panel.join(10)
        assert "nothing to measure" in panel.message.value
        assert "running" not in panel.header.value and "finished" not in panel.header.value
    finally:
        panel.close()


@pytest.fixture
def wb_panel(tmp_path: Path) -> Iterator[tuple[Workbench, WorkbenchPanel]]:
    wb = Workbench(ROOT / "sample_kernels" / "silu_and_mul", store=tmp_path / "s.sqlite")
    panel = WorkbenchPanel(wb)
    yield wb, panel
    panel.close()


def header_text(panel: WorkbenchPanel) -> str:
    return re.sub(r"<[^>]+>", "", panel.header.value)


@pytest.mark.replay
@pytest.mark.timeout(120)
def test_header_charts_and_progress_follow_the_dropdowns(
        wb_panel: tuple[Workbench, WorkbenchPanel]) -> None:
    wb, panel = wb_panel
    first, other = panel.shape.value, next(s for s in wb.shape_names if s != panel.shape.value)
    stored = len(wb.tune(first, panel.dtype.value, "random", budget=6).results)  # for `first`
    panel.shape.value = first
    panel.shape.value = other
    panel.pusher.flush()
    version = wb.template_version
    assert f"template {version} · shape {other} · dtype {panel.dtype.value}" \
        in header_text(panel), header_text(panel)
    assert panel.chart_title() == f"silu_and_mul · {version} · {other} · {panel.dtype.value}"
    assert panel._shown_title == panel.chart_title()  # sent with the charts
    assert (panel.run_view.field("done"), panel.run_view.field("budget")) == (0, 0)
    assert panel.run_view.field("progress_label") == "0 stored"  # never "24 / 0"
    # no data: the browser hides the charts behind this line
    assert f"no trial stored for {other} {panel.dtype.value}" in panel.run_view.field("empty_html")
    assert panel.run_view.field("eta") == ""
    panel.shape.value = first
    panel.pusher.flush()
    assert (panel.run_view.field("done"), panel.run_view.field("budget")) == (stored, 0)
    assert panel.run_view.field("empty_html") == ""
    assert all(r.shape == first for r in panel.table.results) and len(panel.table) == stored
    assert f"shape {first}" in header_text(panel) and first in panel._shown_title


@pytest.mark.replay
@pytest.mark.timeout(120)
def test_a_tune_from_code_switches_the_panel_to_what_it_runs(
        wb_panel: tuple[Workbench, WorkbenchPanel]) -> None:
    wb, panel = wb_panel
    shown = panel.shape.value
    shape = next(s for s in wb.shape_names if s != shown)
    seen: list[tuple[str, str, bool]] = []

    def during(event: Any) -> None:  # what the panel showed while the search ran
        if isinstance(event, TrialFinished) and not seen:
            seen.append((panel.shape.value, header_text(panel), panel.shape.disabled))

    report = wb.tune(shape, "bf16", "random", budget=8, callbacks=[during])  # a cell's call
    assert seen and seen[0][0] == shape
    assert f"shape {shape}" in seen[0][1] and "status running" in seen[0][1]
    assert seen[0][2]  # no switching the problem under a running search
    panel.pusher.flush()
    assert panel.shape.value == shape and panel.dtype.value == "bf16"
    assert f"status finished ({report.reason})" in header_text(panel)
    assert len(panel.table) == len(report.results) >= 8
    assert all(r.shape == shape for r in panel.table.results)
    assert (panel.run_view.field("done"), panel.run_view.field("budget")) \
        == (len(report.results), 8)
    assert f"the tune from code ({shape} bf16, template {wb.template_version}) finished" \
        in panel.message.value
    assert not panel.shape.disabled and not panel.launch_button.disabled
