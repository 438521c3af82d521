"""One timing harness for every implementation compared on the GPU machine (torch).

Same rules as the workbench's worker (workbench.engine.timing_loop): CUDA events around each
launch, L2 evicted before every timed repetition (a buffer of twice the L2 is read),
in-place inputs restored before every repetition (outside the timed region), batches of
repetitions held behind a gate kernel until the host has enqueued them (so Python's launch
overhead, which differs between peers, never lands inside a timed region), repetitions
until the relative standard error of the median is <= the target or the time cap. Our
kernels and the peers are timed alike. Runs only where torch with CUDA is installed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from workbench.core.records import Timing
from workbench.engine.bench import BenchSettings, summarize
from workbench.engine.timing_loop import (
    GATE_STATE_INT32,
    GATE_TIMEOUT_NS,
    TIMING_KERNELS_SOURCE,
    flush_bytes,
    time_launches,
)


class _TorchEvent:
    """A torch CUDA event with the surface of pycuda's that ``time_launches`` uses."""

    def __init__(self) -> None:
        self.event = torch.cuda.Event(enable_timing=True)

    def record(self, stream: object = None) -> None:
        self.event.record()

    def synchronize(self) -> None:
        self.event.synchronize()

    def time_since(self, start: _TorchEvent) -> float:  # milliseconds, like pycuda
        return start.event.elapsed_time(self.event)


class _TorchCuda:
    """What ``time_launches`` needs from ``pycuda.driver``: events."""

    Event = _TorchEvent


class _CurrentStream:
    def synchronize(self) -> None:
        torch.cuda.synchronize()


class TorchGate:
    """The worker's ``wb_gate`` kernel (through CuPy) on torch's current stream, with its
    flag in pinned host memory (device-visible under unified addressing)."""

    def __init__(self) -> None:
        import cupy
        import numpy as np

        self._cupy = cupy
        self.kernel = cupy.RawKernel(TIMING_KERNELS_SOURCE, "wb_gate")
        self.state = torch.zeros(GATE_STATE_INT32, dtype=torch.int32, pin_memory=True)
        self._ptr = np.uint64(self.state.data_ptr())
        self._timeout = np.uint64(GATE_TIMEOUT_NS)

    @property
    def timeouts(self) -> int:
        return int(self.state[1])

    def hold(self) -> None:
        self.state[0] = 0
        stream = self._cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
        with stream:
            self.kernel((1,), (1,), (self._ptr, self._timeout))

    def release(self) -> None:
        self.state[0] = 1

    def settled(self) -> None:
        """Nothing kept: the peers harness does not report the gate's clock."""


class Harness:
    """``flush="read"`` evicts the L2 by reading a 2x-L2 buffer (clean lines: nothing to write
    back inside the next timed region); ``"write"`` zeroes it (dirty lines; kept to compare)."""

    def __init__(self, l2_bytes: int, settings: BenchSettings | None = None,
                 flush: str = "read", spin_up_s: float = 0.5, gated: bool = True) -> None:
        self.settings = settings or BenchSettings(max_time_s=0.5, min_reps=20, max_reps=3000,
                                                  timeout_s=30.0)
        nbytes = flush_bytes(l2_bytes)
        self.flush = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
        self.flush_mode = flush
        self.spin_up_s = spin_up_s
        self._sink = torch.empty((), dtype=torch.float32, device="cuda")
        self.gate = TorchGate() if gated else None
        self.last_gate_timeouts = 0

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
        """The worker's timing loop (``time_launches``) on torch's current stream."""
        s = self.settings
        self.spin_up()
        timeouts_before = self.gate.timeouts if self.gate else 0
        samples = time_launches(
            _TorchCuda, _CurrentStream(), fn, s, prepare=restore,
            flush=self.evict_l2 if s.flush_l2 else None, gate=self.gate).samples_us
        self.last_gate_timeouts = (self.gate.timeouts - timeouts_before) if self.gate else 0
        return summarize(samples, l2_flushed=s.flush_l2)
