"""Notebooks the JupyterLab extension opens, and ``workbench init`` behind "Tune this kernel".

A panel notebook is two cells: where the kernel folder and the store are, then
``Workbench(...).panel()``. It is written next to the server's root once and reused, so a
user's edits to it survive the next "Open panel".
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from workbench.core.errors import WorkbenchError
from workbench.ui.lab_index import find_kernel_folders

#: Seconds ``workbench init`` may take (it parses the source and writes a folder).
INIT_TIMEOUT_S = 300.0

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


def write_panel_notebook(where: Path, kernel_folder: Path,
                         store: Path) -> tuple[Path, bool]:
    """``tune-<kernel>.ipynb`` in ``where`` for ``kernel_folder`` and ``store``: (path,
    whether created)."""
    if not (kernel_folder / "kernel.toml").is_file():
        raise WorkbenchError(f"{kernel_folder} is not a kernel folder (no kernel.toml)",
                             key="kernel", value=str(kernel_folder),
                             expected="a folder with kernel.toml")
    target = where / f"tune-{kernel_folder.name}.ipynb"
    if target.exists():
        return target, False
    fill_in = "FILL_IN" in (kernel_folder / "kernel.toml").read_text(encoding="utf-8",
                                                                     errors="replace")
    text = panel_notebook_text(_relpath(kernel_folder, where), _relpath(store, where), fill_in)
    target.write_text(text, encoding="utf-8")
    return target, True


def write_new_tuning_notebook(root: Path, search_roots: Sequence[Path], store: Path) -> Path:
    """An untitled tuning notebook in ``root`` pointing at the first kernel folder found."""
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
        if not target.exists():
            target.write_text(text, encoding="utf-8")
            return target
    raise WorkbenchError(f"{root} already holds 1000 tuning notebooks", key="root",
                         value=str(root), expected="a free tuning-notebook-N.ipynb name")


def _relpath(path: Path, start: Path) -> str:
    """``path`` relative to ``start``, '/'-separated (what a notebook in ``start`` opens)."""
    return Path(os.path.relpath(path.resolve(), start.resolve())).as_posix()


def _kernel_tomls(folder: Path) -> dict[Path, float]:
    return {k / "kernel.toml": (k / "kernel.toml").stat().st_mtime
            for k in find_kernel_folders([folder], depth=2)}


def run_init(source: Path, *, python: str | None = None,
             timeout_s: float = INIT_TIMEOUT_S) -> Path:
    """Run ``workbench init SOURCE`` and return the kernel folder it wrote.

    The one place the extension calls ``init`` (through the command line, so it follows
    wherever the command lives). The folder is the one whose ``kernel.toml`` is new or
    rewritten next to (or below) the source after the run.
    """
    if not source.is_file() or source.suffix not in (".cu", ".cuh"):
        raise WorkbenchError(f"{source} is not a CUDA source file", key="path",
                             value=str(source), expected="an existing .cu or .cuh file")
    before = _kernel_tomls(source.parent)
    try:
        done = subprocess.run([python or sys.executable, "-m", "workbench.cli", "init",
                               source.name],
                              cwd=source.parent, capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise WorkbenchError(f"workbench init {source.name} ran past {timeout_s:.0f} s",
                             key="timeout_s", value=timeout_s,
                             expected="init to finish") from exc
    if done.returncode != 0:
        if "invalid choice: 'init'" in done.stderr:
            raise InitUnavailableError(
                "this installation's workbench has no `init` command (it scaffolds a kernel "
                "folder from a bare .cu); update kernel-workbench",
                key="command", value="init", expected="workbench init")
        raise WorkbenchError(
            f"workbench init {source.name} failed (exit {done.returncode}): "
            f"{(done.stderr or done.stdout).strip()[-800:]}",
            key="path", value=str(source), expected="a kernel init can scaffold")
    after = _kernel_tomls(source.parent)
    changed = [p for p, mtime in after.items() if before.get(p) != mtime]
    if len(changed) != 1:
        raise WorkbenchError(
            f"workbench init {source.name} finished but wrote "
            f"{'no' if not changed else len(changed)} kernel.toml below {source.parent}: "
            f"{done.stdout.strip()[-400:]}",
            key="path", value=str(source), expected="one new kernel folder")
    return changed[0].parent
