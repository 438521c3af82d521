"""The Jupyter server extension behind the JupyterLab extension (``extensions/workbench-lab``).

Routes under ``<base_url>/workbench/`` (authenticated like every Jupyter API):

- ``GET kernels``: kernel folders below the server root (and ``$WORKBENCH_KERNELS``) with
  their stored sessions: best result, speedup, status (:func:`workbench.ui.lab_index.kernel_index`);
- ``POST notebook`` ``{"kernel": PATH}``: the kernel's panel notebook (written once, then
  reused); without ``kernel``, a new tuning notebook;
- ``POST init`` ``{"path": FILE.cu}``: ``workbench init`` on the file, then its panel notebook
  (and ``fill_in``: the new kernel.toml when init left FILL_IN placeholders to complete).

Paths in requests and replies are relative to the server root, as JupyterLab names files.
The store is ``$WORKBENCH_STORE``, else ``workbench.sqlite`` at the root. Enabled by
``jupyter-config/kernel-workbench.json``, which pip installs into
``etc/jupyter/jupyter_server_config.d``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.ioloop import IOLoop

from workbench.core.errors import WorkbenchError
from workbench.ui.lab_index import find_kernel_folders, kernel_index, relative_to_root
from workbench.ui.lab_notebooks import (
    InitUnavailableError,
    run_init,
    write_new_tuning_notebook,
    write_panel_notebook,
)

T = TypeVar("T")


class _Handler(APIHandler):
    """Shared pieces: the server root, the search roots, the store, JSON errors."""

    @property
    def root(self) -> Path:
        return Path(self.settings["server_root_dir"]).expanduser().resolve()

    def search_roots(self) -> list[Path]:
        roots = [self.root]
        extra = os.environ.get("WORKBENCH_KERNELS")
        if extra:
            roots += [Path(p).expanduser() for p in extra.split(os.pathsep) if p]
        return roots

    def store_path(self) -> Path:
        configured = os.environ.get("WORKBENCH_STORE")
        if configured:
            return Path(configured).expanduser().resolve()
        return self.root / "workbench.sqlite"

    def body(self) -> dict[str, Any]:
        try:
            data = json.loads(self.request.body or b"{}")
        except json.JSONDecodeError as exc:
            raise web.HTTPError(400, f"request body is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise web.HTTPError(400, "request body must be a JSON object")
        return data

    async def in_thread(self, fn: Callable[[], T]) -> T:
        """Disk, SQLite and subprocess work off the server's event loop."""
        return await IOLoop.current().run_in_executor(None, fn)

    def fail(self, exc: WorkbenchError) -> None:
        self.set_status(501 if isinstance(exc, InitUnavailableError) else 400)
        self.finish(json.dumps({"message": exc.message,
                                "details": {k: str(v) for k, v in exc.details.items()}}))


class KernelsHandler(_Handler):
    @web.authenticated
    async def get(self) -> None:
        roots, store = self.search_roots(), self.store_path()
        index = await self.in_thread(lambda: kernel_index(roots, self.root, store))
        self.finish(json.dumps(index))


class NotebookHandler(_Handler):
    @web.authenticated
    async def post(self) -> None:
        kernel = self.body().get("kernel")
        roots, store = self.search_roots(), self.store_path()
        try:
            if kernel:
                folders = {relative_to_root(k, self.root): k for k in find_kernel_folders(roots)}
                if str(kernel) not in folders:
                    raise WorkbenchError(f"no kernel folder {kernel!r} here", key="kernel",
                                         value=kernel, expected=f"one of {sorted(folders)}")
                path, created = await self.in_thread(
                    lambda: write_panel_notebook(self.root, folders[str(kernel)], store))
            else:
                path = await self.in_thread(
                    lambda: write_new_tuning_notebook(self.root, roots, store))
                created = True
        except WorkbenchError as exc:
            self.fail(exc)
            return
        self.finish(json.dumps({"notebook": relative_to_root(path, self.root),
                                "created": created}))


class InitHandler(_Handler):
    @web.authenticated
    async def post(self) -> None:
        rel = str(self.body().get("path") or "")
        source = (self.root / rel).resolve()
        if not rel or not source.is_relative_to(self.root):
            raise web.HTTPError(400, f"path {rel!r} is not a file below the server root")
        store = self.store_path()
        try:
            folder = await self.in_thread(lambda: run_init(source))
            path, created = await self.in_thread(
                lambda: write_panel_notebook(source.parent, folder, store))
        except WorkbenchError as exc:
            self.fail(exc)
            return
        toml = folder / "kernel.toml"
        fill_in = "FILL_IN" in toml.read_text(encoding="utf-8", errors="replace")
        self.finish(json.dumps({"notebook": relative_to_root(path, self.root),
                                "folder": relative_to_root(folder, self.root),
                                "fill_in": relative_to_root(toml, self.root) if fill_in else None,
                                "created": created}))


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
