"""Dask's dashboard inside JupyterLab (issue 20): the link the panel shows for a cluster,
pasted into dask-labextension's sidebar (installed by the ``ui`` extra), lists the
dashboard's panes, and one opens inside the lab with its plots drawn.

A real LocalCluster of one CPU worker serves the dashboard (bokeh, from the ``cluster``
extra); nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

LabServer = Any  # conftest.LabServer

pytestmark = [pytest.mark.browser]


@pytest.fixture(scope="module")
def dashboard_link() -> Iterator[str]:
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("bokeh")
    # The link names loopback: the browser's context aborts every other host.
    with dask.config.set({"distributed.dashboard.link": "{scheme}://127.0.0.1:{port}/status"}):
        cluster = distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                                           dashboard_address="127.0.0.1:0")
        client = distributed.Client(cluster)
        try:
            yield str(client.dashboard_link)
        finally:
            client.close()
            cluster.close()


def test_panel_link_opens_the_dashboard_in_the_lab(lab_server: LabServer, browser_page: Any,
                                                   dashboard_link: str,
                                                   artifacts: Path) -> None:
    from workbench.ui.devices import devices_html

    # The link exactly as the panel draws it under the search tab on a cluster.
    shown = devices_html([], dashboard_link)
    href = re.search(r'href="([^"]+)"', shown)
    assert href is not None, shown
    assert href.group(1) == dashboard_link

    page = browser_page
    page.goto(f"{lab_server.url}/lab?reset&token={lab_server.token}")
    page.wait_for_selector(".jp-LabShell", timeout=60_000)
    tab = page.locator('.lm-TabBar-tab[data-id="dask-dashboard-launcher"]')
    tab.wait_for(timeout=30_000)  # dask-labextension is installed and loaded
    tab.click()
    launcher = page.locator("#dask-dashboard-launcher")
    assert "Dashboard not connected" in launcher.inner_text()
    box = launcher.locator(".dask-URLInput-wrapper input")
    box.fill(href.group(1))
    box.press("Enter")
    items = launcher.locator(".dask-DashboardListing-item button")
    items.first.wait_for(timeout=60_000)
    labels = set(items.evaluate_all("els => els.map(e => e.value)"))  # text is upper-cased by CSS
    assert {"Progress", "Task Stream", "Workers"} <= labels, labels
    launcher.locator('.dask-DashboardListing-item button[value="Progress"]').click()
    frame = page.locator('iframe[src$="/individual-progress"]')
    frame.wait_for(timeout=60_000)
    assert frame.get_attribute("src", timeout=5_000).startswith(dashboard_link[:-len("/status")])
    # Bokeh drew the pane inside the lab (its document root appears in the frame).
    page.frame_locator('iframe[src$="/individual-progress"]').locator(
        ".bk-Figure, .bk-Canvas, canvas").first.wait_for(timeout=60_000)
    page.screenshot(path=str(artifacts / "dask_dashboard_in_lab.png"))
