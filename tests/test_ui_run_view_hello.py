"""A view that comes up asks for the whole state ("hello"), and the panel pushes it again.

Found by benchmarks/panel/bench_lab_browser.py on a loaded machine: of five panels opened at
once, four kept empty charts and an empty trial table for minutes. The kernel's pushes went
out while the page was still creating each model (loading the view's module takes seconds
under load); they found no listener and were dropped, and nothing was pushed again until the
data changed. Replay tier: the real Workbench over the committed H100 recording.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ipywidgets")
pytestmark = [pytest.mark.replay, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[1]


def test_run_view_calls_on_hello_for_a_hello_message() -> None:
    from workbench.ui.state_view import RunView

    view = RunView()
    asked: list[int] = []
    view.on_hello = lambda: asked.append(1)
    view._handle_custom_msg({"hello": True}, [])  # what a browser's model.send delivers
    view._handle_custom_msg({"hello": "yes"}, [])  # not the message: ignored
    assert asked == [1]


def test_a_hello_gets_the_whole_chart_and_state_again(tmp_path: Path) -> None:
    from workbench.api import Workbench
    from workbench.ui.panel import WorkbenchPanel
    from workbench.ui.state_view import from_wire

    wb = Workbench(ROOT / "sample_kernels" / "silu_and_mul", store=tmp_path / "s.sqlite")
    wb.tune("small", "bf16", "random", budget=12, confirm=0)
    panel = WorkbenchPanel(wb)
    try:
        view = panel.search.run_view
        pushed = threading.Condition()
        charts: list[dict[str, Any]] = []

        def seen(change: Any) -> None:
            with pushed:
                charts.append(change["new"])
                pushed.notify_all()

        def state_seen(_change: Any) -> None:
            with pushed:
                pushed.notify_all()

        view.observe(state_seen, names="state")
        with pushed:  # the panel's first push (its pusher thread)
            assert pushed.wait_for(lambda: view.state.get("table_html"), timeout=60)
        view.observe(seen, names="chart")
        before = view.seq
        view._handle_custom_msg({"hello": True}, [])
        with pushed:
            assert pushed.wait_for(lambda: charts, timeout=60), "no push after hello"
        again = charts[-1]
        assert again["seq"] > before
        traces = from_wire(again["traces"])
        assert sum(len(t.get("y", ())) for t in traces.values()) > 0  # the points themselves
        assert again["layout"], "the axes went out again (they are sent only on change)"
        assert "matching trials" in view.state["table_html"]
    finally:
        panel.close()
