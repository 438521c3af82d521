"""The panel in a real JupyterLab and a real Chromium (marker ``browser``)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
LabServer = Any  # conftest.LabServer: url, token, root, notebook_url(name)

pytestmark = [pytest.mark.browser]

PANEL_NOTEBOOK = "panel-only.ipynb"


def _write_panel_notebook(root: Path, environ: dict[str, str] | None = None) -> None:
    """A two-cell notebook: the quickstart's setup cell, then ``wb.panel()``; ``environ``:
    variables the setup cell sets first (the tier's one JupyterLab starts every kernel with
    its own environment)."""
    import nbformat
    import nbformat.v4 as nbf

    quick = nbformat.read(ROOT / "notebooks" / "01-quickstart.ipynb", as_version=4)
    setup = next(c.source for c in quick.cells if c.cell_type == "code")
    if environ:
        setup = f"import os\nos.environ.update({environ!r})\n{setup}"
    nb = nbf.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbf.new_code_cell(setup), nbf.new_code_cell(
        'wb = Workbench(KERNELS / "silu_and_mul", store=STORE)\nwb.panel()')]
    nbformat.write(nb, root / PANEL_NOTEBOOK)


def _run_all(page: Any, server: LabServer, name: str, timeout_ms: int = 90_000) -> None:
    page.goto(server.notebook_url(name))
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=timeout_ms)
    status = page.locator(".jp-StatusBar-Widget", has_text="| Idle")
    status.first.wait_for(timeout=timeout_ms)
    page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt").first.click()
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator(".lm-Menu-item:visible:not(.lm-mod-disabled)",
                 has_text="Run All Cells").first.click()
    # Every cell ran: no prompt left at [ ] or [*].
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        prompts = page.locator(".jp-Notebook .jp-Cell.jp-CodeCell .jp-InputPrompt").all_inner_texts()
        if prompts and all(re.search(r"\[\d+\]", p) for p in prompts):
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"cells did not all run: {prompts}")
        time.sleep(0.25)


def _space_size(page: Any) -> int:
    text = page.locator(".wb-space-size b").first.inner_text()
    return int(text.replace(",", ""))


@pytest.mark.timeout(180)
def test_panel_renders_and_validates_ranges(lab_server: LabServer, browser_page: Any,
                                            artifacts: Path) -> None:
    page = browser_page
    _write_panel_notebook(lab_server.root)
    start = time.monotonic()
    _run_all(page, lab_server, PANEL_NOTEBOOK)
    print(f"notebook ran in {time.monotonic() - start:.1f} s")
    page.wait_for_selector(".wb-panel", timeout=60_000)
    assert "silu_and_mul" in page.locator(".wb-header").inner_text()
    try:
        page.wait_for_selector(".wb-figure-box .js-plotly-plot", state="attached",
                               timeout=60_000)
    except Exception:
        page.screenshot(path=str(artifacts / "failure-figure.png"))
        raise AssertionError("figure did not render; console:\n"
                             + "\n".join(page.wb_console[-30:])) from None
    # plotly marks the div .js-plotly-plot before it draws the title: wait for the title.
    page.locator(".wb-figure-box .gtitle").first.wait_for(state="attached", timeout=60_000)
    # nothing stored yet: once drawn, the empty charts are hidden behind a line saying so
    page.locator(".wb-figure-empty", has_text="no trial stored for").wait_for(timeout=60_000)
    print(f"figure visible after {time.monotonic() - start:.1f} s")
    page.locator(".wb-tabs .lm-TabBar-tab", has_text="Template").click()
    page.wait_for_selector(".wb-diff", timeout=10_000)
    before = _space_size(page)
    box = page.locator(".wb-param-BLOCK_THREADS-max input")
    box.fill("256")
    page.wait_for_function(
        "b => { const e = document.querySelector('.wb-space-size b');"
        " return e && e.textContent.replace(/,/g, '') !== String(b); }", arg=before,
        timeout=15_000)
    after = _space_size(page)
    assert 0 < after < before
    box.fill("100")
    err = page.locator(".wb-space-error")
    err.wait_for(timeout=15_000)
    assert "power of two" in err.inner_text()
    box.fill("1024")
    page.wait_for_selector(".wb-space-size", timeout=15_000)
    assert _space_size(page) == before
    page.locator(".wb-panel").screenshot(path=str(artifacts / "panel-template.png"))
    page.locator(".wb-tabs .lm-TabBar-tab", has_text="Search").click()
    page.locator(".wb-panel").screenshot(path=str(artifacts / "panel-search-idle.png"))
    print(f"panel test took {time.monotonic() - start:.1f} s")


def _progress(page: Any) -> tuple[int | None, int]:
    """The progress bar's one budget wording, "N more, M stored" (or "space exhausted: M
    stored, ..."): (N, M), N None when the space is exhausted."""
    text = page.locator(".wb-progress-label").inner_text().strip()
    match = re.fullmatch(r"(\d+) more, (\d+) stored", text)
    if match:
        return int(match.group(1)), int(match.group(2))
    match = re.match(r"space exhausted: (\d+) stored", text)
    assert match, f"progress label {text!r}"
    return None, int(match.group(1))


