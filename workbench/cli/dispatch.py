"""``workbench tune --shapes/--sweep`` shape lists and ``workbench dispatch``: a dispatch
table from many tuned shapes (workbench.core.dispatch), exported as a C++ header, JSON and
Python, and its leave-one-out evaluation.

    workbench tune FOLDER --shape decode --sweep tokens=1..8192:log2 --store s.sqlite
    workbench dispatch FOLDER --shape decode --sweep tokens=1..8192:log2 --store s.sqlite \\
        [--cross 4] --out dispatch/ [--force] --eval [--live]

``--cross K`` first measures, on the GPU, the K fastest configs each shape's search found
at every other shape where they were never timed (stored under a session noted
``dispatch --cross``), so the table can see how a config falls off between tuned shapes.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from workbench.core.dispatch import (
    DispatchTable,
    UnsafeExportError,
    build_table,
    concrete,
    config_problems,
    generated_names,
    leave_one_out,
    median_loss_pct,
    name_problems,
    shown,
    size_problem,
    specialised_knobs,
    sweep_shapes,
    symbolic,
    with_picks,
)
from workbench.core.errors import Problem, WorkbenchError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.params import Choice, Pow2Range
from workbench.core.picks import PickRecord
from workbench.core.records import Candidate, Config, Status
from workbench.core.template import KernelTemplate
from workbench.core.write_policy import check_target, write_file

if TYPE_CHECKING:
    from workbench.engine.replay import ReplayRunner


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


#: The notes of the store session that holds ``--cross`` measurements (not a search's).
CROSS_NOTES = "dispatch --cross"

#: shape -> config -> fastest median (us); config -> the shapes whose search found it
Measured = tuple[dict[str, dict[Config, float]], dict[Config, set[str]]]


def _times(folder: KernelFolder, shapes: list[str], dtype: str,
           args: argparse.Namespace, origins: dict[Config, str] | None = None,
           picks: dict[str, PickRecord] | None = None,
           replay: ReplayRunner | None = None) -> Measured:
    """Each shape's fastest median per config (from the store, or the recording) and, per
    config, the shapes whose search measured it (``--cross`` measurements excluded).
    ``origins`` gets, for each config, where it was first read (recording trial, store row).
    With ``picks`` (a store only) each shape's stored pick becomes its reference
    (:func:`~workbench.core.dispatch.with_picks`) and ``picks`` gets them."""
    times: dict[str, dict[Config, float]] = {s: {} for s in shapes}
    found_at: dict[Config, set[str]] = {}
    if replay is not None:
        recording = replay.recording
        results = [(t, False, f"recording {recording.path}: trials[{i}].config")
                   for i, t in enumerate(recording.trials)]
    else:
        from workbench.store.sqlite import SQLiteStore

        store = SQLiteStore(args.store)
        cross = {x.id for x in store.sessions(folder.name) if x.notes.startswith(CROSS_NOTES)}
        results = [(t.result, t.session_id in cross,
                    f"store {args.store}: trial of shape {shown(s)} dtype {dtype} "
                    f"(session {t.session_id}, written {t.created}), config_key")
                   for s in shapes for t in store.trials(shape=s, dtype=dtype)]
    for r, crossed, where in results:
        if r.shape in times and r.dtype == dtype and r.status is Status.OK and r.median_us:
            row = times[r.shape]
            row[r.config] = min(r.median_us, row.get(r.config, float("inf")))
            if origins is not None:
                origins.setdefault(r.config, where)
            if not crossed:
                found_at.setdefault(r.config, set()).add(r.shape)
    if picks is not None and args.replay is None:
        for s, pick in _stored_picks(folder, shapes, dtype, args).items():
            picks[s] = pick
            if origins is not None:
                origins.setdefault(pick.config, f"store {args.store}: pick {pick.id} of shape "
                                                f"{shown(s)} dtype {dtype}, config_key")
            found_at.setdefault(pick.config, set()).add(s)
        times = with_picks(times, {s: p.config for s, p in picks.items() if times[s]})
    return times, found_at


def _stored_picks(folder: KernelFolder, shapes: list[str], dtype: str,
                  args: argparse.Namespace) -> dict[str, PickRecord]:
    """The newest pick stored for each shape of ``folder``'s kernel (any session)."""
    from workbench.store.sqlite import SQLiteStore

    store = SQLiteStore(args.store)
    found: dict[str, PickRecord] = {}
    for s in shapes:
        stored = store.picks(kernel=folder.name, shape=s, dtype=dtype)
        if stored:
            found[s] = stored[-1]
    return found


