"""``workbench lab``: JupyterLab on the notebooks folder."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from workbench.core.errors import WorkbenchError


def lab_command(root: str | Path = "notebooks", *, port: int | None = None,
                open_browser: bool = True, extra: Sequence[str] = ()) -> list[str]:
    """The command line that starts JupyterLab with ``root`` as its file browser root."""
    folder = Path(root)
    if not folder.is_dir():
        raise WorkbenchError(f"notebook folder {folder} does not exist", key="root",
                             value=str(folder), expected="an existing folder")
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder.resolve()}"]
    if port is not None:
        cmd += [f"--port={port}"]
    if not open_browser:
        cmd += ["--no-browser"]
    return [*cmd, *extra]


def launch(root: str | Path = "notebooks", *, port: int | None = None,
           open_browser: bool = True, extra: Sequence[str] = ()) -> int:
    """Run JupyterLab in the foreground until it exits; returns its exit status."""
    try:
        import jupyterlab  # noqa: F401
    except ImportError as exc:
        raise WorkbenchError("JupyterLab is not installed: pip install 'kernel-workbench[ui]'",
                             key="jupyterlab", value=None,
                             expected="the ui extra installed") from exc
    return subprocess.call(lab_command(root, port=port, open_browser=open_browser, extra=extra))