def _has_recording() -> bool:
    return any((ROOT / "sample_kernels" / "silu_and_mul" / "recordings").glob("*.json"))


@pytest.mark.replay
@pytest.mark.timeout(240)
def test_quickstart_launch_and_stop_on_replay(lab_server: LabServer, browser_page: Any,
                                              artifacts: Path) -> None:
    if not _has_recording():
        pytest.skip("no recording under sample_kernels/silu_and_mul/recordings yet: Launch "
                    "replays real H100 measurements and none are committed")
    page = browser_page
    start = time.monotonic()
    _run_all(page, lab_server, "01-quickstart.ipynb", timeout_ms=150_000)
    print(f"quickstart ran in {time.monotonic() - start:.1f} s")
    page.wait_for_selector(".wb-panel .wb-figure-box .js-plotly-plot", state="attached",
                           timeout=60_000)
    header = page.locator(".wb-header")
    assert "replay of" in header.inner_text() or "(live)" in header.inner_text()
    page.locator(".wb-tabs .lm-TabBar-tab", has_text="Search").click()
    # The notebook's own tune (decode, budget 24) left the panel "finished" with a full
    # progress bar: every wait below is for something only this Launch can cause.
    page.locator(".wb-budget input").fill("100000")
    page.locator(".wb-budget input").press("Enter")
    page.locator(".wb-launch").click()
    launched = time.monotonic()
    # Launch is answered at once: the progress bar says how many more the new budget
    # measures beside the trials already stored; the search's first measured trial moves it.
    page.wait_for_function(
        "() => { const m = /^(\\d+) more, (\\d+) stored$/.exec("
        "document.querySelector('.wb-progress-label').textContent);"
        " return m && +m[1] + +m[2] === 100000; }", timeout=60_000)
    at_launch = _progress(page)
    page.wait_for_function(
        "n => { const m = /(\\d+) stored/.exec("
        "document.querySelector('.wb-progress-label').textContent); return m && +m[1] > n; }",
        arg=at_launch[1], timeout=60_000)
    stop = page.locator(".wb-stop")
    if stop.is_enabled():  # a replay of this 756-config space can finish within seconds
        try:
            stop.click(timeout=5_000)
        except Exception:  # the search ended between the check and the click: Stop disabled
            assert not stop.is_enabled(), "Stop stayed enabled but could not be clicked"
    # Stop is answered at once ("stopping"); the count is final once the search has ended.
    page.wait_for_function(
        "() => /finished/.test(document.querySelector('.wb-status').textContent)",
        timeout=60_000)
    page.wait_for_selector(".wb-trials table", timeout=60_000)
    try:
        page.wait_for_function(
            "() => [...document.querySelectorAll('.wb-figure-box .scatterlayer path.js-line')]"
            ".some(p => (p.getAttribute('d') || '').length > 10)", timeout=60_000)
    except Exception:
        page.locator(".wb-panel").screenshot(path=str(artifacts / "failure-lines.png"))
        raise AssertionError("no line drawn; message: "
                             + page.locator(".wb-message").inner_text() + "\nconsole:\n"
                             + "\n".join(page.wb_console[-30:])) from None
    print(f"charts filled {time.monotonic() - launched:.1f} s after Launch")
    # the end on screen: stopped or out of configs; progress within the budget and moved on;
    # the stored count is the table's
    status = page.locator(".wb-status").inner_text()
    assert re.fullmatch(r"finished \((stopped|exhausted|budget)\)", status), status
    more, stored = _progress(page)
    assert at_launch[1] < stored <= 100000, (at_launch, stored)
    if status == "finished (exhausted)":
        assert more is None  # the bar says the space is exhausted (and is full)
    else:
        assert more is not None and more + stored == 100000, (more, stored)
    caption = page.locator(".wb-trials-caption").inner_text()
    in_all = int(re.search(r"\((\d+) in all\)", caption).group(1))  # type: ignore[union-attr]
    assert in_all >= stored, (stored, caption)  # the table also holds pruned configs
    page.locator(".wb-panel").screenshot(path=str(artifacts / "panel-search-replay.png"))
    print(f"quickstart test took {time.monotonic() - start:.1f} s")
