"""Notebooks the JupyterLab extension opens, and ``workbench init`` behind "Tune this kernel".

A panel notebook is two cells: where the kernel folder and the store are, then
``Workbench(...).panel()``. It is written next to the server's root once and reused, so a
user's edits to it survive the next "Open panel".
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from workbench.core.errors import WorkbenchError, WriteRefusedError
from workbench.core.write_policy import inside_root, write_file
from workbench.engine.sandbox import SandboxLimits, SandboxRun, limit_hit, run_sandboxed
from workbench.ui.lab_index import find_kernel_folders

#: Wall seconds one ``workbench init`` may take (it parses the source and writes a folder).
INIT_TIMEOUT_S = 60.0
#: The compile sandbox's limits, tightened for init (a parse, no compiler): 2 GiB of
#: address space, 60 s of CPU, 16 MiB per written file.
INIT_LIMITS = SandboxLimits(address_space_bytes=2 << 30, cpu_s=60, file_bytes=16 << 20)

_SETUP = '''import os
from pathlib import Path

from workbench import Workbench

# The store the JupyterLab sidebar reads: $WORKBENCH_STORE, else the one at the lab's root.
STORE = Path(os.environ.get("WORKBENCH_STORE", {store!r}))
KERNEL = Path({kernel!r})'''


class InitUnavailableError(WorkbenchError):
    """This installation's ``workbench`` has no ``init`` command."""


def _notebook(cells: Sequence[tuple[str, str]]) -> str:
    import nbformat
    import nbformat.v4 as nbf

    nb = nbf.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbf.new_markdown_cell(text) if kind == "markdown" else nbf.new_code_cell(text)
                for kind, text in cells]
    return str(nbformat.writes(nb))


_FILL_IN_NOTE = ("\n\n`workbench init` scaffolded this folder from the bare kernel: first "
                 "replace every `FILL_IN` in `{kernel}/kernel.toml` (shapes, tolerances).")


def panel_notebook_text(kernel: str, store: str = "workbench.sqlite",
                        fill_in: bool = False) -> str:
    """A notebook that opens the panel on ``kernel`` with ``store`` (paths relative to the
    notebook); ``fill_in`` adds what to complete first in a freshly scaffolded folder."""
    note = _FILL_IN_NOTE.format(kernel=kernel) if fill_in else ""
    return _notebook([
        ("markdown", f"# Tuning `{Path(kernel).name}`\n\nRun all cells to open the panel: "
                     f"template review, ranges, search and charts.{note}"),
        ("code", _SETUP.format(kernel=kernel, store=store)),
        ("code", "wb = Workbench(KERNEL, store=STORE)\nwb.panel()"),
    ])


def _kernel_toml_text(kernel_folder: Path) -> str:
    """The folder's ``kernel.toml``, which must be a regular file (never read through a
    symlink: a dangling or planted one is refused)."""
    toml = kernel_folder / "kernel.toml"
    try:
        info = os.lstat(toml)
    except OSError:
        info = None
    if info is None or not stat.S_ISREG(info.st_mode):
        raise WorkbenchError(f"{kernel_folder} is not a kernel folder (no kernel.toml, or "
                             "one that is a symlink)", key="kernel", value=str(kernel_folder),
                             expected="a folder with a regular kernel.toml")
    return toml.read_text(encoding="utf-8", errors="replace")


def write_panel_notebook(where: Path, kernel_folder: Path, store: Path, *,
                         root: Path | None = None) -> tuple[Path, bool]:
    """``tune-<kernel>.ipynb`` in ``where`` (below ``root``, the Jupyter root; ``where``
    itself by default) for ``kernel_folder`` and ``store``: (path, whether created).

    Written under :func:`~workbench.core.write_policy.write_file`: an existing notebook is
    opened as it is (a user's edits survive), a symlinked one or a folder on the way that
    is a symlink is refused, and of two requests at once one writes and the other opens.
    """
    fill_in = "FILL_IN" in _kernel_toml_text(kernel_folder)
    target = where / f"tune-{kernel_folder.name}.ipynb"
    base = root if root is not None else where
    if _is_regular_file(target):
        inside_root(base, target)  # refuses a notebook reached through a symlinked folder
        return target, False
    text = panel_notebook_text(_relpath(kernel_folder, where), _relpath(store, where), fill_in)
    try:
        return write_file(base, target, text), True
    except WriteRefusedError:
        if _is_regular_file(target):  # another request wrote it meanwhile
            return target, False
        raise


def write_new_tuning_notebook(root: Path, search_roots: Sequence[Path], store: Path) -> Path:
    """An untitled tuning notebook in ``root`` pointing at the first kernel folder found
    (never over an existing file or through a symlink: the next free name is taken)."""
    kernels = [_relpath(k, root) for k in find_kernel_folders(search_roots)]
    first = kernels[0] if kernels else "path/to/kernel_folder"
    choices = "\n".join(f"- `{k}`" for k in kernels) or "- (none found: run `workbench init`)"
    text = _notebook([
        ("markdown", "# New tuning notebook\n\nSet `KERNEL` to a kernel folder, then run all "
                     f"cells. Kernel folders found:\n\n{choices}"),
        ("code", _SETUP.format(kernel=first, store=_relpath(store, root))),
        ("code", "wb = Workbench(KERNEL, store=STORE)\nwb.panel()"),
    ])
    for n in range(1000):
        target = root / (f"tuning-notebook-{n}.ipynb" if n else "tuning-notebook.ipynb")
        if os.path.lexists(target):
            continue
        try:
            return write_file(root, target, text)
        except WriteRefusedError:
            if os.path.lexists(target):  # taken meanwhile
                continue
            raise
    raise WorkbenchError(f"{root} already holds 1000 tuning notebooks", key="root",
                         value=str(root), expected="a free tuning-notebook-N.ipynb name")


