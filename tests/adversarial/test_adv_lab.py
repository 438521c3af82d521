"""The lab server's endpoints under hostile requests and folders (issue 27, item 4).

A real Jupyter server on loopback with the workbench extension, spoken to with its token:
every bad request is a 400 JSON naming what was wrong (never a 500, a traceback or an echo
of a huge value); nothing is written out of the root through a symlink; the sidebar and
the notebook endpoint keep answering while hostile inits run; the sidebar reads the store's
per-session tallies, never every trial; a store with a bad ``schema_version`` is a clean
error.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from workbench.core.errors import StoreCorruptError, StoreError
from workbench.core.records import Status
from workbench.store.sqlite import SCHEMA_VERSION, SQLiteStore
from workbench.testing.store_contract import PROVENANCE, sample_result
from workbench.ui import lab_index, lab_server

pytest.importorskip("jupyter_server")

SCALE_CU = """__global__ void scale_kernel(float* out, const float* x, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i];
}
"""
#: What issue 27 found starving the server: 200 KB of nested ``*(``.
HOSTILE_CU = "__global__ void k(float* p) { " + "*(" * 100_000 + "p" + ")" * 100_000 + "; }\n"
#: Wall seconds the test server lets one init run.
INIT_DEADLINE_S = 3


@dataclass(frozen=True)
class Lab:
    url: str
    token: str
    root: Path

    def request(self, method: str, endpoint: str, body: bytes | None = None,
                timeout: float = 60) -> tuple[int, dict[str, Any], int]:
        """(status, JSON reply, reply size in bytes)."""
        host, port = self.url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
        try:
            conn.request(method, f"/workbench/{endpoint}", body=body,
                         headers={"Authorization": f"token {self.token}",
                                  "Content-Type": "application/json"})
            reply = conn.getresponse()
            raw = reply.read()
        finally:
            conn.close()
        return reply.status, json.loads(raw or b"{}"), len(raw)

    def post(self, endpoint: str, payload: Any) -> tuple[int, dict[str, Any], int]:
        return self.request("POST", endpoint, json.dumps(payload).encode())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    root = tmp_path_factory.mktemp("labroot")
    config = tmp_path_factory.mktemp("jupyter-config")
    (config / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"workbench.ui.lab_server": True}}}))
    token, port = secrets.token_hex(16), _free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("WORKBENCH_STORE", "WORKBENCH_KERNELS")}
    # a kernels folder beside the root, as `workbench lab` points at sample_kernels/
    beside = tmp_path_factory.mktemp("beside_kernels")
    _kernel_folder(beside, "beside_kernel")
    env.update(JUPYTER_CONFIG_DIR=str(config), WORKBENCH_INIT_TIMEOUT_S=str(INIT_DEADLINE_S),
               WORKBENCH_KERNELS=str(beside))
    log = (tmp_path_factory.mktemp("log") / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root",
         "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
         f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise RuntimeError(f"jupyter server did not start: see {log.name}") from None
            time.sleep(0.2)  # waiting on a real server's start, not a clock
    try:
        yield Lab(url=url, token=token, root=root)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture
def area(lab: Lab, request: pytest.FixtureRequest) -> Path:
    """A fresh folder below the lab's root for one test."""
    folder = lab.root / f"t{secrets.token_hex(4)}"
    folder.mkdir()
    return folder


def _rel(lab: Lab, path: Path) -> str:
    return path.relative_to(lab.root).as_posix()


def _assert_clean_400(status: int, reply: dict[str, Any], size: int, what: str) -> None:
    assert status == 400, reply
    text = json.dumps(reply)
    assert what in reply["message"], reply["message"]
    assert "Traceback" not in text and "Unhandled" not in text
    assert size < 4000, f"a {size}-byte reply echoes too much"


# -- bad bodies: 400 naming what was wrong, on both endpoints that take a body ----------------

