"""Five panels open on one page (issue 30, items 1, 4 and 6), at 1280 px and 700 px:
every chart keeps its data drawn (SVG traces; no "Too many active WebGL contexts"), the
parallel coordinates are drawn on demand and never lie over the trial table's filter row,
the trial filter applies on Enter, and at 1280 px the table's status, median, speedup and
reason columns are on screen with no horizontal scrollbar on the panel."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from test_panel_browser import _run_all

ROOT = Path(__file__).resolve().parents[2]
LabServer = Any
pytestmark = [pytest.mark.browser]
NOTEBOOK = "five-panels.ipynb"
PANELS = 5


def _write_notebook(root: Path) -> None:
    import nbformat
    import nbformat.v4 as nbf

    quick = nbformat.read(ROOT / "notebooks" / "01-quickstart.ipynb", as_version=4)
    setup = next(c.source for c in quick.cells if c.cell_type == "code")
    nb = nbf.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbf.new_code_cell(setup), nbf.new_code_cell(
        'wb = Workbench(KERNELS / "silu_and_mul", store=STORE)\n'
        'report = wb.tune("small", "bf16", "random", budget=12)')]
    nb.cells += [nbf.new_code_cell("wb.panel()") for _ in range(PANELS)]
    nbformat.write(nb, root / NOTEBOOK)


_CHARTS_JS = """() => [...document.querySelectorAll('.wb-panel')].map(p => {
  const plot = p.querySelector('.wb-plot');
  const par = p.querySelector('.wb-parcoords');
  const filter = p.querySelector('.wb-trials-controls');
  const r = (e) => e.getBoundingClientRect();
  const pr = r(par), fr = r(filter);
  const overlaps = pr.height > 0 && pr.bottom > fr.top && pr.top < fr.bottom;
  return {points: plot ? plot.querySelectorAll('.scatterlayer .point').length : 0,
          gl: plot ? plot.querySelectorAll('canvas').length : -1,
          parcoords_h: pr.height, parcoords_shown: getComputedStyle(par).display !== 'none',
          parcoords_over_filter: overlaps};
})"""

_COLUMNS_JS = """() => [...document.querySelectorAll('.wb-panel')].map(p => {
  const t = p.querySelector('.wb-trials-table');
  if (!t) return null;
  const heads = [...t.querySelectorAll('tr:first-child th')];
  const edge = p.getBoundingClientRect().right;
  const want = ['status', 'median µs', 'speedup', 'reason'];
  const cols = heads.filter(h => want.includes(h.textContent));
  return {found: cols.map(h => h.textContent),
          visible: cols.every(h => h.getBoundingClientRect().right <= edge + 1),
          scrollbar: p.scrollWidth > p.clientWidth + 1,
          wide: [...p.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right > edge + 1
                   && e.getClientRects().length).slice(0, 4)
                 .map(e => e.tagName + '.' + String(e.className).slice(0, 60) + ' '
                      + Math.round(e.getBoundingClientRect().right - edge))};
})"""


def _check_charts(page: Any, console: list[str], width: int, artifacts: Path) -> None:
    page.set_viewport_size({"width": width, "height": 2400})
    deadline = time.monotonic() + 90
    while True:
        found = page.evaluate(_CHARTS_JS)
        if len(found) == PANELS and all(f["points"] > 0 for f in found):
            break
        if time.monotonic() > deadline:
            page.screenshot(path=str(artifacts / f"five-panels-{width}.png"), full_page=True)
            raise AssertionError(f"charts without points at {width} px: {found}")
        time.sleep(0.5)
    print(width, found)
    assert all(f["gl"] == 0 for f in found), found  # SVG charts: no WebGL canvas
    assert not any(f["parcoords_over_filter"] for f in found), found
    assert all(f["parcoords_h"] > 0 or not f["parcoords_shown"] for f in found), found
    assert not [m for m in console if "WebGL contexts" in m], console[-20:]


@pytest.mark.timeout(420)
def test_five_panels_keep_their_charts_and_a_usable_table(
        lab_server: LabServer, browser_page: Any, artifacts: Path) -> None:
    page = browser_page
    console: list[str] = page.wb_console
    _write_notebook(lab_server.root)
    page.set_viewport_size({"width": 1280, "height": 2400})
    _run_all(page, lab_server, NOTEBOOK, timeout_ms=180_000)
    page.wait_for_function(f"() => document.querySelectorAll('.wb-panel').length === {PANELS}",
                           timeout=120_000)
    _check_charts(page, console, 1280, artifacts)

    # the parallel coordinates of one panel, on demand: drawn, and clear of the filter row
    first = page.locator(".wb-panel").first
    first.locator(".wb-parcoords-toggle").click()
    page.wait_for_function(
        "() => document.querySelector('.wb-panel .wb-parcoords .main-svg') !== null",
        timeout=60_000)
    _check_charts(page, console, 1280, artifacts)

    # at 1280 px the columns that matter are on screen, no horizontal scrollbar
    columns = page.evaluate(_COLUMNS_JS)
    print(columns)
    assert all(c and c["found"] == ["status", "median µs", "speedup", "reason"]
               for c in columns), columns
    assert all(c["visible"] and not c["scrollbar"] for c in columns), columns
    page.screenshot(path=str(artifacts / "five-panels-1280.png"))

    # the filter applies on Enter (no blur)
    caption = first.locator(".wb-trials-caption")
    before = caption.inner_text()
    box = first.locator(".wb-trials-filter")
    box.fill("trial <= 2")
    box.press("Enter")
    page.wait_for_function(
        "b => { const c = document.querySelector('.wb-panel .wb-trials-caption');"
        " return c && c.textContent !== b; }", arg=before, timeout=30_000)
    assert box.evaluate("e => e === document.activeElement")  # applied without a blur
    assert "of 2 matching" in caption.inner_text() or "of 1 matching" in caption.inner_text()

    _check_charts(page, console, 700, artifacts)
    page.screenshot(path=str(artifacts / "five-panels-700.png"))
