"""The ``workbench`` command line: one subcommand per task, thin over the library."""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from workbench.core.errors import WorkbenchError
from workbench.core.hardware import DeviceSpec, get_device, occupancy
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Config, Occupancy, ResourceUsage


class Progress:
    """A one-line progress bar on stderr (only when stderr is a terminal, or forced)."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None,
                 force: bool = False) -> None:
        self.total, self.label, self.done = total, label, 0
        self.stream = stream or sys.stderr
        self.enabled = force or self.stream.isatty()
        self.started = time.perf_counter()

    def step(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled or self.total == 0:
            return
        frac = self.done / self.total
        elapsed = time.perf_counter() - self.started
        eta = elapsed / frac - elapsed if frac > 0 else 0.0
        bar = "#" * int(30 * frac)
        self.stream.write(f"\r{self.label} [{bar:<30}] {self.done}/{self.total} "
                          f"{elapsed:5.1f}s eta {eta:5.1f}s")
        if self.done >= self.total:
            self.stream.write("\n")
        self.stream.flush()


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Plain, aligned text table."""
    text_rows = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in text_rows)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in text_rows]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


@dataclass(frozen=True)
class ConfigVerdict:
    """Hardware feasibility of one config at one shape: why not, or predicted occupancy."""

    config: Config
    reason: str | None
    threads_per_block: int
    blocks: int
    smem_bytes: int
    usage: ResourceUsage | None = None
    occupancy: Occupancy | None = None


def hardware_verdict(folder: KernelFolder, config: Config, shape: str, dtype: str,
                     spec: DeviceSpec, usage: ResourceUsage | None = None) -> ConfigVerdict:
    """Launch limits always; shared memory, occupancy and spills when ptxas's usage is known."""
    from workbench.search.pruning import launch_decision, resource_decision

    env = folder.env(shape, dtype, spec)
    launch = folder.template.launch_for(config, env)
    decision = launch_decision(config, folder.template.launch, env, spec)
    occ = None
    if decision is None and usage is not None:
        full = usage.with_dynamic_smem(launch.smem_bytes)
        decision = resource_decision(config, full, spec, launch.threads_per_block,
                                     allow_spills=False)
        occ = occupancy(spec, full, launch.threads_per_block)
    return ConfigVerdict(config, decision.reason if decision else None, launch.threads_per_block,
                         launch.blocks, launch.smem_bytes, usage, occ)


def _compile(folder: KernelFolder, configs: Sequence[Config], dtype: str, arch: str,
             label: str, jobs: int | None) -> dict[Config, Any]:
    from workbench.engine.compiler import Compiler

    compiler = Compiler(arch)
    rendered = [folder.template.render(c, dtype) for c in configs]
    config_of = {inst.hash: inst.config for inst in rendered}
    bar = Progress(len(rendered), label)
    out: dict[Config, Any] = {}
    for result in compiler.compile_many(rendered, workers=jobs, on_result=lambda _: bar.step()):
        out[config_of[result.instance_hash]] = result
    return out


