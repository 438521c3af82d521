"""Dump the SASS of silu_and_mul's full tile at u_mid (ours, Liger's geometry) and of Liger's
fused gate-up kernel after one call each, for reading side by side (issue 18, 2026-11-26)."""
import glob
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "peers"))
import dirty_l2

out = Path(os.environ.get("OUT", "out"))
dirty_l2.EXTRA[("silu_and_mul", "u_mid")] = [dict(
    BLOCK_THREADS=512, VEC_BYTES=16, ROW_SPLIT=1, D_CONST=6912, UNROLL=1, FAST_EXP=2, PDL=0)]
picks = dirty_l2.tuned_picks()
_p, impls, _outputs = dirty_l2.implementations(
    dirty_l2.Compiler("sm_90a"), "silu_and_mul", "u_mid", picks[("silu_and_mul", "u_mid")])
for label in ("ours alt 0", "liger"):
    impls[label]()
paths = {"ours_full_tile": impls["ours alt 0"].cubin_path}  # the cubin that just ran
for f in glob.glob(os.path.expanduser("~/.triton/cache/**/*.cubin"), recursive=True):
    if "swiglu_fused_gate_up" in f:
        paths["liger"] = f
        for ptx in glob.glob(os.path.join(os.path.dirname(f), "*.ptx")):
            (out / "liger.ptx").write_text(Path(ptx).read_text())
print(paths)
for name, path in paths.items():
    if path:
        sass = subprocess.run(["cuobjdump", "-sass", path], capture_output=True, text=True).stdout
        (out / f"{name}.sass").write_text(sass)
