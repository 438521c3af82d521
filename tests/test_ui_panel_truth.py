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
    report = wb.tune(first, panel.dtype.value, "random", budget=6)  # for `first`
    stored, measured = len(report.results), report.evaluated
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
    # the count is what a budget counts: measured trials, not the configs pruned beside them
    assert (panel.run_view.field("done"), panel.run_view.field("budget")) == (measured, 0)
    assert panel.run_view.field("progress_label") == f"{measured} stored"
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
    # the budget counts measured trials; the replay also stores the configs it pruned
    assert (panel.run_view.field("done"), panel.run_view.field("budget")) == (8, 8)
    assert panel.run_view.field("progress_label") == "0 more, 8 stored"  # the one wording
    assert f"the tune from code ({shape} bf16, template {wb.template_version}) finished" \
        in panel.message.value
    assert not panel.shape.disabled and not panel.launch_button.disabled


@pytest.mark.replay
@pytest.mark.timeout(120)
def test_progress_never_counts_more_than_the_budget(
        wb_panel: tuple[Workbench, WorkbenchPanel]) -> None:
    """The replay stores the configs it prunes before the GPU beside the measured ones, and
    a store may hold more than a smaller budget asks for: neither is counted past the
    budget ("11 / 8" was shown)."""
    wb, panel = wb_panel
    panel.shape.value = "decode"
    shown: list[tuple[int, int, str]] = []

    def during(event: Any) -> None:  # what the progress bar says after every trial
        if isinstance(event, TrialFinished):
            panel.pusher.flush()
            view = panel.run_view
            shown.append((view.field("done"), view.field("budget"), view.field("progress_label")))

    unsubscribe = wb.events.subscribe(during)
    try:
        panel.budget.value = 8
        panel.launch_button.click()
        assert panel.join(60), "the search did not end"
        panel.pusher.flush()
    finally:
        unsubscribe()
    stored = len(panel.table)
    pruned = sum(1 for r in panel.table.results if r.status.value == "pruned")
    assert pruned > 0 and stored == 8 + pruned  # the case that showed "11 / 8"
    assert shown and all(done <= budget == 8 for done, budget, _ in shown), shown
    assert panel.run_view.field("progress_label") == "0 more, 8 stored"
    panel.budget.value = 4  # a smaller budget than the store already holds: full, not over
    panel.launch_button.click()
    assert panel.join(60)
    panel.pusher.flush()
    assert (panel.run_view.field("done"), panel.run_view.field("budget")) == (4, 4)
    assert panel.run_view.field("progress_label") == "0 more, 8 stored"


def _shown_template(panel: WorkbenchPanel) -> dict[str, Any]:
    """What the panel draws of the template: editor rows and defaults, the charts' axes
    (x-axis titles of the figure sent to the browser), the parallel coordinates' dimensions,
    the table's sort keys and the header's version."""
    figure = panel.run_view.figure
    x_titles = [v["title"]["text"] for k, v in sorted(figure["layout"].items())
                if k.startswith("xaxis") and v.get("title", {}).get("text") != "evaluations"]
    dims = [d["label"] for d in panel.run_view.parcoords["data"][0]["dimensions"]]
    defaults = {name: re.sub(r"<[^>]+>", "", html.value)
                for name, html in panel.editor.defaults.items()}
    version = re.search(r'class="wb-version">([^<]*)<', panel.header.value)
    return {"rows": list(panel.editor.inputs), "defaults": defaults, "x_axes": sorted(x_titles),
            "parcoords": dims, "table": list(panel.table.param_names),
            "sort_keys": panel.run_view.table_options["sort_keys"],
            "version": version.group(1) if version else ""}


def _template_of(wb: Workbench) -> dict[str, Any]:
    names = [p.name for p in wb.params]
    return {"rows": names, "defaults": {p.name: str(p.default) for p in wb.params},
            "x_axes": sorted(names), "parcoords": [*names, "µs"], "table": names,
            "sort_keys": ["median_us", "trial", *names], "version": wb.template_version}


@pytest.mark.replay
@pytest.mark.timeout(120)
def test_everything_follows_an_adopted_template(
        wb_panel: tuple[Workbench, WorkbenchPanel]) -> None:
    """Propose (the offline templater: other parameters than the curated ones) and a script's
    ``adopt_template`` back: the editor's rows and defaults, the charts' axes, the parallel
    coordinates, the table and the header's version describe the adopted template."""
    wb, panel = wb_panel
    curated = wb.template
    assert _shown_template(panel) == _template_of(wb)
    wb.tune("decode", "bf16", "random", budget=4)  # the curated template's trials
    panel.propose_button.click()
    assert "proposed by" in panel.message.value, panel.message.value
    names = [p.name for p in wb.params]
    assert names != [p.name for p in curated.params], names  # another set of parameters
    assert wb.template_version != curated_version(wb, curated)
    assert _shown_template(panel) == _template_of(wb)
    assert len(panel.table) == 0  # no trial of the proposed template is stored
    assert "proposed template" in panel.diff_view.value

    wb.adopt_template(curated, origin="curated")  # a script goes back: the panel follows
    assert _shown_template(panel) == _template_of(wb)
    assert [p.name for p in wb.params] == [p.name for p in curated.params]
    panel.shape.value = "decode"
    panel.pusher.flush()
    assert len(panel.table) >= 4 and panel.run_view.field("progress_label").endswith("stored")
    assert wb.template_version in panel.chart_title()


def curated_version(wb: Workbench, template: Any) -> str:
    from workbench.store.approval import version_id

    return version_id(wb.kernel_name, template)