def _is_regular_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _relpath(path: Path, start: Path) -> str:
    """``path`` relative to ``start``, '/'-separated (what a notebook in ``start`` opens)."""
    return Path(os.path.relpath(path.resolve(), start.resolve())).as_posix()


def init_folder(source: Path) -> Path:
    """The folder ``init`` writes for ``source`` (the command's default: the .cu's own folder
    when it is called baseline.cu, else one named after it next to it). The lab passes it
    as ``--out``, so what each request wrote is known without looking around."""
    return source.parent if source.name == "baseline.cu" else source.parent / source.stem


class InitConflictError(WorkbenchError):
    """The kernel folder ``init`` would write already has a kernel.toml (an earlier init,
    or another request that won the race): nothing was written."""


def run_init(source: Path, *, python: str | None = None, timeout_s: float = INIT_TIMEOUT_S,
             limits: SandboxLimits = INIT_LIMITS) -> Path:
    """Run ``workbench init --out FOLDER -- SOURCE`` in the compile sandbox (address-space,
    CPU and file-size limits, a wall limit of ``timeout_s``) and return the folder written.

    The one place the extension calls ``init`` (through the command line, so it follows
    wherever the command lives). ``source`` goes after ``--``, so no name reads as an
    option. A failure is a WorkbenchError carrying init's one-line ``error:`` message (never
    its traceback); a folder that already has a kernel.toml is an
    :class:`InitConflictError`, whether it was there before or another init won the race.
    """
    if not _is_regular_file(source) or source.suffix not in (".cu", ".cuh"):
        raise WorkbenchError(f"{source} is not a CUDA source file", key="path",
                             value=str(source), expected="an existing .cu or .cuh file")
    folder = init_folder(source)
    toml = folder / "kernel.toml"
    with _folder_lock(folder):  # one init a folder at a time: the second sees the first's
        if os.path.lexists(toml):
            raise InitConflictError(f"{toml.name} already exists in {folder.name}: nothing "
                                    "was written (open its panel, or run `workbench init "
                                    "--force`)", key="path", value=str(source),
                                    folder=str(folder))
        command = [python or sys.executable, "-m", "workbench.cli", "init", "--out",
                   str(folder), "--", str(source)]
        with tempfile.TemporaryDirectory(prefix="workbench-init-") as work:
            done = run_sandboxed(command, Path(work), limits, timeout_s)
    if done.returncode == 0 and _is_regular_file(toml):
        return folder
    if done.timed_out:
        raise WorkbenchError(f"workbench init {source.name} ran past {timeout_s:.0f} s and was "
                             "stopped", key="timeout_s", value=timeout_s,
                             expected="init to finish")
    if "invalid choice: 'init'" in done.log:
        raise InitUnavailableError(
            "this installation's workbench has no `init` command (it scaffolds a kernel "
            "folder from a bare .cu); update kernel-workbench",
            key="command", value="init", expected="workbench init")
    if os.path.lexists(toml):
        raise InitConflictError(f"{toml.name} in {folder.name} was written by another init "
                                "at the same time: this one wrote nothing", key="path",
                                value=str(source), folder=str(folder))
    raise WorkbenchError(f"workbench init {source.name} failed: {_init_complaint(done, limits)}",
                         key="path", value=str(source), expected="a kernel init can scaffold")


_FOLDER_LOCKS: dict[Path, threading.Lock] = {}
_FOLDER_LOCKS_GUARD = threading.Lock()


def _folder_lock(folder: Path) -> threading.Lock:
    """The lock of one kernel folder's inits in this process. Two inits of one source in
    one lab ran side by side, and the one that lost could fail on the winner's half-written
    folder before its kernel.toml existed, a 400 where a 409 was due."""
    key = Path(os.path.abspath(folder))
    with _FOLDER_LOCKS_GUARD:
        return _FOLDER_LOCKS.setdefault(key, threading.Lock())


def _init_complaint(done: SandboxRun, limits: SandboxLimits) -> str:
    """What went wrong, in one line: init's ``error:`` line, the sandbox limit it hit, or
    the exception's last line (a crash), never a traceback."""
    lines = [line.strip() for line in done.log.splitlines() if line.strip()]
    said = [line for line in lines if line.startswith("error:")]
    if said:
        return _short_line(said[-1].removeprefix("error:").strip())
    limit = limit_hit(done.returncode, done.log, limits)
    if limit is not None:
        return limit
    if done.returncode < 0:
        return f"it was killed by signal {-done.returncode}"
    last = lines[-1] if lines else f"exit status {done.returncode}"
    return "it crashed (" + _short_line(last) + ")"


def _short_line(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."
