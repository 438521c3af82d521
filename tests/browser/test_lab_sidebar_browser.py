"""The kernels sidebar at its default width in a real JupyterLab and Chromium (issue 30):
shape and dtype on screen (not only in tooltips), the speedup never clipped, sessions
without trials folded under one line, the last index drawn at once on the next page load
(even while the server does not answer) and "Open panel" answering the click at once.
At 1280 px and 700 px."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
LabServer = Any  # conftest.LabServer: url, token, root (this test's folder), lab_url(name)

pytestmark = [pytest.mark.browser]

EMPTY_SESSIONS = 3


def _stored(server: LabServer) -> None:
    """One replayed tune of silu_and_mul decode/bf16 and three sessions that measured
    nothing, in the server's store."""
    from workbench import Workbench
    from workbench.store.sqlite import SQLiteStore

    folder = ROOT / "sample_kernels" / "silu_and_mul"
    store_path = server.root / "workbench.sqlite"
    Workbench(folder, store=store_path).tune("decode", "bf16", budget=12, confirm=0)
    store = SQLiteStore(store_path)
    try:
        for _ in range(EMPTY_SESSIONS):
            store.create_session("silu_and_mul")
    finally:
        store.close()


def _open_sidebar(page: Any) -> Any:
    tab = page.locator('.lm-TabBar-tab[data-id="workbench-kernels"]')
    tab.wait_for(timeout=60_000)
    if "lm-mod-current" not in (tab.get_attribute("class") or ""):
        tab.click()
    return page.locator("#workbench-kernels")


def _geometry(page: Any) -> dict[str, Any]:
    """Where the first silu_and_mul session's cells sit against the sidebar's box."""
    return page.evaluate("""() => {
        const side = document.querySelector('#workbench-kernels');
        const kernel = side.querySelector('.wb-lab-kernel[data-kernel="silu_and_mul"]');
        const row = kernel.querySelector('.wb-lab-session');
        const box = e => { const r = e.getBoundingClientRect();
                           return {left: r.left, right: r.right, width: r.width}; };
        const clipped = e => e.scrollWidth > e.clientWidth + 1;
        // checkVisibility: false inside a closed <details> (content-visibility: hidden)
        const shown = e => e.checkVisibility({visibilityProperty: true})
                           && e.getBoundingClientRect().width > 0;
        const problem = row.querySelector('.wb-lab-problem');
        return {
            sidebar: box(side), overflowX: side.scrollWidth - side.clientWidth,
            shape: row.querySelector('.wb-lab-shape').textContent,
            dtype: row.querySelector('.wb-lab-dtype').textContent,
            problemShown: shown(problem), problemClipped: clipped(problem),
            best: box(row.querySelector('.wb-lab-best')),
            speedup: box(row.querySelector('.wb-lab-speedup')),
            speedupText: row.querySelector('.wb-lab-speedup').textContent,
            speedupClipped: clipped(row.querySelector('.wb-lab-speedup')),
            rowsShown: [...kernel.querySelectorAll('.wb-lab-session')].filter(shown).length,
            rows: kernel.querySelectorAll('.wb-lab-session').length,
            fold: (kernel.querySelector('.wb-lab-empty-count') || {}).textContent || null,
        };
    }""")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("width", [1280, 700])
def test_sidebar_is_readable_at_its_default_width(lab_server: LabServer, browser_page: Any,
                                                  artifacts: Path, width: int) -> None:
    _stored(lab_server)
    from workbench.ui.lab_index import kernel_index

    index = kernel_index([ROOT / "sample_kernels"], lab_server.root,
                         lab_server.root / "workbench.sqlite")
    silu = next(k for k in index["kernels"] if k["name"] == "silu_and_mul")
    measured = [s for s in silu["sessions"] if s["trials"]]
    assert len(measured) == 1 and len(silu["sessions"]) == 1 + EMPTY_SESSIONS
    speedup_text = f"{measured[0]['speedup']:.2f}×"  # the server's own number, as shown

    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(lab_server.lab_url())
    page.wait_for_selector(".jp-LabShell", timeout=60_000)
    sidebar = _open_sidebar(page)
    page.locator('#workbench-kernels[data-source="server"] '
                 '.wb-lab-kernel[data-kernel="silu_and_mul"] .wb-lab-session').first.wait_for(
        timeout=60_000)
    got = _geometry(page)
    page.screenshot(path=str(artifacts / f"lab-sidebar-{width}.png"))
    assert got["sidebar"]["width"] < 400, got  # the default width, not a widened sidebar
    assert (got["shape"], got["dtype"]) == ("decode", "bf16")
    assert got["problemShown"] and not got["problemClipped"], got
    assert got["speedupText"] == speedup_text
    assert not got["speedupClipped"] and got["speedup"]["right"] <= got["sidebar"]["right"], got
    assert got["best"]["right"] <= got["speedup"]["left"], got
    assert got["overflowX"] <= 0, got  # no horizontal scrollbar
    # the three sessions without trials: one folded line, their rows not on screen
    assert got["fold"] == f"{EMPTY_SESSIONS} sessions without trials", got
    assert got["rows"] == 1 + EMPTY_SESSIONS and got["rowsShown"] == 1, got
    sidebar.locator(".wb-lab-kernel[data-kernel='silu_and_mul'] .wb-lab-empty-count").click()
    assert _geometry(page)["rowsShown"] == 1 + EMPTY_SESSIONS


