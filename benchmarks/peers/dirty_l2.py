"""Where Triton's do_bench time goes: kernel durations and launch gaps after each flush.

Issue 18, item 6: under ``triton.testing.do_bench`` (256 MB zeroed before every repetition,
so the L2 is full of dirty lines) ours trailed the best peer at 16 of 36 rows while leading
by the harness (L2 evicted by a read). do_bench's number is an event pair around the call,
so it holds three things: the gap from the start event to the kernel's start (launch), the
kernel's own duration, and the tail to the end event. This script separates them: every
implementation of a row runs ``flush(); start.record(); fn(); end.record()`` a number of
times under ``torch.profiler`` (CUPTI activity records: each kernel's start and end on the
GPU clock), for three flushes:

* ``write``: do_bench's own: a 256 MB buffer zeroed (Triton's ``clear_cache``);
* ``read``: the harness's: a 2x-L2 buffer summed (clean lines);
* ``none``: nothing between repetitions.

Per (implementation, flush): the event pair's median (what do_bench reports under
``write``), the median kernel time (first kernel start to last kernel end of the call), the
median gap between the flush kernel's end and the call's first kernel, the host's time per
repetition, and the kernels' names. Ours is the pick of 2026-11-24's ``workbench
tune`` (read from its results), with and without PDL where the pick uses it.

    python benchmarks/peers/dirty_l2.py --out dirty_l2.json [--rows fused_add_rmsnorm:h_odd ...]

``--ncu-target KERNEL:SHAPE:IMPL`` instead runs one call after a do_bench flush inside an
NVTX range ``target`` (for ``ncu --replay-mode application --cache-control none
--nvtx --nvtx-include target/``: the counters of a kernel that starts with a dirty L2).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from peer_methods import specialised_template, with_unseen  # noqa: E402
from peers import PEERS, OurKernel, Problem  # noqa: E402

from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.records import Config  # noqa: E402
from workbench.engine.compiler import Compiler  # noqa: E402

PEERS_H100 = ROOT / "benchmarks" / "results" / "peers" / "h100"
#: The `peers.py --methods --tune 64` runs of 2026-11-24 whose picks this study re-times.
TUNED_2026_11_24 = tuple(PEERS_H100 / f"peers-tuned-{name}-2026-11-24.json"
                         for name in ("heldout-tune", "merge-tune", "rms-tune2", "silu-tune3"))
#: The rows where ours trailed the best peer under do_bench on 2026-11-24, and three
#: where it led under every method (controls).
DEFAULT_ROWS = (
    "fused_add_rmsnorm:h_odd", "fused_add_rmsnorm:u_short_rows", "fused_add_rmsnorm:decode",
    "fused_add_rmsnorm:u_odd", "fused_add_rmsnorm:odd",
    "merge_attn_states_lse:u_one_token", "merge_attn_states_lse:h_mid",
    "merge_attn_states_lse:h_one_token", "merge_attn_states_lse:prefill",
    "silu_and_mul:u_mid", "silu_and_mul:h_mid", "silu_and_mul:u_one_token", "silu_and_mul:odd",
    # controls
    "fused_add_rmsnorm:h_mid", "merge_attn_states_lse:h_gqa", "silu_and_mul:h_qwen",
)
FLUSHES = ("write", "read", "none")
#: GPU cycles the gate sleeps before the enqueued repetitions start (about 40 ms)
GATE_CYCLES = 80_000_000
SKIP_PEERS = ("torch eager", "liger split")
#: (kernel, shape) -> knob values over the pick, each timed as "ours alt N" (--extra)
EXTRA: dict[tuple[str, str], list[dict[str, int]]] = {}
#: nvcc flags of more builds of every --extra config, one tuple per build (--alt-flags)
ALT_FLAGS: tuple[tuple[str, ...], ...] = ()


def tuned_picks() -> dict[tuple[str, str], dict[str, Any]]:
    """(kernel, shape) -> the config ``workbench tune`` picked there on 2026-11-24."""
    picks: dict[tuple[str, str], dict[str, Any]] = {}
    for path in TUNED_2026_11_24:
        for row in json.loads(path.read_text())["rows"]:
            best = row["impls"].get("workbench best", {})
            if "config" in best:
                picks[(row["kernel"], row["shape"])] = best["config"]
    return picks


def folder_for(kernel: str) -> Any:
    return with_unseen(load_kernel_folder(ROOT / "sample_kernels" / kernel))


Outputs = Callable[[], dict[str, Any]]


def implementations(compiler: Compiler, kernel: str, shape: str, pick: dict[str, Any],
                    dtype: str = "bf16",
                    ) -> tuple[Problem, dict[str, Callable[[], Any]], dict[str, Outputs]]:
    """The row's implementations (ours, its variants, the baseline, the peers) and, per
    label, what reads back its outputs for the correctness check."""
    folder = folder_for(kernel)
    p = Problem(folder, shape, dtype)
    # knobs added to the template after 2026-11-24 take their defaults (off)
    pick = {**folder.template.default_config(), **pick}
    impls: dict[str, Callable[[], Any]] = {
        "baseline": OurKernel(compiler, folder.baseline, Config(), p),
        "ours": OurKernel(compiler, folder.template, Config(pick), p)}
    if int(pick.get("PDL", 0) or 0):
        impls["ours PDL 0"] = OurKernel(compiler, folder.template, Config({**pick, "PDL": 0}), p)
    # --extra configs of ours; compile-time size knobs offer the shape's own value
    specialised = specialised_template(folder.template, folder.shapes[shape])
    for i, extra in enumerate(EXTRA.get((kernel, shape), [])):
        impls[f"ours alt {i}"] = OurKernel(compiler, specialised, Config({**pick, **extra}), p)
        for flags in ALT_FLAGS:  # the same config built with other nvcc flags (--alt-flags)
            impls[f"ours alt {i} {' '.join(flags)}"] = OurKernel(
                Compiler(compiler.arch, flags=flags), specialised, Config({**pick, **extra}), p)
    ours_out: Outputs = lambda: {n: p.tensors[n] for n in p.out_names()}  # noqa: E731
    outputs = dict.fromkeys(impls, ours_out)
    for label, (fn, peer_out) in PEERS[kernel](p).items():
        if label not in SKIP_PEERS:
            impls[label], outputs[label] = fn, peer_out
    return p, impls, outputs


class Flushes:
    def __init__(self) -> None:
        l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 * 2**20))
        self.cache = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda")  # do_bench's
        self.readbuf = torch.ones(2 * l2 // 4, dtype=torch.float32, device="cuda")
        self.sink = torch.empty((), dtype=torch.float32, device="cuda")

    def spin_up(self, seconds: float = 0.2) -> None:
        """Keep the GPU busy for ``seconds`` so its clocks are up before a timing."""
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            for _ in range(10):
                self.cache.zero_()
            torch.cuda.synchronize()

    def get(self, name: str) -> Callable[[], Any] | None:
        if name == "write":
            return self.cache.zero_
        if name == "read":
            return lambda: torch.sum(self.readbuf, dim=0, out=self.sink)
        return None


def kernel_records(trace: Path) -> list[tuple[str, float, float]]:
    """(name, start us, end us) of every GPU kernel in a chrome trace, in start order."""
    events = json.loads(trace.read_text()).get("traceEvents", [])
    out = [(e["name"], float(e["ts"]), float(e["ts"]) + float(e["dur"]))
           for e in events if e.get("cat") == "kernel" and "dur" in e]
    return sorted(out, key=lambda k: k[1])


def profile(fn: Callable[[], Any], flush: Callable[[], Any] | None, reps: int,
            workdir: Path, tag: str) -> dict[str, Any]:
    for _ in range(5):
        if flush is not None:
            flush()
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        # the GPU waits while the host enqueues every repetition, so no host delay lands
        # between a flush and the call (the profiler's own callbacks slow each launch)
        torch.cuda._sleep(GATE_CYCLES)
        t0 = time.perf_counter()
        for i in range(reps):
            if flush is not None:
                flush()
            starts[i].record()
            fn()
            ends[i].record()
        host_us = (time.perf_counter() - t0) * 1e6 / reps
        torch.cuda.synchronize()
    trace = workdir / f"{tag}.json"
    prof.export_chrome_trace(str(trace))
    events_us = [1e3 * s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
    records = kernel_records(trace)
    trace.unlink()
    result: dict[str, Any] = {"reps": reps, "host_us_per_rep": round(host_us, 2),
                              "event_median_us": statistics.median(events_us)}
    if flush is None:
        # no flush kernels to split on: kernels per call from the count, durations summed
        per = max(1, round(len(records) / reps))
        calls = [records[i:i + per] for i in range(0, len(records) - per + 1, per)]
        gaps: list[float] = [b[0][1] - a[-1][2] for a, b in itertools.pairwise(calls)]
    else:
        flush_name = _flush_name(records, reps)
        calls, gaps = [], []
        current: list[tuple[str, float, float]] | None = None
        last_flush_end = 0.0
        for rec in records:
            if rec[0] == flush_name:
                if current:
                    calls.append(current)
                current, last_flush_end = [], rec[2]
            elif current is not None:
                if not current:
                    gaps.append(rec[1] - last_flush_end)
                current.append(rec)
        if current:
            calls.append(current)
    if calls:
        result["kernels_per_call"] = statistics.median(len(c) for c in calls)
        result["kernel_median_us"] = statistics.median(c[-1][2] - c[0][1] for c in calls)
        result["kernel_sum_median_us"] = statistics.median(sum(k[2] - k[1] for k in c)
                                                           for c in calls)
        result["names"] = sorted({k[0][:80] for c in calls for k in c})[:4]
    if gaps:
        result["gap_median_us"] = statistics.median(gaps)
    return result


def _flush_name(records: list[tuple[str, float, float]], reps: int) -> str:
    """The flush's kernel: the name seen at least ``reps`` times with the longest duration."""
    by_name: dict[str, list[float]] = {}
    for name, start, end in records:
        by_name.setdefault(name, []).append(end - start)
    often = {n: statistics.median(d) for n, d in by_name.items() if len(d) >= reps}
    return max(often, key=lambda n: often[n])