def cmd_check(args: argparse.Namespace) -> int:
    from workbench.engine.compiler import Compiler

    folder = load_kernel_folder(args.folder)
    spec = get_device(args.device)
    out = args.stdout
    print(f"{folder.name}: {folder.description}", file=out)
    print(f"  folder ok: {len(folder.args)} arguments, dtypes {', '.join(folder.dtypes)}, "
          f"shapes {', '.join(folder.shapes)}", file=out)
    print(f"  template: {len(folder.template.params)} parameters "
          f"({', '.join(folder.template.param_names)}), "
          f"{len(folder.template.constraints)} constraints", file=out)

    compiler = Compiler(args.arch)
    default = folder.template.default_config()
    rows = []
    failed = False
    usage_by_dtype: dict[str, ResourceUsage | None] = {}  # the template defaults' ptxas report
    for dtype in folder.dtypes:
        for label, tmpl, cfg in (("baseline", folder.baseline, Config()),
                                 ("template@defaults", folder.template, default)):
            res = compiler.compile(tmpl.render(cfg, dtype))
            u = res.usage
            if tmpl is folder.template:
                usage_by_dtype[dtype] = u
            rows.append([label, dtype, "ok" if res.ok else res.error_kind,
                         u.regs_per_thread if u else None, u.static_smem_bytes if u else None,
                         u.stack_frame_bytes if u else None,
                         (u.spill_store_bytes + u.spill_load_bytes) if u else None,
                         round(res.compile_s, 3), "yes" if res.cached else "no"])
            if not res.ok:
                failed = True
                print(f"  {label} [{dtype}] failed to compile ({res.error_kind}): "
                      f"{res.error_summary}\n  log: {res.log_path}", file=out)
    print(f"\ncompile ({args.arch}, nvcc {compiler.version}):", file=out)
    print(format_table(["kernel", "dtype", "status", "regs", "smem_B", "stack_B", "spill_B",
                        "compile_s", "cached"], rows), file=out)

    print(f"\nsearch space on {spec.name} ({spec.key}), first dtype {folder.dtypes[0]}:", file=out)
    srows = []
    dtype = folder.dtypes[0]
    for shape in folder.shapes:
        space = folder.space(shape, dtype, spec)
        feasible = [c for c in space
                    if hardware_verdict(folder, c, shape, dtype, spec).reason is None]
        srows.append([shape, space.raw_size, space.size, len(feasible)])
    print(format_table(["shape", "raw", "after constraints", "after launch limits"], srows),
          file=out)

    print(f"\nresources and occupancy of the template defaults on {spec.key}:", file=out)
    orows = []
    for shape in folder.shapes:
        for d in folder.dtypes:
            v = hardware_verdict(folder, default, shape, d, spec, usage_by_dtype[d])
            occ = v.occupancy
            orows.append([shape, d, v.threads_per_block, v.blocks, v.smem_bytes,
                          v.usage.regs_per_thread if v.usage else None,
                          occ.blocks_per_sm if occ else None, occ.warps_per_sm if occ else None,
                          f"{occ.fraction:.0%}" if occ else None,
                          occ.limited_by if occ else None, v.reason or "ok"])
    print(format_table(["shape", "dtype", "threads", "blocks", "dyn_smem_B", "regs",
                        "blocks/SM", "warps/SM", "occupancy", "limited_by", "verdict"], orows),
          file=out)
    return 1 if failed else 0