def _input_problems(folder: KernelFolder, shapes: list[str], dtype: str,
                    args: argparse.Namespace, times: Mapping[str, Mapping[Config, float]],
                    origins: Mapping[Config, str]) -> list[Problem]:
    """Every name and value that would enter the exports, checked where it came from: the
    kernel folder's kernel.toml, the command line (``--sweep``, ``--tolerance``), each
    recording trial or store row (a bool only for a knob the template declares as one)."""
    toml = f"{folder.path}/kernel.toml"
    problems = name_problems([folder.name], "name", toml)
    problems += name_problems([dtype], "dtype", "the command line (--dtype)")
    if problems:
        return problems
    reserved = generated_names(folder.name, dtype)
    swept = set(sweep_shapes(args.sweep, folder.shape_values(args.shape))) if args.sweep else set()
    base = set(folder.shapes) - swept
    for s in shapes:
        where = toml if s in base else "the command line (--sweep)"
        problems += name_problems([s], f"shapes.{s}" if s in base else "shape name", where)
        for size, value in folder.shape_values(s).items():
            key = f"shapes.{s}.{size}" if s in base else f"shape {s} size"
            problems += name_problems([size], key, where, reserved)
            reason = size_problem(value)
            if reason is not None:
                problems.append(Problem(where, f"{key}", shown(value), reason))
    if not math.isfinite(args.tolerance) or args.tolerance < 0:
        problems.append(Problem("the command line (--tolerance)", "tolerance",
                                shown(args.tolerance), "a finite number >= 0"))
    bools = {p.name for p in folder.template.params
             if isinstance(p, Choice) and any(isinstance(v, bool) for v in p.values_)}
    for s in shapes:
        for cfg in times[s]:
            problems += config_problems(cfg, origins.get(cfg, "a measured config"), reserved,
                                        bools)
    return list(dict.fromkeys(problems))


def _write_exports(out_dir: str, stem: str, table: DispatchTable, force: bool) -> list[Path]:
    """The header, JSON and module, each rendered (and so checked) before any is written,
    then written through the write policy with ``out_dir`` as root: an existing export is
    replaced only with ``force``."""
    files = {f"{stem}.h": table.to_cpp_header(), f"{stem}.json": table.to_json(),
             f"{stem}.py": table.to_python()}
    root = Path(out_dir)
    if root.is_dir():
        for name in files:
            check_target(root, name, overwrite=force)
    else:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WorkbenchError(f"--out {out_dir}: cannot create the folder ({exc.strerror})",
                                 key="out", value=out_dir, expected="a folder") from None
    return [write_file(root, name, text, overwrite=force) for name, text in files.items()]


def _cross(args: argparse.Namespace, folder: KernelFolder, shapes: list[str], dtype: str,
           measured: Measured, knobs: Mapping[str, str], out: Any) -> None:
    """Measure the ``args.cross`` fastest configs of each shape's own search at every other
    shape where they were never timed, and store them (session noted CROSS_NOTES)."""
    from workbench.engine.open import open_runner
    from workbench.store.base import provenance_for
    from workbench.store.sqlite import SQLiteStore

    times, found_at = measured
    sizes = {s: folder.shape_values(s) for s in shapes}
    pool: list[Config] = []
    for s in shapes:
        own = sorted((c for c in times[s] if s in found_at.get(c, ())), key=times[s].__getitem__)
        pool += [symbolic(c, sizes[s], knobs) for c in own[:args.cross]]
    pool = list(dict.fromkeys(pool))
    template = _covering(folder.template, pool)
    wanted = []
    for m in shapes:
        space = template.space(folder.env(m, dtype))
        for cfg in pool:
            cand = concrete(cfg, sizes[m])
            if cand not in times[m] and space.rejection(cand) is None:
                wanted.append(Candidate(cand, m, dtype))
    print(f"cross: {len(pool)} configs (the {args.cross} fastest of each shape's search), "
          f"{len(wanted)} measurements at shapes that never timed them", file=out)
    store = SQLiteStore(args.store)
    with closing(open_runner(folder, template)) as runner:
        provenance = provenance_for(runner, folder.template)
        session = store.create_session(folder.name, notes=f"{CROSS_NOTES} {args.cross}")
        for result in runner.measure(wanted):
            store.record_trial(result, provenance, session.id)


