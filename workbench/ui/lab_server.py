"""The Jupyter server extension behind the JupyterLab extension (``extensions/workbench-lab``).

Routes under ``<base_url>/workbench/`` (authenticated like every Jupyter API):

- ``GET kernels``: kernel folders below the server root (and ``$WORKBENCH_KERNELS``) with
  their stored sessions: best result, speedup, status (:func:`workbench.ui.lab_index.kernel_index`);
- ``POST notebook`` ``{"kernel": PATH}``: the kernel's panel notebook (written once, then
  reused); without ``kernel``, a new tuning notebook;
- ``POST init`` ``{"path": FILE.cu}``: ``workbench init`` on the file, then its panel notebook
  (and ``fill_in``: the new kernel.toml when init left FILL_IN placeholders to complete).

Paths in requests and replies are relative to the server root, as JupyterLab names files.
The store is ``$WORKBENCH_STORE``, else ``workbench.sqlite`` at the request's folder: the
root, or the folder below it that ``?folder=REL`` names (kernel folders are then searched
there and new notebooks written there: one server serves several projects, each with its
own store; the browser tests run one JupyterLab, each test in a folder of its own).
Enabled by ``jupyter-config/kernel-workbench.json``, which pip installs into
``etc/jupyter/jupyter_server_config.d``.

Bounds: a request body is at most :data:`MAX_BODY_BYTES` of UTF-8 JSON nested at most
:data:`MAX_JSON_DEPTH` deep, and every bad request is a 400 JSON reply naming what was wrong
(an echoed value cut to :data:`ECHO_CHARS`). Inits run in their own small pool
(:class:`InitQueue`: :data:`INIT_RUNNING` at once, :data:`INIT_WAITING` more queued, the
rest answered 429), each in the compile sandbox; the sidebar and the notebook endpoint run
in another pool, so they never wait behind an init.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.ioloop import IOLoop

from workbench.core.errors import WorkbenchError
from workbench.core.write_policy import inside_root
from workbench.ui.lab_index import find_kernel_folders, kernel_index, relative_to_root
from workbench.ui.lab_notebooks import (
    INIT_TIMEOUT_S,
    InitConflictError,
    InitUnavailableError,
    init_folder,
    run_init,
    write_new_tuning_notebook,
    write_panel_notebook,
)

T = TypeVar("T")

#: Largest request body read (bytes); the requests carry one relative path.
MAX_BODY_BYTES = 16 * 1024
#: Deepest nesting of ``[``/``{`` accepted, checked before parsing.
MAX_JSON_DEPTH = 8
#: Longest path accepted (characters), and longest name within it (UTF-8 bytes, as on disk).
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255
#: Characters of a value echoed back in an error.
ECHO_CHARS = 80
#: Inits running at once, and inits waiting for a turn; beyond both a request gets 429.
INIT_RUNNING = 2
INIT_WAITING = 4
#: Seconds a queued init may wait for its turn before it is answered 503 instead of run.
INIT_QUEUE_DEADLINE_S = 120.0


class BadRequestError(WorkbenchError):
    """A request the lab server refuses: ``key`` names the field, ``value`` is cut short."""


class BusyError(WorkbenchError):
    """Every init slot and queue place is taken (429), or a queued init waited too long (503)."""

    def __init__(self, message: str, *, status: int, **details: Any) -> None:
        super().__init__(message, **details)
        self.status = status


def echo(value: Any, limit: int = ECHO_CHARS) -> str:
    """``value`` as an error may show it: its repr, at most ``limit`` characters
    (a 50 MB value is never sent back)."""
    text = repr(value) if isinstance(value, str) else str(value)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else f"{text[:limit - 3]}... ({len(text)} chars)"


#: What the server itself says was expected (never the request's text) may run longer.
EXPECTED_CHARS = 600


def _detail(value: Any, limit: int = ECHO_CHARS) -> Any:
    """An error detail as the reply carries it: numbers as they are, the rest cut short."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return echo(value, limit) if isinstance(value, str) else echo(str(value), limit)


