"""``workbench tune --shapes/--sweep`` shape lists and ``workbench dispatch``: a dispatch
table from many tuned shapes (workbench.core.dispatch), exported as a C++ header, JSON and
Python, and its leave-one-out evaluation.

    workbench tune FOLDER --shape decode --sweep tokens=1..8192:log2 --store s.sqlite
    workbench dispatch FOLDER --shape decode --sweep tokens=1..8192:log2 --store s.sqlite \\
        --out dispatch/ --eval [--live]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.core.dispatch import (
    build_table,
    concrete,
    leave_one_out,
    median_loss_pct,
    specialised_knobs,
    sweep_shapes,
)
from workbench.core.errors import WorkbenchError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.params import Pow2Range
from workbench.core.records import Candidate, Config, Status
from workbench.core.template import KernelTemplate


def shape_list(args: argparse.Namespace) -> tuple[KernelFolder, list[str]]:
    """The folder (swept shapes added in memory) and the shapes ``--shape``, ``--shapes``
    and ``--sweep`` name: a sweep varies one size of the ``--shape`` shape."""
    folder = load_kernel_folder(args.folder)
    names: list[str] = []
    if getattr(args, "shapes", None):
        names += [s.strip() for s in args.shapes.split(",") if s.strip()]
        for name in names:
            folder.shape_values(name)  # unknown names fail here, with the list
    if getattr(args, "sweep", None):
        if not args.shape:
            raise WorkbenchError("--sweep varies one size of a base shape: give --shape too",
                                 key="shape", value=None, expected="a named shape")
        extra = sweep_shapes(args.sweep, folder.shape_values(args.shape))
        folder = dataclasses.replace(folder, shapes={**folder.shapes, **extra})
        names += list(extra)
    elif not names and args.shape:
        names = [args.shape]
    if not names:
        raise WorkbenchError("name a shape: --shape, --shapes A,B or --sweep SIZE=LO..HI:log2",
                             key="shape", value=None, expected="a shape")
    return folder, list(dict.fromkeys(names))


def _times(folder: KernelFolder, shapes: list[str], dtype: str,
           args: argparse.Namespace) -> dict[str, dict[Config, float]]:
    """Each shape's fastest median per config: from the store, or the recording."""
    times: dict[str, dict[Config, float]] = {s: {} for s in shapes}
    if args.replay is not None:
        from workbench.engine.replay import ReplayRunner

        results = [t for t in ReplayRunner(folder, args.replay or None).recording.trials]
    else:
        from workbench.store.sqlite import SQLiteStore

        store = SQLiteStore(args.store)
        results = [t.result for s in shapes for t in store.trials(shape=s, dtype=dtype)]
    for r in results:
        if r.shape in times and r.dtype == dtype and r.status is Status.OK and r.median_us:
            row = times[r.shape]
            row[r.config] = min(r.median_us, row.get(r.config, float("inf")))
    return times


def cmd_dispatch(args: argparse.Namespace) -> int:
    """Build, export and (``--eval``) evaluate a dispatch table."""
    out = args.stdout
    folder, shapes = shape_list(args)
    dtype = folder.check_dtype(args.dtype or folder.dtypes[0])
    times = _times(folder, shapes, dtype, args)
    empty = [s for s in shapes if not times[s]]
    if empty:
        print(f"no measured configs for {empty} ({'recording' if args.replay is not None else args.store}); "
              f"tune them first: workbench tune {args.folder} --shapes {','.join(empty)}",
              file=sys.stderr)
        return 2
    sizes = {s: folder.shape_values(s) for s in shapes}
    knobs = specialised_knobs(folder.template.shape_bounds)
    table = build_table(folder.name, dtype, times, sizes, args.tolerance, knobs)
    print(f"{folder.name} [{dtype}]: {len(table.configs)} configs for {len(shapes)} shapes, "
          f"each within {args.tolerance:g} % of its fastest", file=out)
    for shape, vals, index in table.entries:
        print(f"  {shape:14s} {dict(zip(table.size_names, vals, strict=True))} -> config "
              f"{index}", file=out)
    for index, cfg in enumerate(table.configs):
        print(f"  config {index}: {dict(cfg)}", file=out)
    if args.out:
        folder_out = Path(args.out)
        folder_out.mkdir(parents=True, exist_ok=True)
        stem = f"{folder.name}_{dtype}_dispatch"
        (folder_out / f"{stem}.h").write_text(table.to_cpp_header())
        (folder_out / f"{stem}.json").write_text(table.to_json())
        (folder_out / f"{stem}.py").write_text(table.to_python())
        print(f"  wrote {folder_out}/{stem}.h, .json, .py", file=out)
    if args.eval:
        return _evaluate(args, folder, dtype, times, sizes, knobs, out)
    return 0