def do_bench_us(fn: Callable[[], Any]) -> float:
    import triton.testing

    return 1e3 * float(triton.testing.do_bench(fn, return_mode="median"))


def run_rows(rows: list[str], reps: int, out: Path) -> None:
    """do_bench for every row first (two interleaved rounds, before any profiler has run:
    CUPTI's callbacks stay attached once a profiler started and slow every later launch),
    then the profiled repetitions under each flush."""
    picks = tuned_picks()
    compiler = Compiler("sm_90a")
    flushes = Flushes()
    doc: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
        "cuda": torch.version.cuda, "method": " ".join(__doc__.split("\n\n")[1].split()),
        "rows": []}
    workdir = Path(tempfile.mkdtemp(prefix="dirty-l2-"))
    cases: list[tuple[dict[str, Any], Problem, dict[str, Callable[[], Any]]]] = []
    for spec in rows:
        kernel, shape = spec.split(":")
        pick = picks.get((kernel, shape))
        if pick is None:
            print(f"{spec}: no 2026-11-24 pick", flush=True)
            continue
        row: dict[str, Any] = {"kernel": kernel, "shape": shape, "pick": pick, "impls": {}}
        doc["rows"].append(row)
        try:
            p, impls, outputs = implementations(compiler, kernel, shape, pick)
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"[:400]
            print(f"{spec}: {row['error']}", flush=True)
            continue
        for label, fn in impls.items():  # every implementation checked before it is timed
            try:
                p.restore()
                for arg in p.folder.args:  # outputs poisoned: a config that skips a write fails
                    if arg.role == "out":
                        p.tensors[arg.name].fill_(float("nan"))
                fn()
                torch.cuda.synchronize()
                ok, err = p.check(outputs[label]())
                row["impls"][label] = {"do_bench_rounds_us": [], "correct": ok,
                                       "max_abs_err": err}
                if not ok:
                    row["impls"][label]["error"] = f"wrong result (max abs error {err:.3g})"
            except Exception as exc:
                row["impls"][label] = {"error": f"{type(exc).__name__}: {exc}"[:400]}
        cases.append((row, p, impls))
    for _rnd in range(2):
        for row, p, impls in cases:
            for label, fn in impls.items():
                entry = row["impls"][label]
                if "error" in entry:
                    continue
                try:
                    p.restore()
                    flushes.spin_up()
                    entry["do_bench_rounds_us"].append(do_bench_us(fn))
                except Exception as exc:
                    entry["error"] = f"{type(exc).__name__}: {exc}"[:400]
                    torch.cuda.synchronize()
        out.write_text(json.dumps(doc, indent=1))
    for row, p, impls in cases:
        for label, fn in impls.items():
            entry = row["impls"][label]
            if "error" in entry:
                print(f"{row['kernel']:22s} {row['shape']:13s} {label:16s} {entry['error']}")
                continue
            entry["do_bench_us"] = statistics.median(entry["do_bench_rounds_us"])
            try:
                p.restore()
                flushes.spin_up()
                for name in FLUSHES:
                    entry[name] = profile(fn, flushes.get(name), reps, workdir,
                                          f"{row['kernel']}-{row['shape']}-{name}")
            except Exception as exc:
                entry["error"] = f"{type(exc).__name__}: {exc}"[:400]
                torch.cuda.synchronize()
            w, r = entry.get("write", {}), entry.get("read", {})
            print(f"{row['kernel']:22s} {row['shape']:13s} {label:16s} do_bench "
                  f"{entry['do_bench_us']:6.2f} | write: gap {w.get('gap_median_us', 0):5.2f} "
                  f"kernel {w.get('kernel_median_us', 0):6.2f} | read: gap "
                  f"{r.get('gap_median_us', 0):5.2f} kernel {r.get('kernel_median_us', 0):6.2f}"
                  f" | none: kernel {entry.get('none', {}).get('kernel_median_us', 0):6.2f}"
                  + (f" ERROR {entry['error']}" if "error" in entry else ""), flush=True)
        out.write_text(json.dumps(doc, indent=1))


