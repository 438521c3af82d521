"""A real JupyterLab on loopback and a real Debian Chromium driven by Playwright.

Needs ``apt-get install -y chromium`` (never ``playwright install``). Every request that is
not to 127.0.0.1 is aborted, so the test proves the panel works offline.

One JupyterLab and one Chromium serve the whole tier (each took 10 to 30 s to start and
stop on 2 cores, seven times over); the tests stay apart all the same. Each test gets a
folder of its own below the server's root (the notebooks copied in, its own
``workbench.sqlite``: the server has no ``$WORKBENCH_STORE``, so a notebook's kernel, started
in its folder, uses the store there, and the page's requests to the server extension carry
``?folder=`` so the sidebar reads it too), a browser context of its own (no cookies or
local storage of another test), and its kernels are shut down when it ends.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(os.environ.get("WORKBENCH_ARTIFACTS", Path(__file__).parent / "artifacts"))


@dataclass(frozen=True)
class LabServer:
    """A running JupyterLab as one test sees it: ``root`` is where the test's files go,
    ``folder`` that place relative to the server's root ("" for the root itself)."""

    url: str
    token: str
    root: Path
    folder: str = ""

    def path(self, name: str = "") -> str:
        """``name`` (relative to :attr:`root`) as JupyterLab names it: from the server's root."""
        return str(PurePosixPath(self.folder, name)) if self.folder else name

    def notebook_url(self, name: str) -> str:
        return self.lab_url(name)

    def lab_url(self, name: str = "") -> str:
        """The lab with ``name`` (a file or folder below :attr:`root`) open, or as it opens."""
        where = f"/tree/{urllib.parse.quote(self.path(name))}" if name else ""
        return f"{self.url}/lab{where}?reset&token={self.token}"

    def api_url(self, endpoint: str) -> str:
        """The server extension's ``endpoint``, for this test's folder."""
        query = f"?{urllib.parse.urlencode({'folder': self.folder})}" if self.folder else ""
        return f"{self.url}/workbench/{endpoint}{query}"

    def in_folder(self, name: str) -> LabServer:
        """The same server, a test's files in the new folder ``name`` below the root (with a
        copy of the notebooks, as a user's lab folder holds them)."""
        root = self.root / name
        root.mkdir()
        for nb in (ROOT / "notebooks").glob("*.ipynb"):
            shutil.copy(nb, root / nb.name)
        return replace(self, root=root, folder=self.path(name))


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


def lab_environment(base: Path, root: Path, store: Path | None
                    ) -> tuple[dict[str, str], str, int]:
    """(environment, token, port) of a JupyterLab serving ``root`` like a user's: its own
    config, data, runtime, settings and workspace folders under ``base``, this checkout's
    extension installed, the notebooks copied into ``root``, the sample kernels listed and
    ``store`` as the workbench store; None: each folder's own ``workbench.sqlite``
    (benchmarks/panel/bench_lab_browser.py uses it too)."""
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
    for unset in ("WORKBENCH_MODEL", "WORKBENCH_REPLAY_PACE",
                  *(["WORKBENCH_STORE"] if store is None else [])):
        env.pop(unset, None)
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
def running_lab(base: Path, root: Path, store: Path | None) -> Iterator[LabServer]:
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


def _shut_kernels_down(server: LabServer) -> None:
    """Ends the sessions (and their kernels) of notebooks in ``server``'s folder, all at once."""
    def call(method: str, endpoint: str) -> Any:
        request = urllib.request.Request(f"{server.url}/api/{endpoint}", method=method,
                                         headers={"Authorization": f"token {server.token}"})
        with urllib.request.urlopen(request, timeout=60) as reply:
            return json.loads(reply.read() or b"null")

    inside = f"{server.folder}/"
    ids = [s["id"] for s in call("GET", "sessions") if str(s.get("path", "")).startswith(inside)]
    with ThreadPoolExecutor(max(1, len(ids))) as pool:
        list(pool.map(lambda sid: call("DELETE", f"sessions/{sid}"), ids))


@pytest.fixture(scope="session")
def lab_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """The tier's one JupyterLab (no ``$WORKBENCH_STORE``: each folder's store is its own)."""
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
    with running_lab(base, root, None) as server:
        yield server


@pytest.fixture(scope="session")
def kernel_reaper(lab_session: LabServer) -> Iterator[Callable[[LabServer], None]]:
    """``reap(server)``: shuts down the kernels of ``server``'s folder while the next test
    runs (a kernel takes 1 to 4 s to stop); before the tier's JupyterLab stops, every
    shutdown has ended, and one that failed fails the tier's last test."""
    pool = ThreadPoolExecutor(2, thread_name_prefix="kernel-reaper")
    pending: list[Future[None]] = []
    try:
        yield lambda server: pending.append(pool.submit(_shut_kernels_down, server))
        for done in pending:
            done.result(timeout=120)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture
def lab_server(lab_session: LabServer, kernel_reaper: Callable[[LabServer], None],
               request: pytest.FixtureRequest) -> Iterator[LabServer]:
    """This test's folder in the tier's JupyterLab, its kernels shut down after it."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)[:80].strip("-.")
    folder, n = name, 0
    while (lab_session.root / folder).exists():  # a name cut short may repeat
        n += 1
        folder = f"{name}-{n}"
    server = lab_session.in_folder(folder)
    try:
        yield server
    finally:
        kernel_reaper(server)


@pytest.fixture(scope="session")
def chromium(lab_session: LabServer) -> Iterator[Any]:
    """The tier's one Chromium (each test opens a context of its own in it)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                     timeout=LAUNCH_TIMEOUT_MS)
        try:
            yield browser
        finally:
            browser.close()


def new_context(browser: Any, server: LabServer, **options: Any) -> Any:
    """A context of its own: every request that is not to loopback aborted, and the page's
    requests to the server extension scoped to ``server``'s folder (``?folder=``)."""
    context = browser.new_context(**options)
    context.route("**/*", lambda route: route.continue_()
                  if route.request.url.startswith("http://127.0.0.1") else route.abort())
    if server.folder:
        def scoped(route: Any) -> None:
            url = route.request.url
            query = urllib.parse.urlencode({"folder": server.folder})
            route.fallback(url=f"{url}{'&' if '?' in url else '?'}{query}")

        context.route(lambda url: urllib.parse.urlsplit(url).path.startswith("/workbench/"),
                      scoped)
    return context


@pytest.fixture
def browser_page(chromium: Any, lab_server: LabServer) -> Iterator[Any]:
    context = new_context(chromium, lab_server, viewport={"width": 1400, "height": 2400})
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
    page.on("pageerror", lambda exc: console.append(f"pageerror: {exc}"))
    page.wb_console = console  # read by tests when something does not appear
    try:
        yield page
    finally:
        context.close()


@pytest.fixture
def artifacts() -> Path:
    """Where screenshots go: $WORKBENCH_ARTIFACTS, default tests/browser/artifacts/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
