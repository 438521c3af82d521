"""Stage 1 on compute-bound and tiled kernels (issue 28): the templater's route against an
expert's hand-written template of the same kernel, both searched by the same stage 2.

For every kernel folder of benchmarks/corpus_compute (``--set compute``) and then, last
and reported apart, benchmarks/corpus_compute_unseen (``--set unseen``) and
benchmarks/corpus_compute_unseen2 (``--set unseen2``: four kernels by another hand, kept
from the templater's authors until measured), benchmarks/corpus_compute_unseen3
(``--set unseen3``: six more, by two other hands, held back the same way),
benchmarks/corpus_compute_unseen4 (``--set unseen4``: six more, held back the same way),
benchmarks/corpus_compute_unseen5 (``--set unseen5``: six more, held back the same way),
benchmarks/corpus_compute_unseen6 (``--set unseen6``: six more, held back the same way),
benchmarks/corpus_compute_unseen7 (``--set unseen7``: six more, held back the same way),
benchmarks/corpus_compute_unseen8 (``--set unseen8``: six more, held back the same way),
benchmarks/corpus_compute_unseen9 (``--set unseen9``: six more, held back the same way),
benchmarks/corpus_compute_unseen10 (``--set unseen10``: six more, held back the same way),
benchmarks/corpus_compute_unseen11 (``--set unseen11``: six more, held back the same way),
benchmarks/corpus_compute_unseen12 (``--set unseen12``: six more, held back the same way),
benchmarks/corpus_compute_unseen13 (``--set unseen13``: six more, held back the same way),
benchmarks/corpus_compute_unseen14 (``--set unseen14``: six more, held back the same way),
benchmarks/corpus_compute_unseen15 (``--set unseen15``: six more, held back the same way),
benchmarks/corpus_compute_unseen16 (``--set unseen16``: six more, held back the same way),
benchmarks/corpus_compute_unseen17 (``--set unseen17``: six more, held back the same way),
benchmarks/corpus_compute_unseen18 (``--set unseen18``: six more, held back the same way),
benchmarks/corpus_compute_unseen19 (``--set unseen19``: six more, held back the same way),
benchmarks/corpus_compute_unseen20 (``--set unseen20``: six more, held back the same way),
benchmarks/corpus_compute_unseen21 (``--set unseen21``: six more, held back the same way),
benchmarks/corpus_compute_unseen22 (``--set unseen22``: six more, held back the same way),
benchmarks/corpus_compute_unseen23 (``--set unseen23``: six more, held back the same way),
benchmarks/corpus_compute_unseen24 (``--set unseen24``: six more, held back the same way),
benchmarks/corpus_compute_unseen25 (``--set unseen25``: six more, held back the same way),
benchmarks/corpus_compute_unseen26 (``--set unseen26``: six more, held back the same way),
benchmarks/corpus_compute_unseen27 (``--set unseen27``: six more, held back the same way) and
benchmarks/corpus_compute_unseen28 (``--set unseen28``: six more, held back the same way):

(a) the kernel as written (the folder's ``[baseline]``), timed inside each tune below;
(b) the user's route: a copy of the ``workbench init``-made folder (no ``[template]``)
    through ``workbench propose --write`` (the offline templater, the space-wide gate and
    its repair on this GPU), then a guided tune of what it wrote;
(c) the folder's ``expert/`` copy, whose ``[template]`` was written by hand from the
    family's known optimisations, tuned the same way with the same budget.

Tunes, gates and copy timings are corpus_bench.bench_kernel's (imported, not copied).
Reported per kernel: the knobs the templater lifted, the gate's verdict, the speedup of
(b) and (c) over (a), the ratio (b)/(c), and % of a device-to-device copy of the same
bytes for the memory-bound ones.

    python3 benchmarks/stage1_corpus.py --out $OUT [--set compute,unseen] [--budget 40]
        [--conditions read] [--deadline-s 420] [--kernels a,b]
    python3 benchmarks/stage1_corpus.py --table $OUT/stage1_compute.json

Writes $OUT/stage1_<set>.json (device, driver, CUDA, date, the run's settings) after every
kernel; the SQLite stores and the templater's folders go under $OUT/stage1_work.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from corpus_bench import bench_kernel, environment  # noqa: E402

from workbench.search.strategies import DEFAULT_STRATEGY, strategy_names  # noqa: E402

SETS = {"compute": ROOT / "benchmarks" / "corpus_compute",
        "unseen": ROOT / "benchmarks" / "corpus_compute_unseen",
        "unseen2": ROOT / "benchmarks" / "corpus_compute_unseen2",
        "unseen3": ROOT / "benchmarks" / "corpus_compute_unseen3",
        "unseen4": ROOT / "benchmarks" / "corpus_compute_unseen4",
        "unseen5": ROOT / "benchmarks" / "corpus_compute_unseen5",
        "unseen6": ROOT / "benchmarks" / "corpus_compute_unseen6",
        "unseen7": ROOT / "benchmarks" / "corpus_compute_unseen7",
        "unseen8": ROOT / "benchmarks" / "corpus_compute_unseen8",
        "unseen9": ROOT / "benchmarks" / "corpus_compute_unseen9",
        "unseen10": ROOT / "benchmarks" / "corpus_compute_unseen10",
        "unseen11": ROOT / "benchmarks" / "corpus_compute_unseen11",
        "unseen12": ROOT / "benchmarks" / "corpus_compute_unseen12",
        "unseen13": ROOT / "benchmarks" / "corpus_compute_unseen13",
        "unseen14": ROOT / "benchmarks" / "corpus_compute_unseen14",
        "unseen15": ROOT / "benchmarks" / "corpus_compute_unseen15",
        "unseen16": ROOT / "benchmarks" / "corpus_compute_unseen16",
        "unseen17": ROOT / "benchmarks" / "corpus_compute_unseen17",
        "unseen18": ROOT / "benchmarks" / "corpus_compute_unseen18",
        "unseen19": ROOT / "benchmarks" / "corpus_compute_unseen19",
        "unseen20": ROOT / "benchmarks" / "corpus_compute_unseen20",
        "unseen21": ROOT / "benchmarks" / "corpus_compute_unseen21",
        "unseen22": ROOT / "benchmarks" / "corpus_compute_unseen22",
        "unseen23": ROOT / "benchmarks" / "corpus_compute_unseen23",
        "unseen24": ROOT / "benchmarks" / "corpus_compute_unseen24",
        "unseen25": ROOT / "benchmarks" / "corpus_compute_unseen25",
        "unseen26": ROOT / "benchmarks" / "corpus_compute_unseen26",
        "unseen27": ROOT / "benchmarks" / "corpus_compute_unseen27",
        "unseen28": ROOT / "benchmarks" / "corpus_compute_unseen28"}
#: Kernels whose speed is bounded by DRAM bandwidth: reported as % of a copy too.
MEMORY_BOUND = frozenset({"partial_sum", "warp_row", "stencil3d", "gauss5", "colsum_partials",
                          "sse_partials", "row_l2norm", "heat_step13",
                          "s8_dot_blocks", "row_logsumexp", "diffuse7_var",
                          "colfilter13", "band_count", "rmsnorm_f16w", "wave2d_o4",
                          "dwconv3_nhwc", "moments_partials", "row_top1", "box27_smooth",
                          "hist64_partials", "csr_spmv_warp", "nchw_to_nhwc_affine",
                          "dilated_corr4", "amax_f16_partials", "row_cosine", "row_cumsum",
                          "lse_partials", "gemv_q4_rows", "gemvt_f16_batched",
                          "segment_sums", "wht1024_rows", "jacobi9_torus",
                          "softmax_lenmask", "argmin_chunks", "dwconv5_nchw",
                          "maxpool3s2_nchw", "median3x3_clamp",
                          "resize_bilinear_f16", "redblack_red_sweep",
                          "xent_rows_f16", "corr5x5_perimg", "lnbwd_colpartials",
                          "star13_o2", "rowl1_scale_warp", "dilate5_tile",
                          "dct8x8_blocks", "welford_rows_warp", "conv5x5_rgb_luma",
                          "aniso9_diffuse_cg", "conv3x3_s2_sat", "row_firsthits_warp",
                          "sobel_magdir_tile", "cummax_rows_cg", "pixel_shuffle_r2",
                          "adamw_step", "lbm_d2q9_pull", "nv12_to_rgba",
                          "rope_rotate_f16", "masked_fill_scale",
                          "huber_partials_gs", "logsoftmax_h16_warp", "take_rows_i64",
                          "minmax_sum_partials", "rowquant_h16_s8", "varcoef7_zmarch",
                          "mse_i16_partials", "layernorm_rows_yw", "jacobi7_poisson_flat",
                          "normpair_partials", "knn_dist_h16_warp", "box27_aniso_dacc"})
PROPOSE_TIMEOUT_S = 240


def kernel_names(root: Path, subset: str) -> list[str]:
    """The set's kernel folders (those with a kernel.toml), or the named subset of them."""
    names = sorted(p.name for p in root.iterdir() if (p / "kernel.toml").is_file())
    wanted = [n for n in subset.split(",") if n]
    return [n for n in names if n in wanted] if wanted else names