BAD_BODIES: list[tuple[str, bytes, str]] = [
    ("nul", b'{"F": "a\\u0000.cu"}', "NUL"),
    ("lone-surrogate", b'{"F": "\\ud800.cu"}', "lone surrogate"),
    ("300-char-name", json.dumps({"F": "k" * 300 + ".cu"}).encode(), "at most 255"),
    ("2000-char-path", json.dumps({"F": "/".join(["d" * 9] * 200)}).encode(), "at most 1024"),
    ("dash-name", b'{"F": "-rf.cu"}', "starting with '-'"),
    ("dash-dash-name", b'{"F": "sub/--force.cu"}', "starting with '-'"),
    ("deep-json", b'{"F": ' + b"[" * 5_000 + b"]" * 5_000 + b"}", "nests deeper"),
    ("deep-json-1e5", b'{"F": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "at most"),
    ("deep-object", b'{"F": ' + b'{"a": ' * 2_000 + b"1" + b"}" * 2_000 + b"}", "nests deeper"),
    ("non-utf8", b'{"F": "\xff\xfe.cu"}', "not UTF-8"),
    ("not-json", b'{"F": ', "not JSON"),
    ("not-an-object", b"[1, 2]", "JSON object"),
    ("number", b'{"F": 12}', "not a path string"),
    ("absolute", b'{"F": "/etc/passwd"}', "not a path below the server root"),
    ("climbing", b'{"F": "../../etc/passwd"}', "not a path below the server root"),
    ("control-char", b'{"F": "a\\nb.cu"}', "control character"),
    ("unknown-field", b'{"F": "a.cu", "shell": "rm -rf /"}', "unknown field"),
    ("huge-body", b'{"F": "' + b"x" * (50 << 20) + b'"}', "at most"),
]


@pytest.mark.parametrize(("endpoint", "field"), [("init", "path"), ("notebook", "kernel")])
@pytest.mark.parametrize(("case", "body", "what"), BAD_BODIES, ids=[c[0] for c in BAD_BODIES])
def test_a_bad_request_is_a_400_naming_what_was_wrong(lab: Lab, endpoint: str, field: str,
                                                      case: str, body: bytes,
                                                      what: str) -> None:
    if (endpoint, case) == ("notebook", "climbing"):
        what = "no kernel folder"  # a kernel is looked up among the listed folders only
    status, reply, size = lab.request("POST", endpoint, body.replace(b'"F"', f'"{field}"'.encode()))
    _assert_clean_400(status, reply, size, what)


def test_echo_cuts_a_huge_value() -> None:
    shown = lab_server.echo("x" * (50 << 20))
    assert len(shown) < 120 and shown.endswith(f"({(50 << 20) + 2} chars)")


def test_json_depth_skips_brackets_inside_strings() -> None:
    assert lab_server.json_depth('{"a": "[[[[[[[[[[[[", "b": [[1]]}', 8) == 3
    assert lab_server.json_depth("[" * 100_000, 8) == 9  # stops counting past the limit


# -- symlinks: nothing written out of the root, nothing listed through one -------------------

def test_init_refuses_a_self_symlinked_source(lab: Lab, area: Path) -> None:
    (area / "loop.cu").symlink_to("loop.cu")
    _assert_clean_400(*lab.post("init", {"path": _rel(lab, area / "loop.cu")}), "symlink")


def test_init_refuses_a_source_symlinked_out_of_the_root(lab: Lab, area: Path,
                                                         tmp_path: Path) -> None:
    outside = tmp_path / "secret.cu"
    outside.write_text(SCALE_CU)
    (area / "scale.cu").symlink_to(outside)
    _assert_clean_400(*lab.post("init", {"path": _rel(lab, area / "scale.cu")}), "symlink")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.cu"]


def test_init_refuses_a_source_in_a_symlinked_folder(lab: Lab, area: Path,
                                                     tmp_path: Path) -> None:
    (tmp_path / "scale.cu").write_text(SCALE_CU)
    (area / "link").symlink_to(tmp_path, target_is_directory=True)
    _assert_clean_400(*lab.post("init", {"path": _rel(lab, area / "link" / "scale.cu")}),
                      "symlink")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scale.cu"]


def test_init_refuses_a_target_folder_symlinked_out_of_the_root(lab: Lab, area: Path,
                                                                tmp_path: Path) -> None:
    (area / "scale.cu").write_text(SCALE_CU)
    (area / "scale").symlink_to(tmp_path, target_is_directory=True)
    _assert_clean_400(*lab.post("init", {"path": _rel(lab, area / "scale.cu")}), "symlink")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["kernel.toml", "baseline.cu"])
