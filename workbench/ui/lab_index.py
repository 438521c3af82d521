"""What the JupyterLab sidebar shows: kernel folders and their stored sessions.

Pure reading (folders on disk, the SQLite store, the newest recording's baselines) and the
panel notebooks the sidebar, the launcher card and "Tune this kernel" open. The HTTP side is
:mod:`workbench.ui.lab_server`.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from workbench.core.errors import WorkbenchError
from workbench.core.records import Status

#: Folders never searched for kernel folders.
_SKIPPED = {"node_modules", "__pycache__", "recordings", "site-packages"}
#: How deep below a search root a ``kernel.toml`` is looked for.
SEARCH_DEPTH = 3
#: Sessions listed per kernel, newest first.
SESSIONS_SHOWN = 8


@dataclass(frozen=True)
class SessionSummary:
    """One stored session as the sidebar lists it."""

    id: str
    created: str
    trials: int
    ok: int
    best_us: float | None
    best_problem: str | None  # "shape/dtype" of best_us
    speedup: float | None
    speedup_note: str  # where the speedup's baseline comes from, or why there is none
    status: str


@dataclass(frozen=True)
class KernelSummary:
    """One kernel folder: its name, its path relative to the server root, its sessions."""

    name: str
    path: str
    sessions: tuple[SessionSummary, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path,
                "sessions": [asdict(s) for s in self.sessions]}


def find_kernel_folders(roots: Iterable[Path], depth: int = SEARCH_DEPTH) -> list[Path]:
    """Every folder holding a ``kernel.toml`` at most ``depth`` levels below a root."""
    found: dict[Path, None] = {}

    def walk(folder: Path, level: int) -> None:
        if (folder / "kernel.toml").is_file():
            found[folder.resolve()] = None
            return
        if level >= depth:
            return
        try:
            children = sorted(p for p in folder.iterdir() if p.is_dir())
        except OSError:
            return
        for child in children:
            if not child.name.startswith(".") and child.name not in _SKIPPED:
                walk(child, level + 1)

    for root in roots:
        if root.is_dir():
            walk(root, 0)
    return list(found)


def relative_to_root(path: Path, root: Path) -> str:
    """``path`` as the notebook server names it: relative to the root, '/'-separated."""
    return Path(os.path.relpath(path.resolve(), root.resolve())).as_posix()


_BASELINES: dict[tuple[str, float], tuple[str, dict[str, float]]] = {}


def recorded_baselines(folder: Path) -> tuple[str, dict[str, float]] | None:
    """(device name, {"shape/dtype": baseline µs}) of the folder's newest recording, None
    without one. Cached per file and modification time (a recording is several MB)."""
    from workbench.engine.recording import load_recording, recording_paths

    paths = recording_paths(folder)
    if not paths:
        return None
    key = (str(paths[-1]), paths[-1].stat().st_mtime)
    if key not in _BASELINES:
        rec = load_recording(paths[-1])
        _BASELINES[key] = (rec.device_name, {
            f"{t.shape}/{t.dtype}": float(t.median_us) for t in rec.baseline
            if t.status is Status.OK and t.median_us is not None})
    return _BASELINES[key]


def summarize_sessions(store: Any, kernel: str,
                       baselines: tuple[str, dict[str, float]] | None) -> list[SessionSummary]:
    """The newest :data:`SESSIONS_SHOWN` sessions of ``kernel`` in ``store``, newest first.

    A session's best is its fastest ok trial of the problem (shape/dtype) it measured most;
    its speedup divides the recorded baseline of that problem by it, only when the trials
    ran on the recording's GPU (a replay of it, or the same GPU model live).
    """
    sessions = sorted(store.sessions(kernel), key=lambda s: s.created, reverse=True)
    sessions = sessions[:SESSIONS_SHOWN]
    wanted = {s.id for s in sessions}
    trials: dict[str, list[Any]] = {s.id: [] for s in sessions}
    for stored in store.trials():
        if stored.session_id in wanted:
            trials[stored.session_id].append(stored)
    out = []
    for session in sessions:
        rows = trials[session.id]
        ok = [t for t in rows if t.result.status is Status.OK and t.result.median_us is not None]
        best_us = best_problem = speedup = None
        note = "no ok trial yet"
        if ok:
            problems = Counter(f"{t.result.shape}/{t.result.dtype}" for t in ok)
            best_problem = problems.most_common(1)[0][0]
            best = min((t for t in ok if f"{t.result.shape}/{t.result.dtype}" == best_problem),
                       key=lambda t: t.result.median_us)
            best_us = float(best.result.median_us)
            speedup, note = _speedup(best, best_problem, best_us, baselines)
        iterations = store.iterations(session.id)
        if iterations:
            last = iterations[-1]
            status = f"agent {last.state} (iteration {last.iteration})"
            if speedup is None and last.speedup is not None:
                speedup, note = float(last.speedup), "measured by the agent's tune step"
        elif rows:
            status = f"{len(ok)} ok of {len(rows)} trials"
        else:
            status = "no trials"
        out.append(SessionSummary(id=session.id, created=session.created, trials=len(rows),
                                  ok=len(ok), best_us=best_us, best_problem=best_problem,
                                  speedup=speedup, speedup_note=note, status=status))
    return out


def _speedup(best: Any, problem: str, best_us: float,
             baselines: tuple[str, dict[str, float]] | None) -> tuple[float | None, str]:
    if baselines is None:
        return None, "no recording with a baseline in this kernel folder"
    device, times = baselines
    if problem not in times:
        return None, f"the recording has no baseline for {problem}"
    if not device or device not in best.provenance.device:
        return None, (f"trials ran on {best.provenance.device or 'an unnamed device'}, "
                      f"the recorded baseline on {device}")
    return times[problem] / best_us, f"recorded baseline {times[problem]:.2f} µs on {device}"


def kernel_index(roots: Sequence[Path], server_root: Path, store_path: Path) -> dict[str, Any]:
    """The sidebar's data: every kernel folder under ``roots`` with its stored sessions."""
    problems: list[str] = []
    store = None
    if store_path.is_file():
        from workbench.store.sqlite import SQLiteStore

        try:
            store = SQLiteStore(store_path)
        except WorkbenchError as exc:
            problems.append(f"store {store_path.name}: {exc.message}")
    kernels = []
    try:
        for folder in find_kernel_folders(roots):
            sessions: list[SessionSummary] = []
            if store is not None:
                try:
                    baselines = recorded_baselines(folder)
                except WorkbenchError as exc:
                    baselines = None
                    problems.append(f"{folder.name}: {exc.message}")
                try:
                    sessions = summarize_sessions(store, folder.name, baselines)
                except WorkbenchError as exc:
                    problems.append(f"{folder.name}: {exc.message}")
            kernels.append(KernelSummary(name=folder.name,
                                         path=relative_to_root(folder, server_root),
                                         sessions=tuple(sessions)))
    finally:
        if store is not None:
            store.close()
    return {"kernels": [k.to_dict() for k in kernels], "store": store_path.name,
            "problems": problems}
