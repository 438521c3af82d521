"""What several subcommands share: tables, a progress bar, runners and the LLM client."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from workbench.core.kernel_folder import KernelFolder


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


def runner_for(folder: KernelFolder, replay: str | None, timer: str = "auto") -> Any:
    """LocalRunner on a GPU; the recording (newest, or the file named) with --replay."""
    from workbench.engine.bench import BenchSettings
    from workbench.engine.replay import ReplayRunner
    from workbench.engine.runner import LocalRunner

    if replay is not None:
        return ReplayRunner(folder, replay or None)
    return LocalRunner(folder, settings=BenchSettings(timer=timer))


def cluster_runner(folder: KernelFolder, cluster: str, gpus: int | None,
                   timer: str = "auto") -> Any:
    """A DaskRunner over ``--cluster local|ADDRESS`` measuring live on every GPU worker."""
    from workbench.engine.bench import BenchSettings
    from workbench.engine.dask_cluster import open_dask_runner
    from workbench.engine.dask_tasks import LiveEndpoint

    # the workers read the folder (reference.py) at the driver's absolute path
    folder = dataclasses.replace(folder, path=Path(folder.path).resolve())
    endpoint = LiveEndpoint(folder, folder.template, BenchSettings(timer=timer))
    return open_dask_runner(endpoint, cluster, gpus)


def llm_client(args: argparse.Namespace, recorder: Any = None) -> Any:
    """An LLM client when an endpoint is configured (flags or environment), else None."""
    import os

    if not (args.model or os.environ.get("WORKBENCH_MODEL")):
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