def propose_route(plain: Path, work: Path) -> dict[str, Any]:
    """``workbench propose --write`` on a copy of the plain folder (its expert/ left out),
    as a user runs it: exit status, the gate's line, the transforms' notes, wall time."""
    dest = work / plain.name
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(plain, dest, ignore=shutil.ignore_patterns("expert", "__pycache__"))
    cmd = [sys.executable, "-m", "workbench.cli", "propose", str(dest), "--write",
           "--store", str(work / f"{plain.name}_propose.sqlite")]
    t0 = time.monotonic()
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=PROPOSE_TIMEOUT_S,
                             cwd=ROOT, check=False)
        rc, text = run.returncode, run.stdout + run.stderr
    except subprocess.TimeoutExpired as exc:
        rc = None
        text = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        text += f"\n(timed out after {PROPOSE_TIMEOUT_S} s)"
    lines = text.splitlines()
    doc: dict[str, Any] = {
        "exit": rc, "wall_s": round(time.monotonic() - t0, 1), "folder": str(dest),
        "gate": next((ln[len("gate: "):] for ln in lines if ln.startswith("gate: ")), None),
        "validation": next((ln[len("validation: "):] for ln in lines
                            if ln.startswith("validation: ")), None),
        "transforms": [ln.strip()[2:] for ln in lines if ln.startswith("  - ")][:40],
        "last_line": lines[-1] if lines else "",
    }
    doc["written"] = rc == 0 and "[template]" in (dest / "kernel.toml").read_text()
    return doc