def cmd_dispatch(args: argparse.Namespace) -> int:
    """Build, export and (``--eval``) evaluate a dispatch table."""
    out = args.stdout
    folder, shapes = shape_list(args)
    dtype = folder.check_dtype(args.dtype or folder.dtypes[0])
    knobs = specialised_knobs(folder.template.shape_bounds)
    origins: dict[Config, str] = {}
    picks: dict[str, PickRecord] = {}
    from workbench.engine.open import open_runner
    from workbench.engine.replay import ReplayRunner

    # the recording is read once: its trials here, its template check below
    replay = (cast(ReplayRunner, open_runner(folder, replay=args.replay))
              if args.replay is not None else None)
    measured = _times(folder, shapes, dtype, args, origins, picks, replay)
    problems = _input_problems(folder, shapes, dtype, args, measured[0], origins)
    if not problems and args.cross and replay is None:
        _cross(args, folder, shapes, dtype, measured, knobs, out)
        measured = _times(folder, shapes, dtype, args, origins, picks)
        problems = _input_problems(folder, shapes, dtype, args, measured[0], origins)
    if problems:  # before a table is built, printed or written
        raise UnsafeExportError(problems)
    if replay is not None:
        # after the data checks (they name the recording trial that holds a hostile key):
        # a recording of another template answers for none of its configs
        replay.require_held()
    times, found_at = measured
    empty = [s for s in shapes if not times[s]]
    if empty:
        print(f"no measured configs for {empty} ({'recording' if args.replay is not None else args.store}); "
              f"tune them first: workbench tune {args.folder} --shapes {','.join(empty)}",
              file=sys.stderr)
        return 2
    sizes = {s: folder.shape_values(s) for s in shapes}
    table = build_table(folder.name, dtype, times, sizes, args.tolerance, knobs)
    print(f"{folder.name} [{dtype}]: {len(table.configs)} configs for {len(shapes)} shapes, "
          f"each within {args.tolerance:g} % of its fastest", file=out)
    for shape, vals, index in table.entries:
        pick = picks.get(shape)
        how = (f"its stored pick: {pick.how()}" if pick is not None else
               "search-best fallback (no confirmation could run: no pick stored for this "
               "shape); the search's fastest leads")
        print(f"  {shape:14s} {dict(zip(table.size_names, vals, strict=True))} -> config "
              f"{index}  [reference: {how}]", file=out)
    for index, cfg in enumerate(table.configs):
        print(f"  config {index}: {dict(cfg)}", file=out)
    if args.out:
        stem = f"{folder.name}_{dtype}_dispatch"
        _write_exports(args.out, stem, table, args.force)
        print(f"  wrote {args.out}/{stem}.h, .json, .py", file=out)
    if args.eval:
        return _evaluate(args, folder, dtype, (times, found_at), sizes, knobs, out)
    return 0


def _evaluate(args: argparse.Namespace, folder: KernelFolder, dtype: str,
              measured: Measured, sizes: Mapping[str, Mapping[str, int]],
              knobs: Mapping[str, str], out: Any) -> int:
    times, found_at = measured
    rows = leave_one_out(folder.name, dtype, times, sizes, args.tolerance, knobs, found_at)
    missing = [r for r in rows if r.time_us is None]
    if missing and args.live:  # measure the dispatched configs where they were never timed
        from workbench.engine.open import open_runner

        covering = _covering(folder.template, [m.config for m in missing])
        with closing(open_runner(folder, covering)) as runner:
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
    from workbench.cli._common import DTYPE_HELP, FOLDER_HELP

    p = sub.add_parser("dispatch", help="fold many tuned shapes into a dispatch table "
                                         "(C++ header, JSON, Python); --eval: leave-one-out")
    p.add_argument("folder", help=FOLDER_HELP)
    p.add_argument("--shape", help="a named shape (the base of --sweep)")
    p.add_argument("--shapes", help="named shapes, comma separated")
    p.add_argument("--sweep", help="SIZE=LO..HI:log2 or SIZE=A,B,C (varies --shape)")
    p.add_argument("--dtype", help=DTYPE_HELP)
    p.add_argument("--store", default="workbench.sqlite", help="where the tuned trials are")
    p.add_argument("--replay", nargs="?", const="", default=None, metavar="RECORDING",
                   help="take the measurements from a recording instead of the store")
    p.add_argument("--tolerance", type=float, default=3.0,
                   help="a shape may take a config this many %% slower than its fastest")
    p.add_argument("--cross", type=int, default=0, metavar="K",
                   help="first measure on the GPU the K fastest configs of each shape's search "
                        "at every other shape (stored; the table interpolates between shapes "
                        "with them)")
    p.add_argument("--out", help="folder for <kernel>_<dtype>_dispatch.h/.json/.py")
    p.add_argument("--force", action="store_true",
                   help="replace exports that already exist in --out")
    p.add_argument("--eval", action="store_true",
                   help="leave-one-out: each shape dispatched by a table built without it")
    p.add_argument("--live", action="store_true",
                   help="with --eval: measure on the GPU the dispatched configs a shape's "
                        "tuning never timed")
    p.set_defaults(func=cmd_dispatch)
