"""Durability and shared stores, with real processes and real SIGKILLs (no GPU: the
SyntheticRunner's times are invented; what is tested is the loop and the store)."""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

WORKER = Path(__file__).resolve().parent / "soak_worker.py"
BUDGET = 60


def start(store: Path, log: Path, delay_s: float, wait_go: bool = False) -> subprocess.Popen[str]:
    """A worker whose imports are done; with wait_go it searches only after a line on stdin."""
    process = subprocess.Popen([sys.executable, str(WORKER), str(store), str(log), str(BUDGET),
                                str(delay_s), *(["--wait-go"] if wait_go else [])],
                               stdout=subprocess.PIPE, text=True,
                               stdin=subprocess.PIPE if wait_go else None)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process


def stored_keys(store: Path) -> list[str]:
    if not store.exists():
        return []
    with sqlite3.connect(store) as conn:
        return [r[0] for r in conn.execute(
            "SELECT config_key FROM trials WHERE status != 'pruned'")]


def log_lines(log: Path) -> list[tuple[str, str, str]]:
    if not log.exists():
        return []
    return [tuple(line.split()) for line in log.read_text().splitlines()]  # type: ignore[misc]


def test_kill_9_soak_loses_nothing_and_measures_nothing_twice(tmp_path: Path) -> None:
    store, log = tmp_path / "soak.sqlite", tmp_path / "measure.log"
    rng = random.Random(20261124)
    kills = 0
    committed: set[str] = set()
    while kills < 11:
        # 0.1 s per measurement: a kill within 0.2 s of 'ready' lands after at most ~3 of
        # the 60 configs, so 11 kills happen before the budget runs out on a fast machine too
        process = start(store, log, 0.1)
        time.sleep(rng.uniform(0.0, 0.2))
        if process.poll() is not None:  # finished before the kill: start over elsewhere
            break
        process.kill()  # SIGKILL at a random point of the loop
        process.wait()
        kills += 1
        committed |= set(stored_keys(store))
    final = start(store, log, 0.0)
    out, _ = final.communicate(timeout=120)
    assert final.returncode == 0 and f"evaluated={BUDGET}" in out, out
    keys = stored_keys(store)
    lines = log_lines(log)
    measured = Counter(key for _, key, _ in lines)
    assert kills >= 10
    assert len(keys) == len(set(keys)) == BUDGET  # nothing stored twice
    assert committed <= set(keys)  # 0 lost: every committed trial survived every kill
    assert [line for line in lines if line[0] == "twice"] == []  # 0 measured after commit
    # only a trial in flight at a kill is measured again (it was never committed)
    assert sum(n - 1 for n in measured.values()) <= kills


def test_two_processes_share_the_work(tmp_path: Path) -> None:
    store, log = tmp_path / "shared.sqlite", tmp_path / "measure.log"
    # both searches begin together: under load one process's imports can take longer than
    # the other's whole search, which would leave it no share though the claims work
    first = start(store, log, 0.03, wait_go=True)
    second = start(store, log, 0.03, wait_go=True)
    for process in (first, second):
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    outs = [p.communicate(timeout=120)[0] for p in (first, second)]
    assert all(p.returncode == 0 for p in (first, second)), outs
    lines = log_lines(log)
    by_pid = Counter(pid for _, _, pid in lines)
    assert [line for line in lines if line[0] == "twice"] == []
    assert len(lines) == len({key for _, key, _ in lines}) == BUDGET  # each config once
    assert len(by_pid) == 2 and min(by_pid.values()) >= 5, by_pid  # both did a share
    assert len(stored_keys(store)) == BUDGET