def speedup(route: dict[str, Any]) -> float | None:
    tune = route.get("tune") or {}
    return tune.get("speedup")


def bench_pair(name: str, root: Path, work: Path, budget: int,
               conditions: tuple[str, ...] | None,
               routes: tuple[str, ...] = ("templater", "expert"),
               strategy: str = "guided") -> dict[str, Any]:
    """One kernel: the templater's route (b) and the expert's (c), each tuned at the large
    shape with the same budget; (a) is each tune's own baseline timing. ``routes`` limits
    the run to one of them (``expert`` alone checks the hand-written spaces first)."""
    doc: dict[str, Any] = {"kernel": name, "memory_bound": name in MEMORY_BOUND}
    proposed: dict[str, Any] = (propose_route(root / name, work / "templater_folders")
                               if "templater" in routes else {"written": False, "last_line": "not run"})
    templater: dict[str, Any] = {"propose": proposed}
    if "templater" not in routes:
        templater["error"] = "route not run (--routes)"
    elif proposed["written"]:
        try:
            templater.update(bench_kernel(Path(proposed["folder"]), _dir(work / "templater"),
                                          budget, None, conditions, strategy))
        except Exception as exc:  # one route's failure is data; the other still runs
            templater["error"] = f"{type(exc).__name__}: {exc}"[:2000]
    else:
        templater["error"] = f"propose --write wrote no template: {proposed['last_line']}"
    doc["templater"] = templater
    doc["expert"] = {"error": "route not run (--routes)"}
    if "expert" in routes:
        try:
            doc["expert"] = bench_kernel(root / name / "expert", _dir(work / "expert"),
                                         budget, None, conditions, strategy)
        except Exception as exc:
            doc["expert"] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
    s_b, s_c = speedup(doc["templater"]), speedup(doc["expert"])
    # a route that wrote no template leaves the kernel as written: 1x
    if s_b is None and not proposed["written"] and "templater" in routes:
        s_b = 1.0
    doc["speedup_templater"] = s_b
    doc["speedup_expert"] = s_c
    doc["ratio_templater_to_expert"] = s_b / s_c if s_b and s_c else None
    return doc