def test_init_refuses_a_dangling_symlink_in_the_target_folder(lab: Lab, area: Path,
                                                              tmp_path: Path,
                                                              name: str) -> None:
    (area / "scale.cu").write_text(SCALE_CU)
    (area / "scale").mkdir()
    (area / "scale" / name).symlink_to(tmp_path / "planted")
    _assert_clean_400(*lab.post("init", {"path": _rel(lab, area / "scale.cu")}), "symlink")
    assert not (tmp_path / "planted").exists()


def _kernel_folder(where: Path, name: str = "scale") -> Path:
    folder = where / name
    folder.mkdir()
    (folder / "kernel.toml").write_text('name = "scale"\n')
    return folder


def test_panel_notebook_refuses_a_symlinked_notebook(lab: Lab, area: Path,
                                                     tmp_path: Path) -> None:
    name = f"k{secrets.token_hex(3)}"
    _kernel_folder(area, name)
    target = tmp_path / "bashrc"
    target.write_text("original\n")
    (lab.root / f"tune-{name}.ipynb").symlink_to(target)
    try:
        status, reply, size = lab.post("notebook", {"kernel": _rel(lab, area / name)})
        _assert_clean_400(status, reply, size, "symlink")
        assert target.read_text() == "original\n"
    finally:
        (lab.root / f"tune-{name}.ipynb").unlink()


def test_panel_notebook_opens_an_existing_one_without_rewriting_it(lab: Lab,
                                                                   area: Path) -> None:
    name = f"k{secrets.token_hex(3)}"
    _kernel_folder(area, name)
    status, reply, _ = lab.post("notebook", {"kernel": _rel(lab, area / name)})
    assert (status, reply["created"]) == (200, True)
    notebook = lab.root / reply["notebook"]
    notebook.write_text(notebook.read_text().replace("wb.panel()", "wb.panel()  # mine"))
    status, again, _ = lab.post("notebook", {"kernel": _rel(lab, area / name)})
    assert (status, again["created"], again["notebook"]) == (200, False, reply["notebook"])
    assert "# mine" in notebook.read_text()


def test_new_tuning_notebook_never_writes_through_a_symlink(lab: Lab, tmp_path: Path) -> None:
    target = tmp_path / "profile"
    target.write_text("original\n")
    planted = [lab.root / "tuning-notebook.ipynb", lab.root / "tuning-notebook-1.ipynb"]
    for link in planted:
        if not os.path.lexists(link):
            link.symlink_to(target)
    status, reply, _ = lab.post("notebook", {})
    assert status == 200 and reply["notebook"] not in [p.name for p in planted]
    assert target.read_text() == "original\n"
    (lab.root / reply["notebook"]).unlink()


def test_sidebar_passes_over_folders_reached_through_symlinks(lab: Lab, area: Path,
                                                              tmp_path: Path) -> None:
    outside = _kernel_folder(tmp_path, "escaped")
    (area / "escaped").symlink_to(outside, target_is_directory=True)
    inner = area / "toml_link"
    inner.mkdir()
    (inner / "kernel.toml").symlink_to(outside / "kernel.toml")
    status, index, _ = lab.request("GET", "kernels")
    assert status == 200
    paths = [k["path"] for k in index["kernels"]]
    assert _rel(lab, area / "escaped") not in paths and _rel(lab, inner) not in paths
    problems = "\n".join(index["problems"])
    assert f"{_rel(lab, area / 'escaped')}: a symlink" in problems
    status, reply, size = lab.post("notebook", {"kernel": _rel(lab, area / "escaped")})
    _assert_clean_400(status, reply, size, "no kernel folder")
    assert sorted(p.name for p in outside.iterdir()) == ["kernel.toml"]


# -- init: bounded, deadlined, and each request says what it wrote ----------------------------

