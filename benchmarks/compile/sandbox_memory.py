"""Peak memory of nvcc under the compile sandbox: the sample kernels and ``#include "/dev/zero"``.

The include check refuses ``/dev/zero`` before nvcc starts; this script switches the check
off (a test double, never in the product) to show what the resource limits alone do to the
hostile case: before the sandbox, cc1plus grew past 13 GB resident and only the 60 s wall
timeout stopped it. It prints one JSON object and writes it to
``benchmarks/results/sandbox_memory.json``.

    python3 benchmarks/compile/sandbox_memory.py
"""

from __future__ import annotations

import json
import platform
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.records import Config  # noqa: E402
from workbench.core.template import KernelInstance  # noqa: E402
from workbench.engine.compiler import Compiler  # noqa: E402
from workbench.engine.sandbox import DEFAULT_LIMITS  # noqa: E402
from workbench.engine.source_policy import SourceCheck  # noqa: E402


class _UncheckedCompiler(Compiler):
    """The limits without the include check: only for measuring the limits."""

    def check(self, instance: Any) -> SourceCheck:
        return SourceCheck(())


def _row(label: str, result: Any) -> dict[str, Any]:
    return {"case": label, "ok": result.ok, "error_kind": result.error_kind,
            "summary": result.error_summary[:200], "compile_s": round(result.compile_s, 2),
            "peak_rss_mib": round(result.peak_rss_bytes / 2**20, 1)}


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        compiler = Compiler("sm_90a", cache_dir=cache)
        for name in ("silu_and_mul", "fused_add_rmsnorm", "merge_attn_states_lse"):
            folder = load_kernel_folder(ROOT / "sample_kernels" / name)
            instance = folder.template.render(folder.template.default_config(), folder.dtypes[0])
            rows.append(_row(f"{name} template defaults", compiler.compile(instance)))
        hostile = KernelInstance(name="zero", entry="k", config=Config(), dtype="f32", hash="zero",
                                 source='#include "/dev/zero"\nextern "C" __global__ void k() {}\n')
        refused = compiler.compile(hostile)
        rows.append(_row('#include "/dev/zero" (include check on)', refused))
        unchecked = _UncheckedCompiler("sm_90a", cache_dir=cache)
        rows.append(_row('#include "/dev/zero" (include check off, limits only)',
                         unchecked.compile(hostile)))
        version = compiler.version.splitlines()[-1]
    report = {"date_utc": datetime.now(UTC).isoformat(timespec="seconds"),
              "machine": f"{platform.machine()} CPU host (no GPU needed), {platform.system()}",
              "nvcc": version,
              "limits": {"address_space_mib": DEFAULT_LIMITS.address_space_bytes >> 20,
                         "cpu_s": DEFAULT_LIMITS.cpu_s,
                         "file_mib": DEFAULT_LIMITS.file_bytes >> 20,
                         "log_kib": DEFAULT_LIMITS.log_bytes >> 10,
                         "wall_s": compiler.timeout_s},
              "rows": rows}
    text = json.dumps(report, indent=1)
    print(text)
    out = ROOT / "benchmarks" / "results" / "sandbox_memory.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")


if __name__ == "__main__":
    main()
