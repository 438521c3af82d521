"""One truth on screen and a figure that follows the panel's width, in a real JupyterLab and
a real Chromium (marker ``browser``): a tune typed into a cell while the panel is shown
switches the panel to what it ran; the header follows the shape dropdown; the figure's width
fills its box at two browser window widths and with the side bar closed; at 1280 px and at
700 px the charts' title is clear of the legend and no parallel-coordinates label overlaps
another (both plots drawn at the box's width); after Propose the editor's rows, the
header's version and the table's sort keys are the proposed template's."""

from __future__ import annotations

import contextlib
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


def _texts(page: Any, selector: str) -> list[str]:
    """The text of every element matching ``selector``, in document order."""
    return list(page.evaluate("s => [...document.querySelectorAll(s)].map(e => e.textContent)",
                              selector))


def _wait_text(page: Any, selector: str, expected: str, timeout_ms: int = 60_000) -> None:
    page.wait_for_function(
        "([s, t]) => { const e = document.querySelector(s);"
        " return e && e.textContent.includes(t); }", arg=[selector, expected],
        timeout=timeout_ms)


# What the drawn figures show, measured in Chromium: each plot's width against the box's,
# the chart title against the legend, and each parallel-coordinates label (rotated: its own
# box turned by its angle about the centre of its on-screen rectangle) against the others,
# the axes' top values, the title and the plot's edges. Separating-axis test for two convex
# quadrilaterals. "ok" when all is as it should be.
_LAYOUT_JS = """() => {
  const rect = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const quad = ([l, t, r, b]) => [[l, t], [r, t], [r, b], [l, b]];
  const turned = (e) => {
    const b = e.getBBox(), r = e.getBoundingClientRect();
    const m = (e.getAttribute('transform') || '').match(/rotate\\(([-0-9.e]+)/);
    const a = (m ? Number(m[1]) : 0) * Math.PI / 180, c = Math.cos(a), s = Math.sin(a);
    const cx = (r.left + r.right) / 2, cy = (r.top + r.bottom) / 2;
    return [[-1, -1], [1, -1], [1, 1], [-1, 1]].map(([u, v]) => {
      const x = u * b.width / 2, y = v * b.height / 2;
      return [cx + x * c - y * s, cy + x * s + y * c]; });
  };
  const apart = (P, Q) => {
    for (const poly of [P, Q]) for (let i = 0; i < poly.length; i++) {
      const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % poly.length];
      const on = (R) => R.map(([x, y]) => x * (y2 - y1) + y * (x1 - x2));
      const a = on(P), b = on(Q);
      if (Math.max(...a) <= Math.min(...b) + 0.5 || Math.max(...b) <= Math.min(...a) + 0.5) return true;
    }
    return false;
  };
  const box = Math.round(document.querySelector('.wb-figure-box').clientWidth);
  const plot = document.querySelector('.wb-plot'), par = document.querySelector('.wb-parcoords');
  const widths = [plot, par].map(d => {
    const f = d.querySelector('.main-svg');
    return [d._fullLayout && d._fullLayout.width, f && Math.round(f.getBoundingClientRect().width)];
  });
  const title = rect(plot.querySelector('.g-gtitle')), legend = rect(plot.querySelector('.legend'));
  const svg = rect(plot.querySelector('.main-svg'));
  const labels = [...par.querySelectorAll('text.axis-title')];
  const texts = [...labels.map(l => [l.textContent, turned(l)]),
                 ...[...par.querySelectorAll('text.axis-extent-top-text')]
                   .filter(t => t.textContent).map(t => [t.textContent, quad(rect(t))])];
  const overlaps = [];
  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++)
    if (!apart(texts[i][1], texts[j][1])) overlaps.push(texts[i][0] + ' / ' + texts[j][0]);
  const ptitle = quad(rect(par.querySelector('.g-gtitle')));
  const psvg = rect(par.querySelector('.main-svg'));
  const found = {
    width: box, plots_at: widths,
    title_hits_legend: !apart(quad(title), quad(legend)),
    title_inside: title[0] >= svg[0] && title[2] <= svg[2],
    legend_inside: legend[0] >= svg[0] - 1 && legend[2] <= svg[2] + 1 && legend[3] <= svg[3] + 1,
    labels: labels.length,
    label_overlaps: overlaps,
    labels_on_title: texts.filter(([, q]) => !apart(q, ptitle)).map(([t]) => t),
    labels_outside: texts.filter(([, q]) => q.some(([x, y]) =>
      x < psvg[0] - 1 || x > psvg[2] + 1 || y < psvg[1] - 1)).map(([t]) => t),
  };
  found.ok = widths.every(([layout, shown]) => layout === box && Math.abs(shown - box) < 2)
    && !found.title_hits_legend && found.title_inside && found.legend_inside
    && found.labels >= 3 && !overlaps.length && !found.labels_on_title.length
    && !found.labels_outside.length;
  return found;
}"""