def test_init_of_a_non_utf8_source_answers_without_a_traceback(lab: Lab, area: Path) -> None:
    (area / "latin.cu").write_bytes(SCALE_CU.encode().replace(b"alpha", b"\xe9\xe8"))
    status, reply, size = lab.post("init", {"path": _rel(lab, area / "latin.cu")})
    assert status in (200, 400), reply
    assert "Traceback" not in json.dumps(reply) and size < 4000


def test_concurrent_inits_in_one_folder_each_say_what_they_wrote(lab: Lab, area: Path) -> None:
    names = [f"k{i}" for i in range(lab_server.INIT_RUNNING + lab_server.INIT_WAITING)]
    for name in names:
        (area / f"{name}.cu").write_text(SCALE_CU.replace("scale_kernel", f"{name}_kernel"))
    with ThreadPoolExecutor(len(names)) as pool:
        replies = list(pool.map(
            lambda n: lab.post("init", {"path": _rel(lab, area / f"{n}.cu")}), names))
    for name, (status, reply, _) in zip(names, replies, strict=True):
        assert status == 200, reply
        assert reply["folder"] == _rel(lab, area / name)
        assert f"{_rel(lab, area / name)}/kernel.toml" in reply["written"]
        assert (area / name / "kernel.toml").is_file()


def test_two_inits_of_one_source_one_writes_the_other_says_it_lost(lab: Lab,
                                                                  area: Path) -> None:
    (area / "scale.cu").write_text(SCALE_CU)
    with ThreadPoolExecutor(2) as pool:
        replies = list(pool.map(lambda _: lab.post("init", {"path": _rel(lab, area / "scale.cu")}),
                                range(2)))
    statuses = sorted(r[0] for r in replies)
    assert statuses in ([200, 409], [200, 200]), replies
    for status, reply, _ in replies:
        if status == 409:
            assert "nothing" in reply["message"] and "scale" in reply["details"]["folder"]
    status, reply, _ = lab.post("init", {"path": _rel(lab, area / "scale.cu")})
    assert status == 409 and "already exists" in reply["message"]


def test_sidebar_and_notebooks_answer_while_six_hostile_inits_run(lab: Lab,
                                                                  area: Path) -> None:
    name = f"k{secrets.token_hex(3)}"
    _kernel_folder(area, name)
    for i in range(6):
        (area / f"hostile{i}.cu").write_text(HOSTILE_CU)
    with ThreadPoolExecutor(6) as pool:
        inits = [pool.submit(lab.post, "init", {"path": _rel(lab, area / f"hostile{i}.cu")})
                 for i in range(6)]
        latencies = []
        while not all(f.done() for f in inits):
            for method, endpoint, body in (("GET", "kernels", None),
                                           ("POST", "notebook",
                                            json.dumps({"kernel": _rel(lab, area / name)})
                                            .encode())):
                start = time.perf_counter()
                status, _, _ = lab.request(method, endpoint, body, timeout=30)
                latencies.append(time.perf_counter() - start)
                assert status == 200
        outcomes = [f.result() for f in inits]
    assert max(latencies) < 5.0, f"slowest answer {max(latencies):.1f} s while inits ran"
    for status, reply, size in outcomes:
        assert status in (400, 429), reply
        assert "Traceback" not in json.dumps(reply) and size < 4000


def test_init_stops_at_its_wall_deadline(tmp_path: Path) -> None:
    from workbench.ui.lab_notebooks import run_init

    source = tmp_path / "hostile.cu"
    source.write_text(HOSTILE_CU)
    start = time.monotonic()
    with pytest.raises(Exception) as caught:
        run_init(source, timeout_s=2)
    assert time.monotonic() - start < 15
    assert "Traceback" not in str(caught.value) and len(str(caught.value)) < 1000


def test_the_init_queue_refuses_beyond_its_places() -> None:
    queue = lab_server.InitQueue(running=2, waiting=1)
    for _ in range(3):
        queue.admit()
    with pytest.raises(lab_server.BusyError) as caught:
        queue.admit()
    assert caught.value.status == 429 and "at most 2 run at once" in caught.value.message
    queue.release()
    queue.admit()


