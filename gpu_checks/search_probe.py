"""Which configs a guided `workbench tune` of silu_and_mul measured at a shape nobody tuned
for: how many hold each value of LOAD_PATH and D_CONST, and where the fastest of each ranks
(issue 18, 2026-11-26: the search's finalists are its fastest under the read flush)."""
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
from peer_methods import with_unseen  # noqa: E402

from workbench.api import Workbench  # noqa: E402
from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.records import Status  # noqa: E402

shape, budget = sys.argv[1], int(sys.argv[2])
folder = with_unseen(load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul"))
wb = Workbench(folder, store=Path(tempfile.mkdtemp()) / "probe.sqlite")
report = wb.tune(shape, "bf16", budget=budget, confirm=0, auto_approve=True, l2_profile=False)
ok = sorted((r for r in report.results if r.status is Status.OK and r.timing is not None),
            key=lambda r: r.timing.median_us)
best = ok[0].timing.median_us
print(f"{shape}: {len(ok)} ok of {len(report.results)}; best {best:.2f} us")
for knob in ("LOAD_PATH", "D_CONST", "VEC_BYTES", "ROW_SPLIT", "BLOCK_THREADS"):
    for value in sorted({int(r.config[knob]) for r in ok}):
        held = [(i, r) for i, r in enumerate(ok) if int(r.config[knob]) == value]
        i, r = held[0]
        print(f"  {knob}={value}: {len(held)} measured; fastest rank {i + 1} at "
              f"{r.timing.median_us:.2f} us ({r.timing.median_us / best:.3f} of the best)")
wb.runner.close()
