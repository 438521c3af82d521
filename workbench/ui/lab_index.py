"""What the JupyterLab sidebar shows: kernel folders and their stored sessions.

Pure reading (folders on disk, the SQLite store, the newest recording's baselines) and the
panel notebooks the sidebar, the launcher card and "Tune this kernel" open. The HTTP side is
:mod:`workbench.ui.lab_server`.
"""

from __future__ import annotations

import itertools
import os
import stat
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from workbench.core.errors import WorkbenchError
from workbench.core.records import Status
from workbench.store.base import ProblemTally
from workbench.store.rows import latest_picks

#: Folders never searched for kernel folders.
_SKIPPED = {"node_modules", "__pycache__", "recordings", "site-packages"}
#: How deep below a search root a ``kernel.toml`` is looked for.
SEARCH_DEPTH = 3
#: Entries of one folder read while searching (a folder of 10^6 files is not listed whole).
ENTRIES_READ = 5000
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
    # the stored pick of best_problem: "confirmed", "search-best", or "" (none stored: the
    # numbers are the search's fastest trial, and pick_note says so)
    decided: str = ""
    pick_note: str = ""
    pick_config: dict[str, Any] | None = None


@dataclass(frozen=True)
class KernelSummary:
    """One kernel folder: its name, its path relative to the server root, its sessions."""

    name: str
    path: str
    sessions: tuple[SessionSummary, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path,
                "sessions": [asdict(s) for s in self.sessions]}