def _assert_readable(page: Any, artifacts: Path, name: str) -> dict[str, Any]:
    """Both plots drawn at the box's width, no title under the legend, no parallel-
    coordinates label over another, over an axis' top value, over the title or past the
    plot's edge: waited for (a resize redraws both plots), then asserted on what is drawn."""
    with contextlib.suppress(Exception):  # a timeout: the assertions below say what is wrong
        page.wait_for_function(f"() => ({_LAYOUT_JS})().ok", timeout=30_000)
    page.locator(".wb-figure-box").screenshot(path=str(artifacts / f"{name}.png"))
    found: dict[str, Any] = page.evaluate(_LAYOUT_JS)
    print(name, found)
    assert all(layout == found["width"] and abs(shown - found["width"]) < 2
               for layout, shown in found["plots_at"]), found
    assert not found["title_hits_legend"] and found["title_inside"], found
    assert found["legend_inside"], found
    assert found["labels"] >= 3 and not found["label_overlaps"], found
    assert not found["labels_on_title"] and not found["labels_outside"], found
    assert found["ok"], found
    return found


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
        _wait_text(page, ".wb-progress-label", "0 more, 8 stored")  # the budget of 8, all stored
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

    # readable at 1280 px and at 700 px: title clear of the legend, parallel-coordinates
    # labels clear of each other, and the parallel coordinates as wide as the charts
    page.set_viewport_size({"width": 1280, "height": 2400})
    page.locator(".wb-parcoords-toggle").click()  # drawn on demand (a WebGL context each)
    wide = _assert_readable(page, artifacts, "figure-1280")
    page.set_viewport_size({"width": 700, "height": 2400})
    narrow = _assert_readable(page, artifacts, "figure-700")
    assert wide["width"] - narrow["width"] > 400, (wide["width"], narrow["width"])

    # Propose: the panel follows the adopted template (editor rows, header version, the
    # table's sort keys; no trial of it yet, so the charts say so)
    curated = _texts(page, ".wb-param-table code")
    page.locator(".wb-tabs .lm-TabBar-tab", has_text="Template").click()
    page.locator(".wb-propose").click()
    page.wait_for_function(
        "v => document.querySelector('.wb-version').textContent !== v", arg=version,
        timeout=60_000)
    page.wait_for_function(
        "old => { const now = [...document.querySelectorAll('.wb-param-table code')]"
        ".map(e => e.textContent); return now.length > 0 && now.join() !== old.join(); }",
        arg=curated, timeout=30_000)
    proposed = _texts(page, ".wb-param-table code")
    assert "proposed by" in _text(page, ".wb-message"), _text(page, ".wb-message")
    page.locator(".wb-tabs .lm-TabBar-tab", has_text="Search").click()
    _wait_text(page, ".wb-figure-empty", f"no trial stored for {TUNED_SHAPE} bf16")
    sort_keys = _texts(page, ".wb-trials-sort option")
    assert sort_keys == ["median_us", "trial", *proposed], (sort_keys, proposed)
    assert set(proposed) != set(curated), proposed
    print(f"truth test took {time.monotonic() - start:.1f} s")