def ncu_target(spec: str) -> None:
    """One call of IMPL after do_bench's flush, inside the NVTX range ``target``."""
    kernel, shape, label = spec.split(":", 2)
    picks = tuned_picks()
    _p, impls, _outputs = implementations(Compiler("sm_90a"), kernel, shape,
                                          picks[(kernel, shape)])
    fn = impls[label]
    flushes = Flushes()
    for _ in range(3):  # compiles and JITs outside the range
        fn()
    torch.cuda.synchronize()
    flushes.cache.zero_()
    torch.cuda.nvtx.range_push("target")
    fn()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="dirty_l2.json")
    ap.add_argument("--rows", nargs="*", default=list(DEFAULT_ROWS), metavar="KERNEL:SHAPE")
    ap.add_argument("--reps", type=int, default=60)
    ap.add_argument("--ncu-target", metavar="KERNEL:SHAPE:IMPL")
    ap.add_argument("--extra", nargs="*", default=[], metavar="KERNEL:SHAPE:K=V,K=V",
                    help="more configs of ours at a row: knob values over the pick")
    ap.add_argument("--skip-peers", nargs="*", default=[], metavar="LABEL",
                    help="peers not to time (besides torch eager and liger split)")
    ap.add_argument("--alt-flags", action="append", default=[], metavar="'FLAG ...'",
                    help="also time every --extra config built with these nvcc flags "
                         "(repeat for more builds)")
    args = ap.parse_args()
    global SKIP_PEERS, ALT_FLAGS
    SKIP_PEERS = (*SKIP_PEERS, *args.skip_peers)
    ALT_FLAGS = tuple(tuple(build.split()) for build in args.alt_flags)
    for spec in args.extra:
        kernel, shape, knobs = spec.split(":", 2)
        EXTRA.setdefault((kernel, shape), []).append(
            {k: int(v) for k, _, v in (kv.partition("=") for kv in knobs.split(","))})
    if args.ncu_target:
        ncu_target(args.ncu_target)
        return 0
    run_rows(args.rows, args.reps, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
