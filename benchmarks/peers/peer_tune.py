"""``peers.py --tune N``: our side of a peers row is what ``workbench tune`` picks.

Instead of configs taken from a committed recording (the default) or moved from other
shapes' recordings (unseen shapes), each (kernel, shape, dtype) is tuned on the GPU the way a
user tunes it: a guided search of ``N`` evaluations through the workbench's own runner
(isolated worker, every config verified on two input sets), then the confirmation under every
cache condition and the default pick rule (best geometric mean over the conditions, never
slower than the baseline in any). The pick is what peers.py then times against the peers
under its three methods; the row records the tune's summary (evaluations, pick, the
per-condition table, range edges) beside it. Shapes outside the kernel.toml (peer_methods'
UNSEEN and HELD_OUT) are added to the folder in memory; shape-aware choices (a compiled-in
size) then offer that shape's own value, as they would for a user's shape.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path
from typing import Any

from workbench.core.errors import WorkbenchError
from workbench.core.kernel_folder import KernelFolder
from workbench.core.records import Config


class Tuner:
    """One Workbench (one GPU worker) per kernel folder, reused across its shapes."""

    def __init__(self, evaluations: int, widen: int = 0) -> None:
        self.evaluations, self.widen = evaluations, widen
        self._dir = tempfile.mkdtemp(prefix="peer-tune-")
        self._benches: dict[str, Any] = {}

    def pick(self, folder: KernelFolder, shape: str, dtype: str) -> tuple[Config, dict[str, Any]]:
        """Tune (folder, shape, dtype); the pick and a JSON-able summary of the tune."""
        from workbench.api import Workbench

        wb = self._benches.get(folder.name)
        if wb is None:
            wb = Workbench(folder, store=Path(self._dir) / f"{folder.name}.sqlite")
            self._benches[folder.name] = wb
        def tune() -> Any:
            return wb.tune(shape, dtype, budget=self.evaluations, widen=self.widen,
                           auto_approve=True, l2_profile=False)

        started = time.perf_counter()
        failed_first = ""
        try:
            report = tune()
        except WorkbenchError as exc:  # kept in the row; tried once more in a fresh worker
            failed_first = f"{type(exc).__name__}: {exc.message}"
            print(f"    tune| first attempt failed: {failed_first}; once more", flush=True)
            with contextlib.suppress(Exception):
                wb.runner.close()
            report = tune()
        pick = report.pick
        if pick is None:
            raise RuntimeError(f"workbench tune found no config at {shape}/{dtype}: "
                               f"{report.summary()}")
        info: dict[str, Any] = {
            "evaluations": self.evaluations, "evaluated": report.evaluated,
            "wall_s": round(time.perf_counter() - started, 2), "runner": report.runner,
            "pick": dict(pick.config), "pick_median_us": pick.median_us,
            "baseline_us": report.baseline_us, "widen_rounds": self.widen,
            "edges": [e.describe() for e in report.edges], "notes": list(report.notes),
            "summary": report.summary(), "first_attempt_failed": failed_first}
        print("\n".join(f"    tune| {line}" for line in report.summary().splitlines()),
              flush=True)
        return Config(pick.config), info

    def close(self) -> None:
        for wb in self._benches.values():
            with contextlib.suppress(Exception):  # the worker may be gone already
                wb.runner.close()
        self._benches.clear()