def _dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _fmt(value: Any, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def markdown(report: dict[str, Any]) -> str:
    """The README table of one results file, and the geometric mean of (b)/(c)."""
    rows = ["| kernel | knobs lifted (templater) | gate (propose) | templater ×  | expert × "
            "| templater / expert | % of copy: as written, templater, expert |",
            "|---|---|---|---|---|---|---|"]
    ratios = []
    for k in report["kernels"]:
        if "skipped" in k or "error" in k:
            rows.append(f"| {k['kernel']} | {(k.get('error') or k['skipped'])[:80]} | | | | | |")
            continue
        b, c = k["templater"], k["expert"]
        knobs = b.get("knobs")
        lifted = f"{len(knobs)}: {', '.join(knobs)}" if knobs else (
            b.get("error") or "none")[:80]
        copy = "—"
        if k["memory_bound"]:
            tb, tc = b.get("tune") or {}, c.get("tune") or {}
            copy = (f"{_fmt(tc.get('baseline_pct_of_copy'), '.0f')} %, "
                    f"{_fmt(tb.get('best_pct_of_copy'), '.0f')} %, "
                    f"{_fmt(tc.get('best_pct_of_copy'), '.0f')} %")
        ratio = k["ratio_templater_to_expert"]
        if ratio:
            ratios.append(ratio)
        rows.append(f"| {k['kernel']} | {lifted} | {b['propose'].get('gate') or '—'} "
                    f"| {_fmt(k['speedup_templater'], '.2f')} | {_fmt(k['speedup_expert'], '.2f')} "
                    f"| {_fmt(ratio, '.2f')} | {copy} |")
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        rows.append(f"\nGeometric mean of templater / expert over {len(ratios)} kernels: "
                    f"{geo:.2f}.")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--set", default="compute,unseen",
                    help="compute, unseen, unseen2, unseen3, unseen4, unseen5, unseen6, unseen7, "
                         "unseen8, unseen9, unseen10, unseen11, unseen12, unseen13, unseen14, "
                         "unseen15, unseen16, unseen17, unseen18, unseen19, unseen20, unseen21, "
                         "unseen22, unseen23, unseen24, unseen25, unseen26, unseen27, "
                         "unseen28, or "
                         "several in order (the unseen sets run last)")
    ap.add_argument("--budget", type=int, default=40, help="guided evaluations per route")
    ap.add_argument("--kernels", default="", help="comma-separated subset")
    ap.add_argument("--conditions", default="read",
                    help="the confirmation's cache conditions ('read': the search's only; "
                         "'' for all, a longer run)")
    ap.add_argument("--deadline-s", type=float, default=None,
                    help="start no kernel after this many seconds (recorded as skipped)")
    ap.add_argument("--routes", default="templater,expert",
                    help="which routes to run: templater, expert or both")
    ap.add_argument("--strategy", default=DEFAULT_STRATEGY, choices=strategy_names(),
                    help="the tunes' search strategy (both routes)")
    ap.add_argument("--table", type=Path, help="print the README table of a results file")
    args = ap.parse_args()
    if args.table is not None:
        print(markdown(json.loads(args.table.read_text())))
        return 0
    if args.out is None:
        ap.error("--out is required to measure")
    work = _dir(args.out / "stage1_work")
    conditions = tuple(c for c in args.conditions.split(",") if c) or None
    started = time.monotonic()
    for which in [w for w in args.set.split(",") if w]:
        if which not in SETS:
            ap.error(f"--set: got {which!r}; expected one of {sorted(SETS)}")
        report: dict[str, Any] = {
            "set": which, "environment": environment(), "kernels": [],
            "settings": {"budget": args.budget, "conditions": list(conditions or ["all"]),
                         "deadline_s": args.deadline_s, "strategy": args.strategy, "confirm": 5}}
        dest = args.out / f"stage1_{which}.json"
        for name in kernel_names(SETS[which], args.kernels):
            elapsed = time.monotonic() - started
            if args.deadline_s is not None and elapsed > args.deadline_s:
                doc: dict[str, Any] = {"kernel": name, "skipped": f"the run's deadline "
                                       f"({args.deadline_s:.0f} s) had passed ({elapsed:.0f} s)"}
            else:
                try:
                    doc = bench_pair(name, SETS[which], work / which, args.budget, conditions,
                                     tuple(r for r in args.routes.split(",") if r),
                                     args.strategy)
                except Exception as exc:
                    doc = {"kernel": name, "error": f"{type(exc).__name__}: {exc}"[:2000]}
                doc["wall_s"] = round(time.monotonic() - started - elapsed, 1)
            report["kernels"].append(doc)
            print(json.dumps({k: doc.get(k) for k in (
                "kernel", "speedup_templater", "speedup_expert", "ratio_templater_to_expert",
                "wall_s", "skipped", "error")}), flush=True)
            dest.write_text(json.dumps(report, indent=1))
        print(markdown(report), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
