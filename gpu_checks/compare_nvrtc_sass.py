"""Is NVRTC's SASS nvcc's? Compile N configs of each kernel both ways and diff ``cuobjdump -sass``.

For each kernel folder, a seeded sample of ``--count`` configs (one shape, the first dtype) is
compiled three times into fresh caches: nvcc alone (``WORKBENCH_NVRTC=off``), NVRTC for every
kernel (``all``) and NVRTC where it is expected to give nvcc's code (``on``: no shared
memory). The two cubins of each config (off, all) are disassembled with ``cuobjdump -sass``
and compared line for line; the ptxas usage of each is kept. ``on_uses_nvrtc`` says whether
``on`` compiled the config with NVRTC: every such config should have the same SASS.

    python gpu_checks/compare_nvrtc_sass.py --out OUT [--count 16] [--arch sm_90a] \\
        [--kernels sample_kernels/fused_add_rmsnorm,sample_kernels/silu_and_mul,...]

Writes OUT/compare-nvrtc-sass.json (a summary per kernel and one row per config) and, for each
config whose SASS differs, OUT/<kernel>-<n>.diff (the first 200 lines of a unified diff).
Needs nvcc, cuobjdump and a libnvrtc of nvcc's release (``pip install
nvidia-cuda-nvrtc==13.0.*``); no GPU is used.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder.load import load_kernel_folder  # noqa: E402
from workbench.engine.compiler import Compiler, CompileResult  # noqa: E402

DEFAULT_KERNELS = ("sample_kernels/fused_add_rmsnorm", "sample_kernels/silu_and_mul",
                   "sample_kernels/merge_attn_states_lse", "benchmarks/corpus/transpose",
                   "benchmarks/corpus/rms_norm", "benchmarks/corpus/gelu",
                   "benchmarks/corpus_compute/gemm_smem",
                   "benchmarks/corpus_compute/stencil3d")


def sass(cubin: str | None) -> list[str]:
    """``cuobjdump -sass`` of a cubin, without its blank lines."""
    if cubin is None:
        return []
    done = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True,
                          check=True)
    return [line.rstrip() for line in done.stdout.splitlines() if line.strip()]


def usage(result: CompileResult) -> dict[str, Any] | None:
    return dataclasses.asdict(result.usage) if result.usage is not None else None


def compile_all(mode: str, instances: list[Any], folder: Path, arch: str,
                cache: Path) -> dict[str, CompileResult]:
    compiler = Compiler(arch, cache_dir=cache / mode, nvrtc=mode, include_dir=folder)
    return {r.instance_hash: r for r in compiler.compile_many(instances,
                                                              workers=os.cpu_count())}


def compare_kernel(folder: Path, count: int, arch: str, seed: int, out: Path,
                   cache: Path) -> dict[str, Any]:
    kernel = load_kernel_folder(folder)
    dtype, shape = kernel.dtypes[0], kernel.shape_names[0]
    space = kernel.space(shape, dtype)
    configs = space.sample(min(count, len(space)), seed)
    instances = [kernel.template.render(config, dtype) for config in configs]
    by_mode = {mode: compile_all(mode, instances, folder, arch, cache)
               for mode in ("off", "all", "on")}
    rows = []
    for n, (config, instance) in enumerate(zip(configs, instances, strict=True)):
        nvcc, nvrtc, on = (by_mode[m][instance.hash] for m in ("off", "all", "on"))
        row: dict[str, Any] = {
            "config": dict(config), "nvcc_ok": nvcc.ok, "nvrtc_compiled": nvrtc.compiler,
            "on_uses_nvrtc": on.compiler == "nvrtc", "nvcc_usage": usage(nvcc),
            "nvrtc_usage": usage(nvrtc)}
        if nvcc.ok and nvrtc.ok and nvrtc.compiler == "nvrtc":
            a, b = sass(nvcc.cubin_path), sass(nvrtc.cubin_path)
            row["sass_same"] = a == b
            row["sass_lines"] = [len(a), len(b)]
            if a != b:
                diff = list(difflib.unified_diff(a, b, "nvcc", "nvrtc", lineterm=""))
                row["sass_diff_lines"] = sum(1 for line in diff
                                             if line[:1] in "+-" and line[:3] not in "+++---")
                name = f"{folder.name}-{n}.diff"
                (out / name).write_text("\n".join(diff[:200]) + "\n")
                row["diff_file"] = name
        rows.append(row)
    compared = [r for r in rows if "sass_same" in r]
    return {"kernel": str(folder.relative_to(ROOT)), "shape": shape, "dtype": dtype,
            "configs": len(rows), "nvrtc_compiled": len(compared),
            "sass_same": sum(r["sass_same"] for r in compared),
            "usage_same": sum(r["nvcc_usage"] == r["nvrtc_usage"] for r in compared),
            "on_uses_nvrtc": sum(r["on_uses_nvrtc"] for r in rows),
            "on_uses_nvrtc_and_sass_differs": sum(
                r["on_uses_nvrtc"] and not r.get("sass_same", True) for r in rows),
            "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--count", type=int, default=16)
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kernels", default=",".join(DEFAULT_KERNELS))
    args = parser.parse_args()
    if shutil.which("cuobjdump") is None:
        sys.exit("cuobjdump is not on PATH (it ships with the CUDA toolkit)")
    args.out.mkdir(parents=True, exist_ok=True)
    summaries = []
    with tempfile.TemporaryDirectory(prefix="nvrtc-sass-") as cache:
        for name in args.kernels.split(","):
            summary = compare_kernel(ROOT / name, args.count, args.arch, args.seed, args.out,
                                     Path(cache))
            summaries.append(summary)
            print({k: v for k, v in summary.items() if k != "rows"}, flush=True)
    nvcc = Compiler(args.arch, cache_dir=tempfile.gettempdir(), nvrtc="all").version
    (args.out / "compare-nvrtc-sass.json").write_text(json.dumps(
        {"arch": args.arch, "count": args.count, "seed": args.seed, "compiler": nvcc,
         "kernels": summaries}, indent=1) + "\n")
    print(f"wrote {args.out / 'compare-nvrtc-sass.json'}")


if __name__ == "__main__":
    main()