def test_a_queued_init_past_its_deadline_is_not_run() -> None:
    now = [100.0]
    queue = lab_server.InitQueue(deadline_s=30, clock=lambda: now[0])
    ran: list[bool] = []
    job = queue.timed(lambda: ran.append(True))
    now[0] += 31
    with pytest.raises(lab_server.BusyError) as caught:
        job()
    assert caught.value.status == 503 and ran == []


# -- the store: the sidebar reads tallies, and a bad schema_version is a clean error -----------

def _store_with_trials(path: Path) -> tuple[SQLiteStore, str]:
    store = SQLiteStore(path)
    session = store.create_session("scale").id
    for block, median in ((32, 9.0), (64, 5.0), (128, 7.0)):
        store.record_trial(sample_result(block, median_us=median), PROVENANCE, session)
    store.record_trial(sample_result(256, status=Status.COMPILE_ERROR), PROVENANCE, session)
    return store, session


class _NoTrialScans:
    """A store whose ``trials()`` fails: the sidebar must never read every trial."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name == "trials":
            raise AssertionError("the sidebar read every stored trial")
        return getattr(self._store, name)


def test_sidebar_summary_reads_tallies_not_trials(tmp_path: Path) -> None:
    store, session = _store_with_trials(tmp_path / "s.sqlite")
    rows = lab_index.summarize_sessions(_NoTrialScans(store), "scale", None)
    assert [(r.id, r.trials, r.ok, r.best_us) for r in rows] == [(session, 4, 3, 5.0)]
    store.close()


def test_a_version_1_store_is_backfilled(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    store, _ = _store_with_trials(path)
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE session_tallies")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with SQLiteStore(path) as reopened:
        rows = lab_index.summarize_sessions(_NoTrialScans(reopened), "scale", None)
        assert [(r.trials, r.ok, r.best_us) for r in rows] == [(4, 3, 5.0)]
        assert reopened.schema_version() == SCHEMA_VERSION


BAD_VERSIONS = [("abc", StoreCorruptError, "not a whole number"),
                ("", StoreCorruptError, "not a whole number"),
                ("1.5", StoreCorruptError, "not a whole number"),
                ("-1", StoreCorruptError, "not a whole number"),
                ("\u0663", StoreCorruptError, "not a whole number"),
                ("x" * 10_000, StoreCorruptError, "not a whole number"),
                ("99", StoreError, "newer than this workbench")]


@pytest.mark.parametrize(("value", "error", "what"), BAD_VERSIONS,
                         ids=["abc", "empty", "float", "negative", "arabic-digit", "huge",
                              "newer"])
def test_a_bad_schema_version_is_a_clean_store_error(tmp_path: Path, value: str,
                                                     error: type[Exception], what: str) -> None:
    path = tmp_path / "s.sqlite"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (value,))
    with pytest.raises(error) as caught:
        SQLiteStore(path)
    message = caught.value.args[0]
    assert what in message and str(path) in message and len(message) < 600
    assert caught.value.details["key"] == "schema_version"  # type: ignore[attr-defined]


def test_sidebar_with_a_bad_schema_version_answers_200_with_the_problem(lab: Lab,
                                                                       tmp_path: Path) -> None:
    store = lab.root / "workbench.sqlite"
    SQLiteStore(store).close()
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE meta SET value = 'abc' WHERE key = 'schema_version'")
    try:
        status, index, _ = lab.request("GET", "kernels")
        assert status == 200
        assert any("schema_version" in p and "'abc'" in p for p in index["problems"])
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{store}{suffix}").unlink(missing_ok=True)


def test_a_listed_kernel_beside_the_root_opens_its_panel(lab: Lab) -> None:
    # $WORKBENCH_KERNELS beside the root is listed as ../<folder>: Open panel must accept
    # exactly what the index lists (it answered 400 for every sample kernel)
    status, index, _ = lab.request("GET", "kernels")
    assert status == 200
    [listed] = [k["path"] for k in index["kernels"] if k["path"].endswith("beside_kernel")]
    assert listed.startswith("../")
    status, reply, _ = lab.post("notebook", {"kernel": listed})
    assert status == 200, reply
    assert (lab.root / reply["notebook"]).is_file()
    assert not reply["notebook"].startswith("..")