def find_kernel_folders(roots: Iterable[Path], depth: int = SEARCH_DEPTH,
                        skipped: list[tuple[Path, str]] | None = None) -> list[Path]:
    """Every folder holding a ``kernel.toml`` at most ``depth`` levels below a root.

    The walk never follows a symlink: a folder or a ``kernel.toml`` reached through one could
    lead out of the root, and the notebook endpoint writes for what is listed. Each one
    passed over is named in ``skipped`` (the sidebar shows them as problems). A root itself
    may sit behind symlinks; at most :data:`ENTRIES_READ` entries of a folder are read.
    """
    found: dict[Path, None] = {}
    passed_over = skipped if skipped is not None else []

    def walk(folder: Path, level: int) -> None:
        try:
            info = os.lstat(folder / "kernel.toml")
        except OSError:
            info = None
        if info is not None:
            if stat.S_ISREG(info.st_mode):
                found[folder] = None
            else:
                passed_over.append((folder / "kernel.toml", "a symlink or not a regular file"))
            return
        if level >= depth:
            return
        try:
            with os.scandir(folder) as entries:
                children = sorted(itertools.islice(entries, ENTRIES_READ),
                                  key=lambda e: e.name)
        except OSError:
            return
        for entry in children:
            if entry.name.startswith(".") or entry.name in _SKIPPED:
                continue
            try:
                if entry.is_symlink():
                    if entry.is_dir():
                        passed_over.append((Path(entry.path), "a symlink (not followed)"))
                    continue
                if entry.is_dir(follow_symlinks=False):
                    walk(Path(entry.path), level + 1)
            except OSError:
                continue

    for root in roots:
        try:
            real = root.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if real.is_dir():
            walk(real, 0)
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

    A session's answer is the pick its tune stored for the problem (shape/dtype) it
    measured most among those with a stored pick: the time, how it was decided and, for a
    confirmed pick, the speedup over the baseline measured beside it, as the panel shows
    them. A fallback pick (no confirmation ran) or a problem with no stored pick shows the
    search's fastest trial, and ``pick_note`` says so; that speedup divides the recorded
    baseline by it, only when the trials ran on the recording's GPU (a replay of it, or
    the same GPU model live). Read from the store's
    per-session tallies (:meth:`~workbench.store.base.Store.problem_tallies`) and picks
    (:meth:`~workbench.store.base.Store.picks`), one read each, so the cost grows with the
    sessions shown, not with the trials stored.
    """
    sessions = sorted(store.sessions(kernel), key=lambda s: s.created, reverse=True)
    sessions = sessions[:SESSIONS_SHOWN]
    tallies: dict[str, list[ProblemTally]] = {s.id: [] for s in sessions}
    for tally in store.problem_tallies([s.id for s in sessions]):
        tallies[tally.session_id].append(tally)
    picks = latest_picks(store.picks(session_ids=[s.id for s in sessions]))
    out = []
    for session in sessions:
        rows = tallies[session.id]
        trials, ok = sum(t.trials for t in rows), sum(t.ok for t in rows)
        timed = [t for t in rows if t.ok and t.best_us is not None]
        best_us = best_problem = speedup = None
        note = "no ok trial yet"
        decided = pick_note = ""
        pick_config: dict[str, Any] | None = None
        picked = [t for t in timed if (session.id, t.shape, t.dtype) in picks]
        if timed:
            best = max(picked or timed, key=lambda t: t.ok)  # the first measured wins a tie
            best_problem = f"{best.shape}/{best.dtype}"
            pick = picks.get((session.id, best.shape, best.dtype))
            if pick is not None:
                best_us = pick.median_us
                decided, pick_note, pick_config = pick.decided, pick.how(), dict(pick.config)
                if not pick.is_fallback:  # over the baseline measured beside it
                    speedup = pick.speedup
                    note = (f"the baseline measured beside the pick ({pick.baseline_us:.2f} "
                            "µs, same round and condition)"
                            if pick.baseline_us is not None and speedup is not None
                            else "no baseline measured beside the pick")
                else:  # the search's best: against the recording's baseline, as below
                    speedup, note = _speedup(pick.device or best.best_device, best_problem,
                                             best_us, baselines)
            else:
                best_us = float(best.best_us) if best.best_us is not None else None
                pick_note = ("search-best fallback (no confirmation could run: no pick stored "
                             "for this session's problem); the search's fastest trial")
                if best_us is not None:
                    speedup, note = _speedup(best.best_device, best_problem, best_us,
                                             baselines)
        iterations = store.iterations(session.id)
        if iterations:
            last = iterations[-1]
            status = f"agent {last.state} (iteration {last.iteration})"
            if speedup is None and last.speedup is not None:
                speedup, note = float(last.speedup), "measured by the agent's tune step"
        elif trials:
            status = f"{ok} ok of {trials} trials"
        else:
            status = "no trials"
        out.append(SessionSummary(id=session.id, created=session.created, trials=trials,
                                  ok=ok, best_us=best_us, best_problem=best_problem,
                                  speedup=speedup, speedup_note=note, status=status,
                                  decided=decided, pick_note=pick_note,
                                  pick_config=pick_config))
    return out


def _speedup(best_device: str, problem: str, best_us: float,
             baselines: tuple[str, dict[str, float]] | None) -> tuple[float | None, str]:
    if baselines is None:
        return None, "no recording with a baseline in this kernel folder"
    device, times = baselines
    if problem not in times:
        return None, f"the recording has no baseline for {problem}"
    if not device or device not in best_device:
        return None, (f"trials ran on {best_device or 'an unnamed device'}, "
                      f"the recorded baseline on {device}")
    return times[problem] / best_us, f"recorded baseline {times[problem]:.2f} µs on {device}"


_STORES: dict[tuple[str, int, int], Any] = {}
_STORES_LOCK = threading.Lock()


def _open_store(store_path: Path) -> Any:
    """The SQLite store at ``store_path``, opened once per file (opening checks and may
    migrate it, which the sidebar should not pay on every refresh); a replaced file is
    opened again."""
    from workbench.store.sqlite import SQLiteStore

    info = store_path.stat()
    key = (str(store_path), info.st_dev, info.st_ino)
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            for old in [k for k in _STORES if k[0] == key[0]]:
                _STORES.pop(old).close()
            store = _STORES[key] = SQLiteStore(store_path)
        return store


def kernel_index(roots: Sequence[Path], server_root: Path, store_path: Path) -> dict[str, Any]:
    """The sidebar's data: every kernel folder under ``roots`` with its stored sessions, and
    the problems met on the way (a store that cannot be read, folders passed over)."""
    problems: list[str] = []
    store = None
    if store_path.is_file():
        try:
            store = _open_store(store_path)
        except WorkbenchError as exc:
            problems.append(f"store {store_path.name}: {exc.message}")
    kernels = []
    skipped: list[tuple[Path, str]] = []
    for folder in find_kernel_folders(roots, skipped=skipped):
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
    problems += [f"passed over {Path(os.path.relpath(path, server_root.resolve())).as_posix()}: "
                 f"{why}" for path, why in skipped]
    return {"kernels": [k.to_dict() for k in kernels], "store": store_path.name,
            "problems": problems}