def cmd_space(args: argparse.Namespace) -> int:
    folder = load_kernel_folder(args.folder)
    spec = get_device(args.device)
    dtype = args.dtype or folder.dtypes[0]
    folder.check_dtype(dtype)
    folder.shape_values(args.shape)
    space = folder.space(args.shape, dtype, spec)
    names = [p.name for p in space.params]
    raw_configs = [Config(dict(zip(names, values, strict=True)))
                   for values in itertools.product(*(p.values() for p in space.params))]
    rejections = {c: space.rejection(c) for c in raw_configs}
    feasible = [c for c, why in rejections.items() if why is None]
    usage: dict[Config, Any] = {}
    if not args.no_compile and feasible:
        usage = _compile(folder, feasible, dtype, args.arch, f"compiling {dtype}", args.jobs)
    records = []
    for cfg, reason in rejections.items():
        v = None
        if reason is not None:
            reason = f"constraint: {reason}"
        else:
            res = usage.get(cfg)
            if res is not None and not res.ok:
                reason = f"compile error ({res.error_kind}): {res.error_summary}"
            else:
                v = hardware_verdict(folder, cfg, args.shape, dtype, spec,
                                     res.usage if res is not None else None)
                reason = v.reason and f"hardware: {v.reason}"
        occ = v.occupancy if v else None
        records.append({**dict(cfg), "feasible": reason is None, "reason": reason or "",
                        "threads": v.threads_per_block if v else None,
                        "blocks": v.blocks if v else None,
                        "regs": v.usage.regs_per_thread if v and v.usage else None,
                        "occupancy": round(occ.fraction, 4) if occ else None,
                        "limited_by": occ.limited_by if occ else None})
    shown = records if args.all else [r for r in records if r["feasible"]]
    if args.format == "json":
        json.dump({"kernel": folder.name, "shape": args.shape, "dtype": dtype, "device": spec.key,
                   "raw": space.raw_size, "after_constraints": space.size,
                   "feasible": sum(r["feasible"] for r in records), "configs": shown},
                  args.stdout, indent=1)
        args.stdout.write("\n")
    elif args.format == "csv":
        if shown:
            writer = csv.DictWriter(args.stdout, fieldnames=list(shown[0]))
            writer.writeheader()
            writer.writerows(shown)
    else:
        headers = list(records[0]) if records else []
        print(format_table(headers, [[r[h] for h in headers] for r in shown]), file=args.stdout)
        pruned = [r for r in records if not r["feasible"]]
        print(f"\n{folder.name} @ {args.shape} [{dtype}] on {spec.key}: raw {space.raw_size}, "
              f"after constraints {space.size}, feasible {len(records) - len(pruned)}",
              file=args.stdout)
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    """Search one shape on the GPU (or a replay), store every trial, report the best."""
    from workbench.core.errors import NoGPUError, UnknownStrategyError
    from workbench.core.events import BestImproved, TrialFinished
    from workbench.core.records import TrialResult
    from workbench.engine.tuning import summarize_tuning
    from workbench.search.budget import Budget, SearchConfig
    from workbench.search.orchestrator import Search
    from workbench.search.strategies import STRATEGIES
    from workbench.store.base import provenance_for
    from workbench.store.sqlite import SQLiteStore

    if args.strategy not in STRATEGIES:
        raise UnknownStrategyError(args.strategy, list(STRATEGIES))
    folder = load_kernel_folder(args.folder)
    dtype = folder.check_dtype(args.dtype or folder.dtypes[0])
    folder.shape_values(args.shape)
    if args.replay is not None and args.timer is not None:
        print(f"--timer {args.timer} applies to live measurement; a replay answers with the "
              f"times its recording measured (see the recording's bench settings)",
              file=sys.stderr)
        return 2
    try:
        runner = _runner_for(folder, args.replay, timer=args.timer or "auto")
    except NoGPUError as exc:
        print(f"workbench tune needs a CUDA GPU for live measurement: {exc.message}\n"
              f"On this machine, replay the committed recording instead:\n"
              f"  workbench tune {args.folder} --shape {args.shape} --replay", file=sys.stderr)
        return 3
    out = args.stdout
    with runner:
        device = runner.device
        space = folder.space(args.shape, dtype, device)
        budget = Budget(max_evaluations=args.budget if args.budget is not None else space.size,
                        max_wall_s=args.max_time, patience=args.patience)
        config = SearchConfig(shapes=(args.shape,), dtype=dtype, strategy=args.strategy,
                              seed=args.seed, budget=budget, batch_size=args.batch)
        store = SQLiteStore(args.store)
        session = store.create_session(folder.name, notes=f"workbench tune {args.shape}/{dtype}")
        baseline = runner.baseline(args.shape, dtype)
        timer = getattr(runner, "timer_note", "")
        print(f"{folder.name} @ {args.shape} [{dtype}] on {runner.description}\n"
              + (f"timer {timer}\n" if timer else "") +
              f"space: {space.size} configs after constraints ({space.raw_size} raw); "
              f"strategy {args.strategy}, budget {budget.max_evaluations}; store {args.store}",
              file=out)
        search = Search.for_template(folder, folder.template, runner, config, device,
                                     store=store, session_id=session.id,
                                     baselines_us={args.shape: baseline.median_us}
                                     if baseline.median_us else None)
        bar = Progress(budget.max_evaluations or space.size, "tuning", force=args.progress)

        def on_event(event: object) -> None:
            if isinstance(event, TrialFinished) and event.result.status.value != "pruned":
                bar.step()
            elif isinstance(event, BestImproved) and args.verbose:
                print(f"  best {event.result.median_us:.2f} us {dict(event.result.config)}",
                      file=out)

        search.events.subscribe(on_event)
        try:
            outcome = search.run()
        except KeyboardInterrupt:  # every finished trial is already in the store
            search.stop()
            print(f"\ninterrupted: {len(search.results(args.shape))} trials kept in {args.store}; "
                  f"run the same command again to resume", file=out)
            return 130
        results = search.results(args.shape)
        shape_outcome = outcome.shapes[args.shape]
        print(f"stopped: {shape_outcome.reason}; {shape_outcome.evaluated} evaluated "
              f"({shape_outcome.measured_now} measured now, the rest resumed from the store)",
              file=out)
        provenance = provenance_for(runner, folder.template)

        def keep(round_index: int, result: TrialResult) -> None:
            store.record_remeasurement(result, provenance, round_index, session.id)
        report = summarize_tuning(folder, args.shape, dtype, runner, results, top=args.top,
                                  confirm=args.confirm, on_confirm=keep)
        print(report.summary(), file=out)
    return 0


