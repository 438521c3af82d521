"""How the GPU worker times work on its device: the L2 flush, the timing gate, the GPU
timer's step, the spin-up before a timing (:mod:`workbench.engine.spin_up`), the kernel
clock (CUPTI or events), and one timing under a cache condition (:meth:`DeviceTimer.timed`,
a CUDA graph's with :meth:`DeviceTimer.timed_graph`).

Lives in the worker process only (:class:`~workbench.engine.gpu_session.GpuSession` owns
one); pycuda and numpy are imported lazily, so this module imports fine without a GPU and
its decisions run in tests with fakes (tests/test_timing_spin_up.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from workbench.core.records import ClockStats, Timing, TimingMethod
from workbench.engine.bench import BenchSettings
from workbench.engine.nvml import Nvml, throttled
from workbench.engine.spin_up import (
    SPIN_UP_S,
    SpinUp,
    SpinUpReason,
    spin_up_reason,
    started_cold,
)
from workbench.engine.timing_loop import flush_bytes


class _Gate:
    """``wb_gate`` on the timer's stream plus its flag in mapped pinned memory.

    ``state[0]`` is the flag the host sets; ``state[1]`` counts gates that opened by
    timeout (the host took longer than ``GATE_TIMEOUT_NS`` to enqueue a batch);
    ``state[2:6]`` holds the SM cycles and nanoseconds of the last hold (``clocks_mhz``
    collects one effective SM clock per settled batch).
    """

    def __init__(self, timer: DeviceTimer, function: Any) -> None:
        import numpy as np

        cuda = timer.cuda
        self.timer = timer
        self.function = function
        function.prepare("PQ")
        from workbench.engine.timing_loop import GATE_STATE_INT32

        self.state = cuda.pagelocked_zeros((GATE_STATE_INT32,), np.int32,
                                           mem_flags=cuda.host_alloc_flags.DEVICEMAP)
        self.device_ptr = int(self.state.base.get_device_pointer())
        self.clocks_mhz: list[float] = []

    @property
    def timeouts(self) -> int:
        return int(self.state[1])

    def hold(self) -> None:
        from workbench.engine.timing_loop import GATE_TIMEOUT_NS

        self.state[0] = 0
        self.function.prepared_async_call((1, 1, 1), (1, 1, 1), self.timer.stream,
                                          self.device_ptr, GATE_TIMEOUT_NS)

    def release(self) -> None:
        self.state[0] = 1

    def settled(self) -> None:
        from workbench.engine.timing_loop import gate_clock_mhz

        mhz = gate_clock_mhz(self.state)
        if mhz is not None:
            self.clocks_mhz.append(mhz)


@dataclass(frozen=True)
class Timed:
    """What :meth:`DeviceTimer.timed` measured, before it goes into a reply."""

    timing: Timing
    samples_us: tuple[float, ...]
    event_samples_us: tuple[float, ...]
    method: TimingMethod
    bench_s: float
    nvml: Mapping[str, Any]
    spin_up_s: float = 0.0  # the GPU kept busy before timing (DeviceTimer.warm_up)
    nvml_s: float = 0.0     # the NVML readings around the timing
    spin_up: SpinUp | None = None  # what preceded the timing, and why


class DeviceTimer:
    """The timing state of one CUDA context: its stream, the device's attributes, NVML,
    the flush buffer, the gate and timer-step kernels (:meth:`use_kernels`), the CUPTI
    clock once asked for, and when the GPU last finished timed work."""

    #: The host clock of the idle-gap rule and of the phase timings (tests inject one).
    clock: Callable[[], float] = staticmethod(time.perf_counter)

    def __init__(self, cuda: Any, stream: Any, attrs: Mapping[str, int], nvml: Nvml) -> None:
        self.cuda = cuda
        self.stream = stream
        self.attrs = attrs
        self.nvml = nvml
        self.flush_buf: Any = None
        self.flush_bytes = 0
        self.evict: Any = None     # wb_evict (read flush)
        self.tick_us = 0.0         # the GPU timer's step, measured by wb_tick at first load
        self.gate: _Gate | None = None
        self.cupti: Any = None     # CuptiClock, made when a timer="cupti" request arrives
        self.last_busy_s = 0.0  # clock() when the GPU last finished timed work
        self._nvml_static: dict[str, Any] | None = None  # read once (driver, clocks, power)

    def use_kernels(self, module: Any) -> None:
        """Take the timing kernels of the workbench's own module (wb_evict, wb_gate,
        wb_tick) and measure the GPU timer's step."""
        self.evict = module.get_function("wb_evict")
        self.evict.prepare("PqP")
        self.gate = _Gate(self, module.get_function("wb_gate"))
        self.tick_us = self.timer_tick_us(module.get_function("wb_tick"))

    def timer_tick_us(self, function: Any) -> float:
        """The GPU timer's step in microseconds (0.032 on the H100), which CUDA events and
        CUPTI timestamps advance by; 0.0 when the timer did not move (never seen)."""
        import numpy as np

        out = self.cuda.mem_alloc(16)
        try:
            function(out, block=(1, 1, 1), grid=(1, 1))
            host = np.zeros(2, dtype=np.uint64)
            self.cuda.memcpy_dtoh(host, out)
        finally:
            out.free()
        step, changes = int(host[0]), int(host[1])
        return step / 1e3 if changes > 0 else 0.0

    def _flush_buffer(self, nbytes: int) -> Any:
        """A zero-filled device buffer of at least ``nbytes`` (a multiple of 16)."""
        nbytes = -(-nbytes // 16) * 16
        if self.flush_buf is None or self.flush_bytes < nbytes:
            if self.flush_buf is not None:
                self.flush_buf.free()
            self.flush_buf = self.cuda.mem_alloc(nbytes)
            self.flush_bytes = nbytes
            self.cuda.memset_d32(self.flush_buf, 0, nbytes // 4)
        return self.flush_buf

    def flusher(self, nbytes: int, method: str) -> Any:
        """A function that evicts the L2 with ``nbytes``: by reading (clean) or zeroing."""
        buf = self._flush_buffer(nbytes)
        n4 = self.flush_bytes // 16
        if method == "read" and self.evict is not None:
            blocks = 4 * self.attrs.get("MULTIPROCESSOR_COUNT", 132)
            ptr = int(buf)  # also the sink, never written (see wb_evict)

            def read() -> None:
                self.evict.prepared_async_call((blocks, 1, 1), (512, 1, 1), self.stream,
                                               ptr, n4, ptr)
            return read

        def write() -> None:
            self.cuda.memset_d32_async(buf, 0, n4 * 4, self.stream)
        return write

    def nvml_static(self) -> dict[str, Any]:
        """NVML's static facts (driver, maximum and application clocks, power limit), read
        once per session: six NVML calls that took part of every timing's 4.6 ms before."""
        if self._nvml_static is None:
            self._nvml_static = self.nvml.static() if self.nvml.nv is not None else {}
        return self._nvml_static

    def reference_clock_mhz(self) -> float | None:
        """The SM clock a warm GPU runs at: the application clock, else the maximum."""
        static = self.nvml_static()
        value = static.get("app_sm_clock_mhz") or static.get("max_sm_clock_mhz")
        return float(value) if value else None

    def warm_up(self, reason: SpinUpReason | None = None,
                 ) -> tuple[SpinUp, dict[str, Any], float]:
        """Decide whether the GPU is kept busy for SPIN_UP_S before a timing (the rule and
        its evidence: :mod:`workbench.engine.spin_up`) and do it; returns the record, the
        NVML sample the timing starts from and the seconds NVML took. ``reason`` forces a
        spin-up (a retime after a cold start)."""
        began = self.clock()
        idle_s = began - self.last_busy_s
        before = self.nvml.sample()
        nvml_s = self.clock() - began
        reference = self.reference_clock_mhz()
        seen = before.get("sm_clock_mhz")
        seen_mhz = float(seen) if seen is not None else None
        why = reason or spin_up_reason(idle_s, seen_mhz, reference)
        if not why.spins:
            return (SpinUp(ran=False, reason=why, idle_s=idle_s, sm_clock_mhz=seen_mhz,
                           reference_mhz=reference), before, nvml_s)
        spun = self.clock()
        self.busy(SPIN_UP_S * 1e3)
        spin_s = self.clock() - spun
        again = self.clock()
        before = self.nvml.sample()
        nvml_s += self.clock() - again
        after = before.get("sm_clock_mhz")
        return (SpinUp(ran=True, reason=why, idle_s=idle_s, sm_clock_mhz=seen_mhz,
                       reference_mhz=reference, spin_up_s=spin_s,
                       sm_clock_after_mhz=float(after) if after is not None else None,
                       retimed=why is SpinUpReason.RETIMED), before, nvml_s)

    def busy(self, ms: float) -> None:
        """Keep the GPU reading a 64 MiB buffer for ``ms`` milliseconds."""
        work = self.flusher(64 << 20, "read")
        began = time.perf_counter()
        while time.perf_counter() - began < ms / 1e3:
            for _ in range(8):
                work()
            self.stream.synchronize()

    def _kernel_clock(self, settings: BenchSettings, name: str) -> Any:
        """The CUPTI duration reader for kernel ``name`` when ``settings.timer`` asks for it
        (``"auto"`` reaching the worker directly: CUPTI when libcupti loads, else none)."""
        if settings.timer == "events":
            return None
        if self.cupti is None:
            from workbench.engine.cupti import CuptiClock, CuptiError

            try:
                self.cupti = CuptiClock()
            except CuptiError:
                if settings.timer == "auto":
                    return None
                raise
        clock = self.cupti

        def durations(expected: int) -> list[float]:
            return clock.take(name, expected)
        return durations

    def timed_graph(self, launch_fn: Callable[[], None], settings: BenchSettings,
                     prepare: Callable[[], None], clock_name: str, count: int) -> Timed:
        """The "graph" cache condition: ``count`` launches captured into one CUDA graph,
        each repetition one graph launch between an event pair (no L2 eviction, inputs
        restored before each graph), the sample its time per launch."""
        from workbench.engine.cuda_graph import CapturedGraph

        with CapturedGraph(self.stream, launch_fn, count) as graph:
            plain = replace(settings, flush_l2=False, timer="events")
            timed = self.timed(graph.launch, plain, prepare, clock_name, flush=None,
                                per_launch=count)
        return replace(timed, method=replace(timed.method, flush="none (graph)",
                                             graph_launches=count))

    def timed(self, launch_fn: Callable[[], None], settings: BenchSettings,
               prepare: Callable[[], None] | None, clock_name: str, *, flush: str | None,
               per_launch: int = 1) -> Timed:
        """Time ``launch_fn`` with the L2 evicted by ``flush`` ("read", "write"; None: hot)
        before each repetition; with ``per_launch`` > 1 it launches that many kernels and
        each sample is its time divided by ``per_launch``."""
        import numpy as np

        from workbench.engine.bench import summarize
        from workbench.engine.timing_loop import time_launches

        evict = None
        if flush is not None:
            evict = self.flusher(flush_bytes(self.attrs.get("L2_CACHE_SIZE", 64 << 20)), flush)
        gate = self.gate
        kernel_clock = self._kernel_clock(settings, clock_name)
        spin, before, nvml_s = self.warm_up()
        spin_up_s = spin.spin_up_s
        bench_s = 0.0
        while True:  # twice at most: a timing that skipped the spin-up and started cold
            timeouts_before = gate.timeouts if gate is not None else 0
            if gate is not None:
                gate.clocks_mhz = []
            times = time_launches(self.cuda, self.stream, launch_fn, settings,
                                  prepare=prepare, flush=evict, gate=gate,
                                  kernel_clock=kernel_clock, tick_us=self.tick_us)
            bench_s += times.wall_s
            self.last_busy_s = self.clock()
            if spin.ran or not started_cold(gate.clocks_mhz if gate is not None else (),
                                            spin.reference_mhz):
                break
            skipped = spin
            spin, before, more_nvml_s = self.warm_up(SpinUpReason.RETIMED)
            spin = replace(spin, idle_s=skipped.idle_s, sm_clock_mhz=skipped.sm_clock_mhz)
            spin_up_s += spin.spin_up_s
            nvml_s += more_nvml_s
        samples = times.samples_us
        if per_launch > 1:
            samples = [x / per_launch for x in samples]
        after = self.nvml.sample()
        nvml_s += self.clock() - self.last_busy_s
        ref_clock = spin.reference_mhz
        tick_us = self.tick_us if per_launch == 1 else 0.0
        timing = summarize(samples, l2_flushed=flush is not None,
                           sm_clock_mhz=after.get("sm_clock_mhz"),
                           mem_clock_mhz=after.get("mem_clock_mhz"),
                           temperature_c=after.get("temperature_c"),
                           throttled=throttled([before, after], ref_clock), tick_us=tick_us)
        sm_clock = None
        if gate is not None and gate.clocks_mhz:
            clocks = np.asarray(gate.clocks_mhz)
            sm_clock = ClockStats(median_mhz=round(float(np.median(clocks)), 1),
                                  min_mhz=round(float(clocks.min()), 1),
                                  max_mhz=round(float(clocks.max()), 1),
                                  batches=int(clocks.size))
        method = TimingMethod(timer="events" if kernel_clock is None else "cupti",
                              flush=flush or "none", gated=gate is not None,
                              clock_tick_us=tick_us,
                              gate_timeouts=(gate.timeouts - timeouts_before)
                              if gate is not None else 0,
                              sm_clock=sm_clock)
        events = times.event_samples_us if kernel_clock is not None else []
        return Timed(timing=timing, samples_us=tuple(round(x, 4) for x in samples),
                      event_samples_us=tuple(round(x, 4) for x in events), method=method,
                      bench_s=bench_s,
                      nvml={"before": before, "after": after,
                            "reference_sm_clock_mhz": ref_clock},
                      spin_up_s=spin_up_s, nvml_s=nvml_s, spin_up=spin)

    def close(self) -> None:
        """Release the CUPTI clock and the flush buffer."""
        if self.cupti is not None:
            self.cupti.close()
        if self.flush_buf is not None:
            self.flush_buf.free()
            self.flush_buf = None
