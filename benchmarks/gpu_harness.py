"""One timing harness for every implementation compared on the GPU machine (torch).

Same rules as the workbench's worker (workbench.engine.bench): CUDA events around each
launch, L2 flushed before every timed repetition (a buffer of twice the L2 is zeroed),
in-place inputs restored before every repetition (outside the timed region), repetitions
until the relative standard error of the median is <= the target or the time cap. Our
kernels and the peers are timed alike. Runs only where torch with CUDA is installed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from workbench.core.records import Timing
from workbench.engine.bench import BenchSettings, should_stop, summarize


class Harness:
    """``flush="read"`` evicts the L2 by reading a 2x-L2 buffer (clean lines: nothing to write
    back inside the next timed region); ``"write"`` zeroes it (the worker's method)."""

    def __init__(self, l2_bytes: int, settings: BenchSettings | None = None,
                 flush: str = "read", spin_up_s: float = 0.5) -> None:
        self.settings = settings or BenchSettings(max_time_s=0.5, min_reps=20, max_reps=3000,
                                                  timeout_s=30.0)
        nbytes = self.settings.flush_bytes_for(l2_bytes)
        self.flush = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
        self.flush_mode = flush
        self.spin_up_s = spin_up_s
        self._sink = torch.empty((), dtype=torch.float32, device="cuda")

    def evict_l2(self) -> None:
        if self.flush_mode == "read":
            torch.sum(self.flush, dim=0, out=self._sink)
        else:
            self.flush.zero_()

    def spin_up(self) -> None:
        """Keep the GPU busy so timing starts at boost clocks (idle GPUs clock down)."""
        t_end = time.perf_counter() + self.spin_up_s
        while time.perf_counter() < t_end:
            for _ in range(8):
                self.evict_l2()
            torch.cuda.synchronize()

    def time(self, fn: Callable[[], object], restore: Callable[[], object] | None = None) -> Timing:
        s = self.settings
        self.spin_up()
        t_end = time.perf_counter() + s.warmup_ms / 1000.0
        while True:  # warm-up: module load, autotuning, JIT compiles stay out of the numbers
            if restore:
                restore()
            fn()
            torch.cuda.synchronize()
            if time.perf_counter() >= t_end:
                break
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples: list[float] = []
        t0 = time.perf_counter()
        while not should_stop(samples, time.perf_counter() - t0, s):
            if restore:
                restore()
            if s.flush_l2:
                self.evict_l2()
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1000.0)
        return summarize(samples, l2_flushed=s.flush_l2)