def json_depth(text: str, limit: int) -> int:
    """The nesting depth of JSON ``text`` (strings skipped), counted up to ``limit + 1``:
    checked before ``json.loads``, whose recursion a 10^5-deep body would overflow."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                break
        elif ch in "]}":
            depth -= 1
    return deepest


def parse_body(raw: bytes, allowed: tuple[str, ...]) -> dict[str, Any]:
    """A request body as a JSON object of ``allowed`` keys; BadRequestError naming what is
    wrong (too large, not UTF-8, too deep, not JSON, not an object, an unknown key)."""
    if len(raw) > MAX_BODY_BYTES:
        raise BadRequestError(f"request body is {len(raw)} bytes; at most {MAX_BODY_BYTES} "
                              "are read", key="body", value=len(raw), expected=MAX_BODY_BYTES)
    try:
        text = raw.decode("utf-8") if raw else "{}"
    except UnicodeDecodeError as exc:
        raise BadRequestError(f"request body is not UTF-8 (byte {exc.start} is "
                              f"0x{raw[exc.start]:02x})", key="body", value=exc.start,
                              expected="UTF-8 JSON") from None
    if json_depth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise BadRequestError(f"request body nests deeper than {MAX_JSON_DEPTH} levels",
                              key="body", expected=f"JSON nested at most {MAX_JSON_DEPTH} deep")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BadRequestError(f"request body is not JSON: {echo(str(exc))}", key="body",
                              expected="a JSON object") from None
    if not isinstance(data, dict):
        raise BadRequestError(f"request body must be a JSON object, not {type(data).__name__}",
                              key="body", expected="a JSON object")
    unknown = sorted(k for k in data if k not in allowed)
    if unknown:
        raise BadRequestError(f"unknown field {echo(unknown[0])}; this endpoint takes "
                              f"{list(allowed)}", key=unknown[0], expected=list(allowed))
    return data


def relative_path(data: dict[str, Any], key: str, *, listed: bool = False) -> str | None:
    """Field ``key`` as a path relative to the server root, or None when absent or empty;
    BadRequestError for anything a file name cannot safely hold. ``listed``: the value is
    only looked up among the paths the index lists (a ``$WORKBENCH_KERNELS`` folder beside
    the root reads ``../sample_kernels/x``), never opened as given, so climbing with ``..``
    is allowed there."""
    value = data.get(key)
    if value is None or value == "":
        return None

    def bad(why: str) -> BadRequestError:
        return BadRequestError(f"{key} {echo(value)} {why}", key=key, value=value)

    if not isinstance(value, str):
        raise bad(f"is a {type(value).__name__}, not a path string")
    if len(value) > MAX_PATH_CHARS:
        raise bad(f"is {len(value)} characters long; at most {MAX_PATH_CHARS}")
    if "\x00" in value:
        raise bad("holds a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise bad(f"holds a lone surrogate (U+{ord(value[exc.start]):04X}) at character "
                  f"{exc.start}") from None
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        raise bad("holds a control character")
    path = PurePosixPath(value)
    if path.is_absolute() or (".." in path.parts and not listed):
        raise bad("is not a path below the server root (absolute, or climbing with '..')")
    for part in path.parts:
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise bad(f"has a name of {len(part.encode('utf-8'))} bytes; at most "
                      f"{MAX_NAME_BYTES}")
        if part.startswith("-"):
            raise bad("has a name starting with '-' (it would read as a command option)")
    return path.as_posix()


def init_deadline_s() -> float:
    """Wall seconds one init may run: ``$WORKBENCH_INIT_TIMEOUT_S`` (a positive number, at
    most the default), else :data:`~workbench.ui.lab_notebooks.INIT_TIMEOUT_S`."""
    from workbench.core.settings import workbench_settings

    value = workbench_settings().init_timeout_s
    return value if value is not None and value <= INIT_TIMEOUT_S else INIT_TIMEOUT_S


class InitQueue:
    """At most ``running`` inits at once and ``waiting`` more in line; a request beyond both
    is refused at once (429), and one that waited past ``deadline_s`` for its turn is
    answered 503 instead of run. Its own threads: nothing else waits behind an init."""

    def __init__(self, running: int = INIT_RUNNING, waiting: int = INIT_WAITING,
                 deadline_s: float = INIT_QUEUE_DEADLINE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.running, self.waiting, self.deadline_s = running, waiting, deadline_s
        self.clock = clock
        self.admitted = 0
        self.executor = ThreadPoolExecutor(running, thread_name_prefix="workbench-init")

    def admit(self) -> None:
        """Take a place (on the event loop's thread); BusyError(429) when none is free."""
        if self.admitted >= self.running + self.waiting:
            raise BusyError(f"{self.admitted} inits are running or waiting (at most "
                            f"{self.running} run at once and {self.waiting} wait); try again "
                            "when one has finished", status=429, key="init",
                            value=self.admitted, expected=self.running + self.waiting)
        self.admitted += 1

    def release(self) -> None:
        self.admitted -= 1

    def timed(self, fn: Callable[[], T]) -> Callable[[], T]:
        """``fn``, refusing to start once it has waited past the deadline."""
        queued = self.clock()

        def run() -> T:
            waited = self.clock() - queued
            if waited > self.deadline_s:
                raise BusyError(f"this init waited {waited:.0f} s for a turn (more than "
                                f"{self.deadline_s:.0f} s) and was not run; try again",
                                status=503, key="init", value=round(waited, 1),
                                expected=self.deadline_s)
            return fn()

        return run


INIT_QUEUE = InitQueue()
#: The sidebar's and notebook endpoint's threads (disk and SQLite reads, notebook writes).
IO_POOL = ThreadPoolExecutor(4, thread_name_prefix="workbench-lab-io")


class _Handler(APIHandler):
    """Shared pieces: the server root, the search roots, the store, JSON errors."""

    fields: tuple[str, ...] = ()

    @property
    def root(self) -> Path:
        return Path(self.settings["server_root_dir"]).expanduser().resolve()

    def folder(self) -> Path:
        """The request's folder: the one ``?folder=REL`` names below the root (reached
        without a symlink, and existing), else the root itself."""
        rel = relative_path({"folder": self.get_query_argument("folder", None)}, "folder")
        if rel is None:
            return self.root
        folder = self.checked_below_root(rel)
        if not folder.is_dir():
            raise BadRequestError(f"folder {echo(rel)} is not a folder below the server root",
                                  key="folder", value=rel, expected="an existing folder")
        return folder

    def search_roots(self) -> list[Path]:
        from workbench.core.settings import workbench_settings

        return [self.folder(), *workbench_settings().kernels]

    def store_path(self) -> Path:
        from workbench.core.settings import workbench_settings

        configured = workbench_settings().store
        if configured is not None:
            return configured.resolve()
        return self.folder() / "workbench.sqlite"

    def body(self) -> dict[str, Any]:
        return parse_body(self.request.body or b"", self.fields)

    async def in_thread(self, fn: Callable[[], T]) -> T:
        """Disk and SQLite work off the server's event loop, in the lab's own pool."""
        return await IOLoop.current().run_in_executor(IO_POOL, fn)

    def fail(self, exc: WorkbenchError) -> None:
        """A JSON reply naming what was wrong: 400, 409 (init found a kernel.toml), 429/503
        (init is busy), 501 (no init here); the message and each detail cut short."""
        if isinstance(exc, BusyError):
            status = exc.status
            self.set_header("Retry-After", "10")
        elif isinstance(exc, InitConflictError):
            status = 409
        elif isinstance(exc, InitUnavailableError):
            status = 501
        else:
            status = 400
        self.set_status(status)
        message = exc.message if len(exc.message) <= 600 else exc.message[:597] + "..."
        self.finish(json.dumps({"message": message,
                                "details": {k: _detail(v, EXPECTED_CHARS if k == "expected" else ECHO_CHARS)
                                            for k, v in exc.details.items()}}))

    async def answer(self, work: Callable[[], Any]) -> None:
        """Run the request's ``work`` (a coroutine function); refusals become JSON errors,
        and so do OS errors on a path (a name too long, a symlink loop)."""
        try:
            await work()
        except WorkbenchError as exc:
            self.fail(exc)
        except (OSError, RuntimeError) as exc:
            name = getattr(exc, "filename", None)
            self.fail(BadRequestError(
                f"the path cannot be used: {getattr(exc, 'strerror', None) or exc}",
                key="path", value=str(name) if name is not None else ""))

    def checked_below_root(self, rel: str) -> Path:
        """``rel`` below the root with no symlink on the way (WriteRefusedError otherwise)."""
        return inside_root(self.root, rel)


class KernelsHandler(_Handler):
    @web.authenticated
    async def get(self) -> None:
        async def work() -> None:
            roots, store = self.search_roots(), self.store_path()
            index = await self.in_thread(lambda: kernel_index(roots, self.root, store))
            self.finish(json.dumps(index))

        await self.answer(work)


class NotebookHandler(_Handler):
    fields = ("kernel",)

    @web.authenticated
    async def post(self) -> None:
        async def work() -> None:
            kernel = relative_path(self.body(), "kernel", listed=True)
            folder, roots, store = self.folder(), self.search_roots(), self.store_path()
            if kernel is not None:
                path, created = await self.in_thread(
                    lambda: self._panel(kernel, folder, roots, store))
            else:
                path = await self.in_thread(
                    lambda: write_new_tuning_notebook(folder, roots, store))
                created = True
            self.finish(json.dumps({"notebook": relative_to_root(path, self.root),
                                    "created": created}))

        await self.answer(work)

    def _panel(self, kernel: str, folder: Path, roots: list[Path], store: Path
               ) -> tuple[Path, bool]:
        folders = {relative_to_root(k, self.root): k for k in find_kernel_folders(roots)}
        if kernel not in folders:
            # names first: the listed paths of folders beside the root are long
            names = sorted({path.name for path in folders.values()})[:20]
            raise BadRequestError(f"no kernel folder {echo(kernel)} here", key="kernel",
                                  value=kernel,
                                  expected=f"a listed kernel folder: {', '.join(names)}")
        return write_panel_notebook(folder, folders[kernel], store, root=self.root)


class InitHandler(_Handler):
    fields = ("path",)

    @web.authenticated
    async def post(self) -> None:
        async def work() -> None:
            rel = relative_path(self.body(), "path")
            if rel is None:
                raise BadRequestError("path is missing: name a .cu file below the server root",
                                      key="path", expected="a .cu file below the server root")
            source = await self.in_thread(lambda: self._source(rel))
            store = self.store_path()
            INIT_QUEUE.admit()
            try:
                deadline = init_deadline_s()
                folder = await IOLoop.current().run_in_executor(
                    INIT_QUEUE.executor,
                    INIT_QUEUE.timed(lambda: run_init(source, timeout_s=deadline)))
            finally:
                INIT_QUEUE.release()
            path, created = await self.in_thread(
                lambda: write_panel_notebook(source.parent, folder, store, root=self.root))
            toml = folder / "kernel.toml"
            fill_in = "FILL_IN" in toml.read_text(encoding="utf-8", errors="replace")
            self.finish(json.dumps({
                "notebook": relative_to_root(path, self.root),
                "folder": relative_to_root(folder, self.root),
                "written": [relative_to_root(toml, self.root),
                            relative_to_root(folder / "baseline.cu", self.root)],
                "fill_in": relative_to_root(toml, self.root) if fill_in else None,
                "created": created}))

        await self.answer(work)

    def _source(self, rel: str) -> Path:
        """The .cu named by ``rel``: a regular file below the root reached without a
        symlink, whose kernel folder (and its two files) are below the root too."""
        source = self.checked_below_root(rel)
        try:
            info = os.lstat(source)
        except FileNotFoundError:
            raise BadRequestError(f"path {echo(rel)} does not exist below the server root",
                                  key="path", value=rel,
                                  expected="an existing .cu file") from None
        if not stat.S_ISREG(info.st_mode) or source.suffix not in (".cu", ".cuh"):
            raise BadRequestError(f"path {echo(rel)} is not a CUDA source file", key="path",
                                  value=rel, expected="a regular .cu or .cuh file")
        folder = init_folder(source)
        for name in ("kernel.toml", "baseline.cu"):
            self.checked_below_root(str(folder / name))
        return source


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "workbench.ui.lab_server"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    web_app = server_app.web_app
    base = url_path_join(web_app.settings["base_url"], "workbench")
    web_app.add_handlers(".*$", [
        (url_path_join(base, "kernels"), KernelsHandler),
        (url_path_join(base, "notebook"), NotebookHandler),
        (url_path_join(base, "init"), InitHandler),
    ])
    server_app.log.info("Kernel Workbench server extension: routes under %s", base)
