"""What several subcommands share: tables, a progress bar, runners and the LLM client."""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TextIO

from workbench.core.kernel_folder import KernelFolder

#: Help texts several subcommands share (tests/test_cli_help.py checks every option has one).
FOLDER_HELP = "the kernel folder (kernel.toml, baseline.cu, template.cu, reference.py)"
DTYPE_HELP = "an element type the kernel.toml lists (default: its first)"
ARCH_HELP = "nvcc's target architecture (default sm_90a: H100/H200)"
STRATEGY_HELP = "search strategy: guided (default) | exhaustive | random | tpe | gp | cmaes"


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
        frac = min(self.done / self.total, 1.0)
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


def runner_for(folder: KernelFolder, replay: str | None, timer: str = "auto", *,
               cluster: str | None = None, gpus: int | None = None) -> Any:
    """The runner of ``workbench tune/agent`` (:func:`~workbench.engine.open.open_runner`):
    the recording (newest, or the file named) with --replay, a DaskRunner with --cluster,
    else a LocalRunner, or NoGPUError stating
    :func:`~workbench.engine.discovery.no_live_reason` before any worker starts."""
    from workbench.engine.bench import BenchSettings
    from workbench.engine.open import open_runner

    return open_runner(folder, replay=replay, cluster=cluster, gpus=gpus,
                       settings=BenchSettings(timer=timer))


def replay_problem(folder: KernelFolder, shape: str | None, recording: str | None = None
                   ) -> str:
    """Why replaying (the newest recording, or the file named) cannot answer for this
    folder's template at ``shape``; "" when it can."""
    from workbench.core.errors import RecordingError
    from workbench.engine.open import open_runner
    from workbench.engine.replay import ReplayRunner

    try:
        runner = open_runner(folder, replay=recording or "")
        assert isinstance(runner, ReplayRunner)
    except (RecordingError, OSError) as exc:
        return getattr(exc, "message", str(exc))
    with runner:
        if runner.problem:
            return runner.problem
        shapes = sorted({s for s, _ in runner.shapes_dtypes})
        if shape is not None and shape not in shapes:
            return (f"{runner.source} has no shape {shape!r} (it covers "
                    f"{', '.join(shapes) or 'no shape'})")
    return ""


def no_live_advice(command: str, folder_arg: str, folder: KernelFolder, shape: str | None,
                   failure: str, *, replay_asked: bool = False) -> str:
    """What to do when ``workbench <command>`` cannot measure: replay where a recording of
    this template exists, else what works on this machine and where the gate runs; never
    advice to replay what does not exist. ``failure`` is the first line's reason."""
    from workbench.engine.discovery import no_live_reason

    shape_flag = f" --shape {shape}" if shape else (" --shape SHAPE" if command == "tune"
                                                     else "")
    retry = f"workbench {command} {folder_arg}{shape_flag}"
    missing = "" if replay_asked else replay_problem(folder, shape)
    if not replay_asked and not missing:
        return (f"workbench {command} cannot measure live: {failure}\n"
                f"This kernel's recording answers instead (the recorded GPU's times):\n"
                f"  {retry} --replay")
    live = no_live_reason()
    lines = [f"workbench {command} cannot measure live: {failure}" if not replay_asked else
             f"workbench {command} --replay: {failure}"]
    if replay_asked and live is None:
        lines.append(f"This machine can measure live: drop --replay:\n  {retry}")
        return "\n".join(lines)
    if replay_asked and live is not None:
        lines.append(f"and it cannot measure live either: {live.text}")
    elif missing:
        lines.append(f"Nothing to replay either: {missing}")
    shape_arg = shape or "SHAPE"
    works = [(f"workbench check {folder_arg}",
              "compile the baseline and the template: ptxas resources, occupancy"),
             (f"workbench space {folder_arg} --shape {shape_arg}",
              "the search space and what constraints and launch limits prune"),
             (f"workbench propose {folder_arg}",
              "a template to review (the LLM, or the offline templater)")]
    width = max(len(c) for c, _ in works)
    lines += ["What works on this machine (no GPU needed):",
              *(f"  {c.ljust(width)}  {what}" for c, what in works),
              "The gate (tune measures every candidate and checks it against the baseline; "
              "agent) runs on a GPU machine; there:",
              f"  {retry}"]
    return "\n".join(lines)


def llm_client(args: argparse.Namespace, recorder: Any = None) -> Any:
    """An LLM client when an endpoint is configured (flags or environment), else None."""
    from workbench.core.settings import workbench_settings

    if not (args.model or workbench_settings().model):
        return None
    from workbench.llm.client import LLMClient, LLMSettings

    settings = LLMSettings.from_env(model=args.model, base_url=args.base_url,
                                    timeout_s=getattr(args, "llm_timeout", None),
                                    stage_timeout_s=getattr(args, "llm_stage_timeout", None))
    return LLMClient(settings, recorder=recorder)


def count(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``minimum``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below the minimum of {minimum}")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive, finite number of seconds")
    return value


def llm_options(p: argparse.ArgumentParser) -> None:
    """``--llm-timeout`` and ``--llm-stage-timeout``."""
    p.add_argument("--llm-timeout", type=seconds, default=None, metavar="S",
                   help="deadline of one LLM request, retries included (default 120 s, or "
                        "$WORKBENCH_LLM_TIMEOUT)")
    p.add_argument("--llm-stage-timeout", type=seconds, default=None, metavar="S",
                   help="deadline of every LLM request of one stage (default 600 s, or "
                        "$WORKBENCH_LLM_STAGE_TIMEOUT)")