def _evaluate(args: argparse.Namespace, folder: KernelFolder, dtype: str,
              times: dict[str, dict[Config, float]], sizes: Mapping[str, Mapping[str, int]],
              knobs: Mapping[str, str], out: Any) -> int:
    rows = leave_one_out(folder.name, dtype, times, sizes, args.tolerance, knobs)
    missing = [r for r in rows if r.time_us is None]
    if missing and args.live:  # measure the dispatched configs where they were never timed
        from workbench.engine.runner import LocalRunner

        with LocalRunner(folder) as runner:
            runner.use_template(_covering(folder.template, [m.config for m in missing]))
            got = {(r.config, r.shape): r for r in runner.measure(
                [Candidate(concrete(m.config, sizes[m.shape]), m.shape, dtype)
                 for m in missing])}
        rows = [r if r.time_us is not None else dataclasses.replace(
            r, time_us=(t := _median(got.get((concrete(r.config, sizes[r.shape]), r.shape)))),
            loss_pct=None if t is None else 100.0 * (t / r.best_us - 1.0)) for r in rows]
    print("leave-one-out (each shape dispatched by a table built without it):", file=out)
    for r in rows:
        loss = f"{r.loss_pct:+.1f} %" if r.loss_pct is not None else "not measured there"
        print(f"  {r.shape:14s} -> {r.nearest:14s} {loss}  {dict(r.config)}", file=out)
    med = median_loss_pct(rows)
    print(f"median loss: {med:.2f} %" if med is not None else "median loss: no scored shape",
          file=out)
    return 0


def _covering(template: KernelTemplate, configs: list[Config]) -> KernelTemplate:
    """``template`` with each power-of-two range reaching the largest value ``configs`` use
    (a table may hand a shape a value that ``tune --widen`` found at another shape)."""
    params = []
    for p in template.params:
        top = max((v for c in configs if isinstance(v := c.get(p.name), int)
                   and not isinstance(v, bool)), default=0)
        params.append(dataclasses.replace(p, max=top) if isinstance(p, Pow2Range)
                      and top > p.max and top & (top - 1) == 0 else p)
    return dataclasses.replace(template, params=tuple(params))


def _median(result: Any) -> float | None:
    return result.median_us if result is not None and result.status is Status.OK else None


ORDER = 35


def register(sub: Any) -> None:
    """Add the ``dispatch`` subcommand."""
    p = sub.add_parser("dispatch", help="fold many tuned shapes into a dispatch table "
                                         "(C++ header, JSON, Python); --eval: leave-one-out")
    p.add_argument("folder")
    p.add_argument("--shape", help="a named shape (the base of --sweep)")
    p.add_argument("--shapes", help="named shapes, comma separated")
    p.add_argument("--sweep", help="SIZE=LO..HI:log2 or SIZE=A,B,C (varies --shape)")
    p.add_argument("--dtype")
    p.add_argument("--store", default="workbench.sqlite", help="where the tuned trials are")
    p.add_argument("--replay", nargs="?", const="", default=None, metavar="RECORDING",
                   help="take the measurements from a recording instead of the store")
    p.add_argument("--tolerance", type=float, default=3.0,
                   help="a shape may take a config this many %% slower than its fastest")
    p.add_argument("--out", help="folder for <kernel>_<dtype>_dispatch.h/.json/.py")
    p.add_argument("--eval", action="store_true",
                   help="leave-one-out: each shape dispatched by a table built without it")
    p.add_argument("--live", action="store_true",
                   help="with --eval: measure on the GPU the dispatched configs a shape's "
                        "tuning never timed")
    p.set_defaults(func=cmd_dispatch)
