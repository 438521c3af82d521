"""One tuning process for the kill -9 soak and the shared-store test (run as a script).

    python soak_worker.py STORE LOG BUDGET DELAY_S [--wait-go]

Tunes silu_and_mul @ small/bf16 exhaustively with the SyntheticRunner (no GPU; its times
are not measurements) into STORE. Before measuring a config it appends ``measure KEY PID``
to LOG, or ``twice KEY PID`` when the store already holds that config (a config measured
again after it was committed: the soak's failure). Each measurement takes DELAY_S, so that
a kill lands at a random point of the loop. Prints ``ready`` once the imports are done; with
``--wait-go`` it then waits for a line on stdin before searching, so that processes started
one after another begin their searches together however long each took to import.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.records import Candidate, TrialResult  # noqa: E402
from workbench.search.budget import Budget, SearchConfig  # noqa: E402
from workbench.search.orchestrator import Search  # noqa: E402
from workbench.store.base import provenance_for  # noqa: E402
from workbench.store.sqlite import SQLiteStore  # noqa: E402
from workbench.testing.synthetic_runner import SyntheticRunner  # noqa: E402

SHAPE, DTYPE = "small", "bf16"


class LoggedRunner(SyntheticRunner):
    """Logs every measurement (fsynced) and whether the store already had it."""

    log: Path
    store: SQLiteStore
    delay_s: float

    def measure(self, candidates: Sequence[Candidate], *,
                condition: str | None = None) -> Iterator[TrialResult]:
        provenance = provenance_for(self, self.template)
        for candidate in candidates:
            key = candidate.config.key()
            seen = self.store.has_trial(provenance, key, candidate.shape, candidate.dtype)
            with self.log.open("a") as fh:
                fh.write(f"{'twice' if seen else 'measure'} {key} {os.getpid()}\n")
                fh.flush()
                os.fsync(fh.fileno())
            time.sleep(self.delay_s)
            yield from super().measure([candidate], condition=condition)


def main() -> None:
    store_path, log_path, budget, delay_s = sys.argv[1:5]
    wait_go = sys.argv[5:] == ["--wait-go"]
    folder = load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")
    store = SQLiteStore(store_path, timeout_s=30)
    runner = LoggedRunner(folder)
    runner.log, runner.store, runner.delay_s = Path(log_path), store, float(delay_s)
    config = SearchConfig(shapes=(SHAPE,), dtype=DTYPE, strategy="exhaustive", seed=0,
                          budget=Budget(max_evaluations=int(budget)), batch_size=4)
    search = Search.for_template(folder, folder.template, runner, config, runner.device,
                                 store=store)
    search.claim_wait_s = 0.05  # poll others' claims often: the soak is short
    print("ready", flush=True)
    if wait_go:
        sys.stdin.readline()
    outcome = search.run()
    shape = outcome.shapes[SHAPE]
    print(f"done {shape.reason} evaluated={shape.evaluated} measured_now={shape.measured_now}",
          flush=True)
    store.close()


if __name__ == "__main__":
    main()