def _llm_client(args: argparse.Namespace) -> Any:
    """An LLM client when an endpoint is configured (flags or environment), else None."""
    import os

    if not (args.model or os.environ.get("WORKBENCH_MODEL")):
        return None
    from workbench.llm.client import LLMClient, LLMSettings

    settings = LLMSettings.from_env(model=args.model, base_url=args.base_url)
    return LLMClient(settings)


def cmd_propose(args: argparse.Namespace) -> int:
    from workbench.agent import parameter_table, propose_only

    folder = load_kernel_folder(args.folder)
    client = _llm_client(args)
    proposed = propose_only(folder, client)
    out = args.stdout
    source = "the LLM" if proposed.origin == "llm" else "the offline templater (no LLM configured)"
    print(f"{folder.name}: template proposed by {source}\n", file=out)
    print(proposed.diff, file=out)
    if proposed.template is not None:
        print(parameter_table(proposed.template), file=out)
    report = proposed.report
    if report is not None:
        print(f"\nvalidation: {report.status}", file=out)
        for line in [*report.messages(), *report.checks_skipped]:
            print(f"  - {line}", file=out)
    return 0 if report is None or report.status != "failed" else 1


def _runner_for(folder: KernelFolder, replay: str | None, timer: str = "auto") -> Any:
    """LocalRunner on a GPU; the recording (newest, or the file named) with --replay."""
    from workbench.engine.bench import BenchSettings
    from workbench.engine.replay import ReplayRunner
    from workbench.engine.runner import LocalRunner

    if replay is not None:
        return ReplayRunner(folder, replay or None)
    return LocalRunner(folder, settings=BenchSettings(timer=timer))


def cmd_agent(args: argparse.Namespace) -> int:
    from workbench.agent import run_agent, speedup_per_iteration
    from workbench.engine.runner import LocalRunner
    from workbench.store.sqlite import SQLiteStore

    folder = load_kernel_folder(args.folder)
    client = _llm_client(args)
    store = SQLiteStore(args.store)
    runner: Any
    if args.replay is not None:
        runner = _runner_for(folder, args.replay)
    else:
        LocalRunner(folder).close()  # fails fast with NoGPUError (and the replay hint)

        def runner(template: Any) -> Any:
            return LocalRunner(folder, template)
    outcome = run_agent(folder, runner=runner, store=store, client=client,
                        iterations=args.iterations, llm_calls=args.llm_calls,
                        auto_approve=args.auto_approve, strategy=args.strategy,
                        budget=args.budget, shape=args.shape, dtype=args.dtype,
                        initial_template=folder.template if args.replay is not None else None)
    out = args.stdout
    print(f"agent {outcome.state}: {outcome.reason} (session {outcome.session_id}, "
          f"{outcome.llm_calls} LLM calls)", file=out)
    rows = [[p.iteration, p.best_us, p.baseline_us, p.speedup]
            for p in speedup_per_iteration(store, outcome.session_id)]
    if rows:
        print(format_table(["iteration", "best_us", "baseline_us", "speedup"], rows), file=out)
    if outcome.waiting_for_review:
        print("a template waits for review: approve it in the panel or rerun with "
              "--auto-approve", file=out)
    return 0 if outcome.state == "done" else 1


