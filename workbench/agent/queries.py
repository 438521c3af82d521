"""Questions answered from the store alone (no agent object needed)."""

from __future__ import annotations

from typing import NamedTuple

from workbench.store.base import Store


class SpeedupPoint(NamedTuple):
    """Best so far after ``iteration`` against the baseline it was re-measured with."""

    iteration: int
    best_us: float
    baseline_us: float | None
    speedup: float | None


def speedup_per_iteration(store: Store, session_id: str) -> list[SpeedupPoint]:
    """``(iteration, best_us, baseline_us, speedup)`` per agent iteration, best so far.

    Read from the session's stored agent iterations: each iteration's test step stores the
    best it re-measured and the baseline re-measured in the same runner (``detail["test"]``);
    the best so far is the fastest of those up to that iteration. Iterations before the
    first measured best are left out; when an iteration was stored more than once (it
    waited for a review, then finished) its last row counts.
    """
    last: dict[int, dict[str, object]] = {}
    for row in store.iterations(session_id):
        last[row.iteration] = dict(row.detail)
    points: list[SpeedupPoint] = []
    best: tuple[float, float | None] | None = None
    for iteration in sorted(last):
        test = last[iteration].get("test")
        if isinstance(test, dict) and test.get("status") == "ok" and test.get("best_us"):
            best_us = float(test["best_us"])
            base = test.get("baseline_us")
            baseline_us = float(base) if isinstance(base, (int, float)) else None
            if best is None or best_us < best[0]:
                best = (best_us, baseline_us)
        if best is not None:
            speedup = best[1] / best[0] if best[1] else None
            points.append(SpeedupPoint(iteration, best[0], best[1], speedup))
    return points


def iteration_endings(store: Store, session_id: str) -> dict[int, str]:
    """How each stored agent iteration ended, for a reader of the speedup table:
    ``"measured"`` when its test step re-measured a best, else the step it stopped in and
    ``"nothing measured"`` (its row in :func:`speedup_per_iteration` repeats an earlier best).
    """
    last: dict[int, tuple[str, dict[str, object]]] = {}
    for row in store.iterations(session_id):
        last[row.iteration] = (row.state, dict(row.detail))
    endings: dict[int, str] = {}
    for iteration, (state, detail) in sorted(last.items()):
        test = detail.get("test")
        if isinstance(test, dict) and test.get("status") == "ok":
            endings[iteration] = "measured"
        else:
            step = str(detail.get("stopped_at") or state.split(":")[0])
            how = "failed" if state == "failed" else "stopped"
            endings[iteration] = f"{how} in {step}: nothing measured"
    return endings
