"""One truth on screen, on the real Workbench over a replay: a template the recording does
not hold is named in the header before Launch and Launch refuses it (no "0 evaluated")."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.api import Workbench
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
