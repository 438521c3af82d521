"""Kernel durations of ours and a peer by Nsight Compute, where event times disagree.

CUDA events bracket a launch's start and completion as well as the kernel (about 1.4 us on
the H100 for a 5 us kernel, see ``ncu_repeatability.py``). When a peer beats our config by
a percent or two in the events harness, this asks whether its *kernel* is faster or its
launch is cheaper: each implementation runs ``--launches`` times inside an NVTX range in a
fresh process under ``ncu`` (caches flushed before every profiled kernel, clocks as they
are), and every kernel inside the range is measured (``gpu__time_duration.sum``). Run on
the GPU machine:

    python benchmarks/peers/peers_ncu.py --kernel merge_attn_states_lse --shapes decode large \\
        --impls "workbench best" flashinfer --out peers_ncu.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

RANGE = "timed"


def our_config(kernel: str, shape: str, dtype: str, peers_json: str | None) -> dict[str, Any] | None:
    """The config peers.py chose as "workbench best" for this case (None: not in the file)."""
    if not peers_json:
        return None
    for row in json.loads(Path(peers_json).read_text())["rows"]:
        if (row["kernel"], row["shape"], row["dtype"]) == (kernel, shape, dtype):
            config = row["impls"].get("workbench best", {}).get("config")
            return dict(config) if config else None
    return None


def drive(kernel: str, shape: str, dtype: str, impl: str, launches: int,
          config: dict[str, Any] | None) -> None:
    """Launch one implementation ``launches`` times inside the NVTX range (under ncu)."""
    import torch
    from peers import PEERS, OurKernel, Problem, best_recorded

    from workbench.core.kernel_folder import load_kernel_folder
    from workbench.core.records import Config
    from workbench.engine.compiler import Compiler

    folder = load_kernel_folder(ROOT / "sample_kernels" / kernel)
    p = Problem(folder, shape, dtype)
    compiler = Compiler("sm_90a")
    fn: Callable[[], Any]
    if impl == "workbench best":
        best = best_recorded(folder, shape, dtype)
        chosen = (Config({**folder.template.default_config(), **config}) if config
                  else best[0][0] if best else folder.template.default_config())
        fn = OurKernel(compiler, folder.template, chosen, p)
    elif impl == "sglang design (our baseline)":
        fn = OurKernel(compiler, folder.baseline, Config(), p)
    else:
        fn = PEERS[kernel](p)[impl][0]
    for _ in range(3):  # JIT compilation and first-use work stay outside the range
        fn()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(RANGE)
    for _ in range(launches):
        p.restore()
        fn()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


DURATION = "gpu__time_duration.sum"


def profile(kernel: str, shape: str, dtype: str, impl: str, launches: int,
            metrics: list[str], config: dict[str, Any] | None = None,
            cache: str = "all") -> dict[str, Any]:
    command = [str(shutil.which("ncu")), "--csv", "--clock-control", "none", "--cache-control",
               cache, "--nvtx", "--nvtx-include", f"{RANGE}/", "--metrics",
               ",".join([DURATION, *metrics]), sys.executable, __file__, "--drive", "--kernel", kernel,
               "--shapes", shape, "--dtypes", dtype, "--impls", impl, "--launches",
               str(launches), *(("--config", json.dumps(config)) if config else ())]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        return {"error": f"ncu exited with {done.returncode}: {done.stderr[-300:]}"}
    from workbench.engine.ncu import NCU_TIME_US, ncu_csv_rows

    rows = ncu_csv_rows(done.stdout)
    if not rows:
        return {"error": "no kernels profiled", "stdout_tail": done.stdout[-300:]}
    by_name: dict[str, list[float]] = {}
    other: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        name, metric = row["Kernel Name"][:80], row["Metric Name"]
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except ValueError:
            continue
        if metric == DURATION:
            by_name.setdefault(name, []).append(value * NCU_TIME_US[row["Metric Unit"].strip()])
        else:
            unit = row["Metric Unit"].strip()
            other.setdefault(name, {}).setdefault(f"{metric} ({unit})", []).append(value)
    kernels = {name: {"launches": len(v), "median_us": statistics.median(v), "min_us": min(v),
                      **{m: statistics.median(x) for m, x in other.get(name, {}).items()}}
               for name, v in by_name.items()}
    # restore copies of in-place arguments are memcpys, not kernels: what remains per launch
    # of the implementation is its own kernels (one, or several for a multi-kernel peer)
    per_call = sum(k["median_us"] * k["launches"] for k in kernels.values()) / launches
    return {"kernels": kernels, "median_us_per_call": per_call}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel", default="merge_attn_states_lse")
    ap.add_argument("--shapes", nargs="+", default=["decode", "large"])
    ap.add_argument("--dtypes", nargs="+", default=["bf16"])
    ap.add_argument("--impls", nargs="+",
                    default=["workbench best", "sglang design (our baseline)", "flashinfer"])
    ap.add_argument("--launches", type=int, default=30)
    ap.add_argument("--metrics", nargs="*", default=[],
                    help="more ncu metrics per kernel (medians), e.g. dram__bytes_read.sum")
    ap.add_argument("--peers-json",
                    help="profile the config peers.py chose as workbench best (default: the "
                         "recording's fastest)")
    ap.add_argument("--cache", choices=["all", "none"], default="all",
                    help="ncu --cache-control: all (flushed before each kernel) or none "
                         "(warm: what a CUDA graph of back-to-back calls sees)")
    ap.add_argument("--config", help=argparse.SUPPRESS)
    ap.add_argument("--drive", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.drive:
        drive(args.kernel, args.shapes[0], args.dtypes[0], args.impls[0], args.launches,
              json.loads(args.config) if args.config else None)
        return 0
    rows = []
    for shape in args.shapes:
        for dtype in args.dtypes:
            for impl in args.impls:
                config = (our_config(args.kernel, shape, dtype, args.peers_json)
                          if impl == "workbench best" else None)
                got = profile(args.kernel, shape, dtype, impl, args.launches, args.metrics, config,
                              args.cache)
                rows.append({"kernel": args.kernel, "shape": shape, "dtype": dtype,
                             "impl": impl, **({"config": config} if config else {}), **got})
                shown = (f"{got['median_us_per_call']:.3f} us per call"
                         if "median_us_per_call" in got else got.get("error"))
                print(f"{args.kernel:22s} {shape:8s} {dtype} {impl:30s} {shown}", flush=True)
                for name, k in got.get("kernels", {}).items():
                    extra = {m: v for m, v in k.items() if "(" in m}
                    if extra:
                        print(f"    {name[:60]}: {json.dumps(extra)}", flush=True)
                if args.out:  # after every row: a run cut short keeps what it measured
                    Path(args.out).write_text(json.dumps(
                        {"date": dt.date.today().isoformat(), "launches": args.launches,
                         "method": f"ncu gpu__time_duration.sum, --cache-control "
                                   f"{args.cache}, --clock-control none",
                         "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