@pytest.mark.timeout(300)
def test_sidebar_draws_the_last_index_at_once_and_open_panel_answers(
        lab_server: LabServer, browser_page: Any, artifacts: Path) -> None:
    _stored(lab_server)
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 900})
    started = time.monotonic()
    page.goto(lab_server.lab_url())
    page.wait_for_selector(".jp-LabShell", timeout=60_000)
    _open_sidebar(page)
    page.locator('#workbench-kernels[data-source="server"] .wb-lab-kernel').first.wait_for(
        timeout=60_000)
    first_s = time.monotonic() - started
    # The next load while the server does not answer the index: the last one is drawn.
    page.route("**/workbench/kernels*", lambda route: route.abort())
    try:
        page.reload()
        page.wait_for_selector(".jp-LabShell", timeout=60_000)
        sidebar = _open_sidebar(page)
        page.locator('#workbench-kernels[data-source="cache"] '
                     '.wb-lab-kernel[data-kernel="silu_and_mul"] .wb-lab-session').first.wait_for(
            timeout=30_000)
        assert sidebar.locator(".wb-lab-kernel").count() >= 3
        page.locator("#workbench-kernels .wb-lab-status.wb-lab-error").wait_for(timeout=30_000)
    finally:
        page.unroute("**/workbench/kernels*")
    # A refused Open panel: its message stays beside the kernel through a refresh.
    page.route("**/workbench/notebook*", lambda route: route.fulfill(
        status=400, content_type="application/json",
        body='{"message": "refused for this test", "details": {}}'))
    try:
        silu = sidebar.locator(".wb-lab-kernel[data-kernel='silu_and_mul']")
        silu.locator(".wb-lab-open").click()
        error = silu.locator(".wb-lab-open-error")
        error.wait_for(state="visible", timeout=30_000)
        sidebar.locator(".wb-lab-refresh").click()
        page.locator('#workbench-kernels[data-source="server"]').wait_for(timeout=60_000)
        assert "refused for this test" in silu.locator(".wb-lab-open-error").inner_text()
    finally:
        page.unroute("**/workbench/notebook*")
    # A kernel below the server root opens; the button answers in the click's own task.
    shutil.copytree(ROOT / "sample_kernels" / "silu_and_mul", lab_server.root / "mykernel",
                    ignore=shutil.ignore_patterns("recordings"), dirs_exist_ok=True)
    mine = lab_server.path("mykernel")  # as the server names it: from its root
    sidebar.locator(".wb-lab-refresh").click()
    sidebar.locator(f".wb-lab-kernel[data-path='{mine}']").wait_for(timeout=60_000)
    clicked = time.monotonic()
    answer = page.evaluate("""path => {
        const button = document.querySelector(
            `#workbench-kernels .wb-lab-kernel[data-path="${path}"] .wb-lab-open`);
        button.click();
        return {text: button.textContent, disabled: button.disabled};
    }""", mine)
    assert answer == {"text": "Opening…", "disabled": True}, answer
    try:
        page.locator(".lm-TabBar-tab", has_text="tune-mykernel.ipynb").first.wait_for(
            timeout=60_000)
    except Exception:
        page.screenshot(path=str(artifacts / "failure-sidebar-open.png"))
        status = page.locator("#workbench-kernels").inner_text()
        raise AssertionError(f"no notebook tab; sidebar: {status}; console: "
                             f"{page.wb_console[-5:]}") from None
    tab_s = time.monotonic() - clicked
    page.screenshot(path=str(artifacts / "lab-sidebar-open.png"))
    print(f"sidebar: first index drawn {first_s:.1f} s after page load; "
          f"notebook tab {tab_s:.1f} s after Open panel")
