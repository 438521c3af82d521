"""One truth on screen and a figure that follows the panel's width, in a real JupyterLab and
a real Chromium (marker ``browser``): a tune typed into a cell while the panel is shown
switches the panel to what it ran; the header follows the shape dropdown; the figure's width
fills its box at two browser window widths and with the side bar closed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from test_panel_browser import PANEL_NOTEBOOK, _run_all, _write_panel_notebook

LabServer = Any  # conftest.LabServer: url, token, root, notebook_url(name)

pytestmark = [pytest.mark.browser, pytest.mark.replay]

TUNED_SHAPE, DROPDOWN_SHAPE = "decode", "odd"  # the panel opens on the first shape, "small"


def _type_and_run_new_cell(page: Any, code: str) -> None:
    """A new cell below the last one, typed and run (Shift+Enter), as a user would."""
    page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt").last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.keyboard.press("Enter")
    page.keyboard.type(code)
    page.keyboard.press("Shift+Enter")


def _text(page: Any, selector: str) -> str:
    """The text of the first element matching ``selector`` (SVG text included)."""
    return str(page.evaluate("s => { const e = document.querySelector(s);"
                             " return e ? e.textContent : '(none)'; }", selector))


def _wait_text(page: Any, selector: str, expected: str, timeout_ms: int = 60_000) -> None:
    page.wait_for_function(
        "([s, t]) => { const e = document.querySelector(s);"
        " return e && e.textContent.includes(t); }", arg=[selector, expected],
        timeout=timeout_ms)


def _settled_width(page: Any, previous: float) -> float:
    """The figure box's width once it differs from ``previous`` and the drawn figure fills
    it (plotly's SVG within 2 px of the box), in CSS pixels."""
    page.wait_for_function(
        "prev => { const b = document.querySelector('.wb-figure-box');"
        " const f = b && b.querySelector('.main-svg'); if (!f) return false;"
        " const w = b.getBoundingClientRect().width;"
        " return Math.abs(w - prev) > 50 && Math.abs(f.getBoundingClientRect().width - w) < 2;"
        " }", arg=previous, timeout=30_000)
    width, right = page.evaluate(
        "() => { const b = document.querySelector('.wb-figure-box');"
        " const p = document.querySelector('.wb-plot');"
        " const rights = [...p.querySelectorAll('.nsewdrag')].map("
        "   r => r.getBoundingClientRect().right - p.getBoundingClientRect().left);"
        " return [b.getBoundingClientRect().width, Math.max(...rights)]; }")
    assert right > 0.85 * width, (width, right)  # the subplots are laid out over all of it
    return float(width)


@pytest.mark.timeout(300)
def test_tune_from_a_cell_and_the_dropdown_drive_one_truth_and_the_figure_follows_width(
        lab_server: LabServer, browser_page: Any, artifacts: Path) -> None:
    page = browser_page
    _write_panel_notebook(lab_server.root)
    start = time.monotonic()
    _run_all(page, lab_server, PANEL_NOTEBOOK)
    page.wait_for_selector(".wb-panel .wb-figure-box .js-plotly-plot", state="attached",
                           timeout=90_000)
    page.locator(".wb-figure-box .gtitle").first.wait_for(state="attached", timeout=60_000)
    _wait_text(page, ".wb-figure-empty", "no trial stored for small bf16")  # nothing yet
    print(f"panel drawn after {time.monotonic() - start:.1f} s")
    assert _text(page, ".wb-header-shape") == "small"

    # a tune from a cell switches the panel (dropdown, header, charts, progress) to it
    _type_and_run_new_cell(page, f'report = wb.tune("{TUNED_SHAPE}", "bf16", "random", '
                                 "budget=8)")
    try:
        _wait_text(page, ".wb-status", "finished")
        _wait_text(page, ".wb-header-shape", TUNED_SHAPE)
        _wait_text(page, ".wb-figure-box .gtitle", f"· {TUNED_SHAPE} · bf16")
        _wait_text(page, ".wb-progress-label", " / 8")  # the stored trials of the budget of 8
    except Exception:
        page.locator(".wb-panel").screenshot(path=str(artifacts / "failure-truth-tune.png"))
        raise AssertionError(
            "the panel did not follow the tune from code; header: " + _text(page, ".wb-header")
            + "; title: " + _text(page, ".wb-figure-box .gtitle") + "; progress: "
            + _text(page, ".wb-progress-label")) from None
    assert page.locator(".wb-shape select").input_value() == TUNED_SHAPE
    version = _text(page, ".wb-version")
    assert version.startswith("silu_and_mul-")
    assert version in _text(page, ".wb-figure-box .gtitle")

    # the header, progress and charts (hidden: no trial) follow the dropdown
    page.locator(".wb-shape select").select_option(DROPDOWN_SHAPE)
    _wait_text(page, ".wb-header-shape", DROPDOWN_SHAPE)
    _wait_text(page, ".wb-progress-label", "0 stored")
    # no trial for this problem: the charts are hidden behind a line that says so
    _wait_text(page, ".wb-figure-empty", f"no trial stored for {DROPDOWN_SHAPE} bf16")
    page.locator(".wb-figure-box").wait_for(state="hidden", timeout=30_000)
    assert _text(page, ".wb-eta") == ""  # no stale "running, ETA" of another problem
    page.locator(".wb-panel").screenshot(path=str(artifacts / "panel-truth.png"))
    page.locator(".wb-shape select").select_option(TUNED_SHAPE)
    page.locator(".wb-figure-box").wait_for(state="visible", timeout=30_000)
    _wait_text(page, ".wb-figure-box .gtitle", f"· {TUNED_SHAPE} · bf16")
    assert _text(page, ".wb-figure-empty") == ""

    # the figure is as wide as its box in the panel, at two window widths and after the
    # side bar is closed (the notebook widens with no window resize)
    at_1400 = _settled_width(page, -1000)
    page.locator(".wb-figure-box").screenshot(path=str(artifacts / "figure-1400.png"))
    page.set_viewport_size({"width": 1000, "height": 2400})
    at_1000 = _settled_width(page, at_1400)
    page.locator(".wb-figure-box").screenshot(path=str(artifacts / "figure-1000.png"))
    page.keyboard.press("Escape")
    page.keyboard.press("Control+b")  # JupyterLab: toggle the left side bar
    no_sidebar = _settled_width(page, at_1000)
    print(f"figure width at 1400 px: {at_1400}, at 1000 px: {at_1000}, "
          f"side bar closed: {no_sidebar}")
    assert at_1400 - at_1000 > 300 and no_sidebar > at_1000 + 150
    page.locator(".wb-panel").screenshot(path=str(artifacts / "panel-truth-narrow.png"))
    print(f"truth test took {time.monotonic() - start:.1f} s")