def cmd_lab(args: argparse.Namespace) -> int:
    """Open JupyterLab on the notebooks (replay without a GPU, live with one)."""
    from workbench.ui.lab import launch

    return launch(args.root, port=args.port, open_browser=not args.no_browser)

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workbench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="validate a kernel folder, compile it, show its space")
    p.add_argument("folder")
    p.add_argument("--device", default="h100", help="device spec for hardware pruning")
    p.add_argument("--arch", default="sm_90a")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("space", help="list feasible configs with predicted occupancy")
    p.add_argument("folder")
    p.add_argument("--shape", required=True)
    p.add_argument("--dtype")
    p.add_argument("--device", default="h100")
    p.add_argument("--arch", default="sm_90a")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--all", "--show-pruned", dest="all", action="store_true",
                   help="include pruned configs with reasons")
    p.add_argument("--no-compile", action="store_true",
                   help="skip compiling (no register/occupancy pruning)")
    p.add_argument("--jobs", type=int, default=None, help="parallel nvcc processes")
    p.set_defaults(func=cmd_space)

    p = sub.add_parser("tune", help="search a shape on the GPU (or --replay), report the best")
    p.add_argument("folder")
    p.add_argument("--shape", required=True)
    p.add_argument("--dtype")
    p.add_argument("--strategy", default="guided",
                   help="guided (default) | exhaustive | random | tpe | gp | cmaes")
    p.add_argument("--budget", type=int, default=None,
                   help="evaluations (default: the whole space); resumed trials count")
    p.add_argument("--patience", type=int, default=None,
                   help="stop after this many evaluations without a new best")
    p.add_argument("--max-time", type=float, default=None, help="wall-time budget in seconds")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch", type=int, default=16,
                   help="candidates handed to the runner at once (compiled in parallel)")
    p.add_argument("--top", type=int, default=5)
    p.add_argument("--confirm", type=int, default=5, metavar="K",
                   help="after the search, measure the K fastest configs again: one round "
                        "chooses, a second is reported (the search's best time is a minimum "
                        "over many noisy medians); stored as re-measurements; 0 turns it off")
    p.add_argument("--store", default="workbench.sqlite",
                   help="SQLite file; rerunning resumes where it stopped")
    p.add_argument("--replay", nargs="?", const="", default=None, metavar="RECORDING",
                   help="answer from a recording instead of the GPU (newest if no file)")
    p.add_argument("--timer", choices=["auto", "events", "cupti"], default=None,
                   help="cupti: the kernel's own duration from CUPTI activity records (what "
                        "Nsight reports; excludes the launch gap), event pairs kept beside "
                        "it; events: a CUDA event pair around each launch; auto (default): "
                        "cupti where the GPU worker can load libcupti, else events")
    p.add_argument("--progress", action="store_true", help="progress bar even when piped")
    p.add_argument("--verbose", action="store_true", help="print every new best")
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("propose", help="stage 1 only: propose a template, show diff and parameters")
    p.add_argument("folder")
    p.add_argument("--model", help="LLM model (default: $WORKBENCH_MODEL; none = offline templater)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    p.set_defaults(func=cmd_propose)

    p = sub.add_parser("agent", help="plan -> generate -> review -> tune -> test, repeated")
    p.add_argument("folder")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--llm-calls", type=int, default=12, help="LLM-call budget")
    p.add_argument("--model")
    p.add_argument("--base-url")
    p.add_argument("--auto-approve", action="store_true",
                   help="tune proposed templates without a human approval")
    p.add_argument("--shape", default=None)
    p.add_argument("--dtype", default=None)
    p.add_argument("--strategy", default="guided")
    p.add_argument("--budget", type=int, default=32, help="evaluations per tune step")
    p.add_argument("--store", default="workbench.sqlite")
    p.add_argument("--replay", nargs="?", const="", default=None, metavar="RECORDING",
                   help="measure by replaying a recording (newest if no file is named)")
    p.set_defaults(func=cmd_agent)

    p = sub.add_parser("lab", help="open JupyterLab on the notebooks")
    p.add_argument("--root", default="notebooks")
    p.add_argument("--port", type=int, default=None)
    p.add_argument("--no-browser", action="store_true")
    p.set_defaults(func=cmd_lab)
    return parser


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.stdout = stdout or sys.stdout
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
