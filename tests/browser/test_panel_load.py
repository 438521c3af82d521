"""Pause and Stop under load: a CPU hog on every core beside JupyterLab, the kernel and
Chromium, a search replayed at the recorded GPU's pace (so it runs as long as it would live),
and the clicks must take effect within 1 s: the status says so and the progress stops.

The measured latencies are appended to ``$WORKBENCH_ARTIFACTS/panel_latency.jsonl``;
``benchmarks/bench_panel_latency.py`` runs this test repeatedly and tabulates them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_panel_browser import PANEL_NOTEBOOK, _run_all, _write_panel_notebook

pytestmark = [
    pytest.mark.browser, pytest.mark.replay,
    # Opt-in (benchmarks/bench_panel_latency.py sets it): on 2026-11-24, beside a CPU hog on
    # each of 2 cores, the status did not show "paused" within 30 s of the click, so this
    # fails today; it stays out of the default run until Pause/Stop meet the 1 s target.
    pytest.mark.skipif(os.environ.get("WORKBENCH_LOAD_TEST") != "1",
                       reason="opt-in load check (WORKBENCH_LOAD_TEST=1); fails today, see "
                              "benchmarks/results/panel_latency.json"),
]

LIMIT_S = 1.0  # the target: a click takes effect within 1 s


@pytest.fixture(scope="module", autouse=True)
def recorded_pace() -> Iterator[None]:
    """Replays answer at the recording's pace (set before the module's JupyterLab starts)."""
    before = os.environ.get("WORKBENCH_REPLAY_PACE")
    os.environ["WORKBENCH_REPLAY_PACE"] = "recorded"
    yield
    if before is None:
        os.environ.pop("WORKBENCH_REPLAY_PACE", None)
    else:
        os.environ["WORKBENCH_REPLAY_PACE"] = before


@pytest.fixture
def cpu_hog() -> Iterator[int]:
    """One busy process per core for the length of the test."""
    count = os.cpu_count() or 2
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield count
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


def _done(page: Any) -> int:
    text = page.locator(".wb-progress .widget-label").inner_text()
    match = re.match(r"\s*(\d+)", text)
    return int(match.group(1)) if match else 0


def _status(page: Any) -> str:
    return str(page.locator(".wb-status").inner_text())


def _time_until(page: Any, predicate: str, timeout_s: float = 30.0) -> float:
    """Seconds until the JS ``predicate`` holds, polled in the page (no Python round trips)."""
    start = time.monotonic()
    page.wait_for_function(predicate, timeout=timeout_s * 1000, polling=50)
    return time.monotonic() - start


def _steady(page: Any, settle_s: float = 1.5) -> bool:
    first = _done(page)
    time.sleep(settle_s)
    return _done(page) == first


@pytest.mark.timeout(300)
def test_pause_and_stop_take_effect_within_a_second_under_load(
        lab_server: Any, browser_page: Any, artifacts: Path, cpu_hog: int) -> None:
    page = browser_page
    _write_panel_notebook(lab_server.root)
    _run_all(page, lab_server, PANEL_NOTEBOOK, timeout_ms=180_000)
    page.wait_for_selector(".wb-panel .wb-figure-box .js-plotly-plot", timeout=90_000)
    page.locator(".wb-tabs .lm-TabBar-tab", has_text="Search").click()
    page.locator(".wb-strategy select").select_option("random")
    page.locator(".wb-budget input").fill("100000")
    page.locator(".wb-budget input").press("Enter")
    page.locator(".wb-launch").click()
    page.wait_for_function(
        "() => { const d = document.querySelector('.wb-progress .widget-label');"
        " return d && parseInt(d.textContent) >= 20; }", timeout=120_000)
    page.locator(".wb-pause").click()
    page.locator(".wb-panel").screenshot(path=str(artifacts / "panel-pause-clicked-under-load.png"))
    pause_s = _time_until(page, "() => /paused/.test(document.querySelector('.wb-status')"
                                ".textContent)")
    held = _steady(page)
    page.locator(".wb-pause").click()  # Resume
    resume_s = _time_until(page, "() => /running/.test(document.querySelector('.wb-status')"
                                 ".textContent)")
    before = _done(page)
    page.wait_for_function(
        f"() => parseInt(document.querySelector('.wb-progress .widget-label').textContent)"
        f" > {before}", timeout=60_000)
    page.locator(".wb-stop").click()
    stop_s = _time_until(page, "() => /stopp|finished/.test(document.querySelector("
                               "'.wb-status').textContent)")
    stopped = _steady(page)
    record = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "hog_processes": cpu_hog,
              "cpus": os.cpu_count(), "pause_s": round(pause_s, 3),
              "resume_s": round(resume_s, 3), "stop_s": round(stop_s, 3),
              "held_after_pause": held, "held_after_stop": stopped,
              "final_status": _status(page), "evaluated": _done(page)}
    with (artifacts / "panel_latency.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
    print(record)
    page.locator(".wb-panel").screenshot(path=str(artifacts / "panel-after-stop-under-load.png"))
    assert held and stopped, record
    assert pause_s <= LIMIT_S and stop_s <= LIMIT_S, record
