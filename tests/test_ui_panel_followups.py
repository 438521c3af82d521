"""Panel answers from issue 30 (items 2 and 5), on the real Workbench over a committed
recording: Launch refused with its reason beside the button; Propose -> Approve leaves the
header on the new version without the last template's "status error"; a finished tune's
result as a compact table."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench.api import Workbench
from workbench.core.events import ErrorEvent
from workbench.ui.panel import WorkbenchPanel

pytest.importorskip("ipywidgets")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def wb_panel(tmp_path: Path) -> Iterator[tuple[Workbench, WorkbenchPanel]]:
    wb = Workbench(ROOT / "sample_kernels" / "silu_and_mul", store=tmp_path / "s.sqlite")
    panel = WorkbenchPanel(wb)
    yield wb, panel
    panel.close()


def _header(panel: WorkbenchPanel) -> str:
    return re.sub(r"<[^>]+>", "", panel.header.value)


@pytest.mark.replay
@pytest.mark.timeout(180)
def test_refused_launch_answers_beside_the_button_and_approve_clears_the_error(
        wb_panel: tuple[Workbench, WorkbenchPanel]) -> None:
    wb, panel = wb_panel
    panel.propose_button.click()  # the offline templater's template: not in the recording
    panel.launch_button.click()
    assert panel.join(10)
    assert "Launch refused" in panel.search.launch_note.value
    assert "nothing to measure" in panel.search.launch_note.value
    wb.events.publish(ErrorEvent(message="boom", detail="a search of the last template"))
    assert "status error" in _header(panel)
    panel.review_note.value = "offline lift checked"
    panel.approve_button.click()
    assert f"template {wb.template_version}" in _header(panel), _header(panel)
    assert "status error" not in _header(panel) and "status idle" in _header(panel)


@pytest.mark.replay
@pytest.mark.timeout(180)
def test_finished_tune_shows_a_compact_summary_table(
        wb_panel: tuple[Workbench, WorkbenchPanel]) -> None:
    _wb, panel = wb_panel
    panel.shape.value = "decode"
    panel.budget.value = 6
    panel.launch_button.click()
    assert panel.join(60)
    text = panel.search.summary.value
    assert 'class="wb-summary-table"' in text and "speedup" in text
    assert "\n" not in text  # not report.summary()'s lines run together
    assert "stored" in text and "search finished" in panel.message.value
