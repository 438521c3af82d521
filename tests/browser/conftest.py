"""A real JupyterLab on loopback and a real Debian Chromium driven by Playwright.

Needs ``apt-get install -y chromium`` (never ``playwright install``). Every request that is
not to 127.0.0.1 is aborted, so the test proves the panel works offline.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(os.environ.get("WORKBENCH_ARTIFACTS", Path(__file__).parent / "artifacts"))


@dataclass(frozen=True)
class LabServer:
    url: str
    token: str
    root: Path

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/lab/tree/{name}?reset&token={self.token}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write_settings(settings: Path) -> None:
    files = {
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
            {"fetchNews": "false", "checkForUpdates": False},
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    }
    for rel, data in files.items():
        path = settings / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")


def _install_lab_extension(config: Path, data: Path) -> None:
    """This checkout's JupyterLab extension, as pip installs it (tests/test_lab_extension.py
    checks the wheel): the prebuilt labextension and the server extension's config."""
    built = ROOT / "extensions" / "workbench-lab" / "labextension"
    assert (built / "package.json").is_file(), f"no built extension at {built}: npm run build"
    shutil.copytree(built, data / "labextensions" / "kernel-workbench-lab")
    server_d = config / "jupyter_server_config.d"
    server_d.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "jupyter-config" / "kernel-workbench.json", server_d)


def lab_environment(base: Path, root: Path, store: Path) -> tuple[dict[str, str], str, int]:
    """(environment, token, port) of a JupyterLab serving ``root`` like a user's: its own
    config, data, runtime, settings and workspace folders under ``base``, this checkout's
    extension installed, the notebooks copied into ``root``, the sample kernels listed and
    ``store`` as the workbench store (benchmarks/panel/bench_lab_browser.py uses it too)."""
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        shutil.copy(nb, root / nb.name)
    dirs = {name: base / name for name in ("config", "data", "runtime", "settings", "workspaces")}
    for d in dirs.values():
        d.mkdir()
    _write_settings(dirs["settings"])
    _install_lab_extension(dirs["config"], dirs["data"])
    env = {**os.environ,
           "JUPYTER_CONFIG_DIR": str(dirs["config"]), "JUPYTER_DATA_DIR": str(dirs["data"]),
           "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
           "JUPYTERLAB_SETTINGS_DIR": str(dirs["settings"]),
           "JUPYTERLAB_WORKSPACES_DIR": str(dirs["workspaces"]),
           "WORKBENCH_KERNELS": str(ROOT / "sample_kernels"),
           "WORKBENCH_STORE": str(store),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("WORKBENCH_MODEL", None)
    return env, secrets.token_hex(16), _free_port()


#: Headless Debian Chromium with nothing that reaches past loopback on its own.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic", "--disable-dev-shm-usage"]
START_TIMEOUT_S = 180.0  # a loaded 2-core machine: JupyterLab took over 60 s to answer
LAUNCH_TIMEOUT_MS = 120_000  # Chromium's start, beside two CPU hogs (Playwright's default: 30 s)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A browser test's timeout is its own work's: the module's JupyterLab and Chromium start
    in fixtures with deadlines of their own (:data:`START_TIMEOUT_S`,
    :data:`LAUNCH_TIMEOUT_MS`). Counted in the first test's timeout, a start that took 130 s
    beside two CPU hogs failed a 120 s test before it began (test_dask_dashboard_browser)."""
    here = Path(__file__).parent
    for item in items:
        if here not in Path(str(item.fspath)).parents:
            continue
        marker = item.get_closest_marker("timeout")
        seconds = (marker.args[0] if marker is not None and marker.args
                   else item.config.getini("timeout"))
        item.add_marker(pytest.mark.timeout(float(seconds), func_only=True), append=False)


@contextmanager
def running_lab(base: Path, root: Path, store: Path) -> Iterator[LabServer]:
    """A JupyterLab on loopback serving ``root`` (:func:`lab_environment`), stopped after;
    ready once ``/api/status`` answers 200."""
    env, token, port = lab_environment(base, root, store)
    log = (base / "lab.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
         f"--port={port}", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}",
         f"--IdentityProvider.token={token}"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                tail = (base / "lab.log").read_text(errors="replace")[-2000:]
                why = (f"exited with {proc.returncode}" if proc.poll() is not None
                       else f"no answer in {START_TIMEOUT_S:.0f} s (load average "
                            f"{os.getloadavg()[0]:.1f})")
                raise RuntimeError(f"JupyterLab did not start: {why}; the end of "
                                   f"{base / 'lab.log'}:\n{tail}")
            time.sleep(0.3)
        yield LabServer(url=url, token=token, root=root)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    required = os.environ.get("WORKBENCH_REQUIRE_BROWSER") == "1"  # CI sets it
    if required:
        import jupyterlab  # noqa: F401  (an ImportError fails the tier instead of skipping)
        assert CHROMIUM.exists(), f"no Chromium at {CHROMIUM}: apt-get install -y chromium"
    pytest.importorskip("jupyterlab")
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium")
    base = tmp_path_factory.mktemp("lab")
    root = base / "root"
    root.mkdir()
    with running_lab(base, root, root / "workbench.sqlite") as server:
        yield server


@pytest.fixture(scope="module")
def browser_page(lab_server: LabServer) -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                     timeout=LAUNCH_TIMEOUT_MS)
        context = browser.new_context(viewport={"width": 1400, "height": 2400})
        context.route("**/*", lambda route: route.continue_()
                      if route.request.url.startswith("http://127.0.0.1") else route.abort())
        page = context.new_page()
        console: list[str] = []
        page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
        page.on("pageerror", lambda exc: console.append(f"pageerror: {exc}"))
        page.wb_console = console  # read by tests when something does not appear
        try:
            yield page
        finally:
            context.close()
            browser.close()


@pytest.fixture
def artifacts() -> Path:
    """Where screenshots go: $WORKBENCH_ARTIFACTS, default tests/browser/artifacts/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
