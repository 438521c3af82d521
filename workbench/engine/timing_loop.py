"""The timing loop the GPU worker runs, and the device kernels it needs.

Pure Python over an injected ``cuda`` module (pycuda's, or the torch equivalents of
``benchmarks/peers/gpu_harness.py``), so it is tested with fakes; the worker
(:mod:`workbench.engine.gpu_session`) supplies the launch, the L2 flush and the gate.
:class:`workbench.engine.bench.BenchSettings` holds what a user sets (timer, flush on/off,
RSE target, time cap, batch size, repetition bounds); the rest of the protocol is fixed
here, chosen by the A/B runs in benchmarks/notes/findings.md:

* warm up for ``warmup_ms`` (at least two launches), so module load and clock ramp stay out;
* before each timed repetition restore ``inout`` arguments, rotating over
  :data:`PLACEMENTS` copies of the inputs, then (``flush_l2``) evict the L2 by reading a
  buffer of :data:`L2_FLUSH_FACTOR` x the L2 size, which leaves it full of clean lines (the
  "write" cache condition zeroes the buffer instead: dirty lines whose write-back lands in
  the next timed region, 7-19 % slower small kernels on the H100). Without the flush the
  repetitions run back to back on a hot cache ("warm");
* one CUDA event pair around the single launch; with ``timer="cupti"`` the samples are the
  kernel's own durations from CUPTI activity records of the same launches (the event pairs
  are still recorded and reported beside them; see :mod:`workbench.engine.cupti`);
* each batch of ``batch_reps`` timed repetitions is followed by :data:`TAIL_REPS`
  identical untimed ones, so every timed repetition has the same work queued behind it: on
  the H100 the last ~5 repetitions of a batch ran 5-10 % faster than the rest (a drained
  queue), which made small kernels' medians bimodal; with 6 the median by position in the
  batch is flat within 2 %;
* each batch is enqueued behind a *gate* kernel that spins until the host has enqueued the
  whole batch, so the GPU runs the batch back to back and no host delay (Python, a busy
  CPU, a page fault) can fall between a start event and its launch. Without it a kernel of
  a few microseconds was timed together with whatever host time separated the two, which
  is how whole timing windows of small kernels came out 2-5x slow;
* repeat until the relative standard error of the median is at most ``target_rse_pct``
  (after ``min_reps``), or ``max_reps`` / ``max_time_s`` is reached
  (:func:`workbench.engine.bench.should_stop`, tick-aware with the GPU timer's step).

Knobs the research runs varied (separate timing windows and gaps between them, the
shared-memory carveout, ungated or tail-less batches, one input placement, scattered
placements, the zeroing flush as a setting) left the product: their runs and data stay in
benchmarks/ (README tables, results/), and a stored settings dict naming one is read by
:meth:`BenchSettings.from_dict` only at the value the protocol fixes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from workbench.core.errors import WorkbenchError
from workbench.engine.bench import BenchSettings, should_stop

#: The L2 flush buffer is this many times the device's L2 size.
L2_FLUSH_FACTOR = 2

#: Untimed repetitions queued after each batch's timed ones (see the module docstring).
TAIL_REPS = 6

#: Timed repetitions rotate over this many copies of the inputs at different addresses.
PLACEMENTS = 8


def flush_bytes(l2_bytes: int) -> int:
    """Size of the L2 flush buffer for a device with ``l2_bytes`` of L2."""
    return L2_FLUSH_FACTOR * l2_bytes


#: Words of the gate's state in pinned memory: flag, timeouts, then two 64-bit counters.
GATE_STATE_INT32 = 6
#: A gate held for less than this measures no clock (the 32 ns timer tick would dominate).
GATE_CLOCK_MIN_NS = 20_000

#: A gate opens by itself after this long (the host stalled while enqueueing a batch);
#: the worker counts such batches and reports them.
GATE_TIMEOUT_NS = 200_000_000

#: Kernels the timing loop needs on the device, compiled by the parent with the worker's
#: check kernels (one module). ``wb_gate`` holds the stream until the host sets a flag in
#: mapped pinned memory (or the timeout passes, counted in ``state[1]``) and leaves the SM
#: cycles and nanoseconds it was held in ``state[2:6]`` (two 64-bit words): the SM clock the
#: batch behind it ran at, measured rather than sampled from NVML; ``wb_evict``
#: reads a buffer (float4 loads) and stores nothing unless its sum hits an impossible value,
#: so the loads stay but no cache line is dirtied; ``wb_tick`` measures the GPU timer's
#: resolution (the step the tick-aware median groups by).
TIMING_KERNELS_SOURCE = r"""
extern "C" __global__ void wb_gate(volatile int* state, unsigned long long timeout_ns) {
  unsigned long long t0, t;
  const long long c0 = clock64();
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  t = t0;
  while (state[0] == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > timeout_ns) { state[1] = state[1] + 1; break; }
    __nanosleep(500);
  }
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  const long long c1 = clock64();
  // the SM cycles and nanoseconds the gate was held: the effective SM clock of the batch
  volatile unsigned long long* probe = (volatile unsigned long long*)(state + 2);
  probe[0] = (unsigned long long)(c1 - c0);
  probe[1] = t - t0;
}
extern "C" __global__ void wb_tick(unsigned long long* out) {
  // The GPU timer's resolution: the smallest step of %globaltimer over 64 changes.
  unsigned long long prev, t, step = ~0ull;
  unsigned changes = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(prev));
  for (long long i = 0; i < (1ll << 26) && changes < 64; ++i) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t != prev) {
      step = t - prev < step ? t - prev : step;
      prev = t;
      ++changes;
    }
  }
  out[0] = step;
  out[1] = changes;
}
extern "C" __global__ void wb_evict(const float4* __restrict__ buf, long long n4,
                                    float* __restrict__ sink) {
  float acc = 0.f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
       i += (long long)gridDim.x * blockDim.x) {
    const float4 v = buf[i];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  if (acc == -1.5e-38f) *sink = acc;  // the buffer holds zeros: never taken
}
"""


class Gate(Protocol):
    """Holds the stream while the host enqueues a batch (see the module docstring)."""

    def hold(self) -> None:
        """Enqueue the gate: work enqueued after it waits until :meth:`release`."""

    def release(self) -> None:
        """Open the gate (the host has enqueued the batch)."""

    def settled(self) -> None:
        """The batch behind the gate has finished (read what the gate measured)."""


@dataclass(frozen=True)
class LaunchTimes:
    """What :func:`time_launches` measured: the samples the stopping rule used, the event
    pairs' times of the same repetitions (equal to ``samples_us`` without a kernel clock),
    and the wall time of the whole loop."""

    samples_us: list[float]
    event_samples_us: list[float]
    wall_s: float


#: Durations (us) of the timed kernel's launches finished since the last call, in launch
#: order; the argument is how many are expected (see :meth:`CuptiClock.take`).
KernelClock = Callable[[int], list[float]]


class ClockMismatch(WorkbenchError):
    """The kernel clock returned a different number of launches than were enqueued."""


def gate_clock_mhz(state: Any) -> float | None:
    """The SM clock (MHz) a gate measured, from its int32 state words; ``None`` when it was
    held too briefly to tell."""
    words = np.asarray(state[:GATE_STATE_INT32], dtype=np.int32).view(np.uint64)
    cycles, ns = int(words[1]), int(words[2])
    if ns < GATE_CLOCK_MIN_NS or cycles <= 0:
        return None
    return 1e3 * cycles / ns


def time_launches(cuda: Any, stream: Any, launch: Callable[[], object],
                  settings: BenchSettings, *, prepare: Callable[[], object] | None = None,
                  flush: Callable[[], object] | None = None,
                  gate: Gate | None = None,
                  kernel_clock: KernelClock | None = None,
                  tick_us: float = 0.0, tail_reps: int = TAIL_REPS) -> LaunchTimes:
    """One timing loop: warm-up, then batches with one CUDA event pair per repetition.

    ``prepare`` restores inputs before every repetition (warm-up included) and ``flush``
    evicts the L2 just before the start event; neither is inside the event pair; what the
    three callables return is ignored. ``cuda`` needs ``Event()`` with pycuda's
    ``record(stream)`` / ``synchronize()`` / ``time_since(start)`` (ms); ``stream`` needs
    ``synchronize()`` (the peers harness passes torch equivalents).
    Repetitions are enqueued in batches of ``settings.batch_reps`` between host
    synchronisations, each batch behind ``gate`` when one is given, so that host overhead
    never lands between a start event and its launch; the stopping rule is checked after
    each batch. ``tail_reps`` untimed repetitions follow each batch (:data:`TAIL_REPS`;
    the tests count launches with 0). ``tick_us`` is the GPU clock's tick, for the
    tick-aware stopping rule.
    """
    began = time.perf_counter()
    warm = 0
    while True:
        if prepare is not None:
            prepare()
        launch()
        warm += 1
        if warm >= 2:
            stream.synchronize()
            if (time.perf_counter() - began) * 1e3 >= settings.warmup_ms:
                break
    if kernel_clock is not None:
        kernel_clock(0)  # forget the warm-up's launches
    batch = settings.batch_reps
    starts = [cuda.Event() for _ in range(batch)]
    ends = [cuda.Event() for _ in range(batch)]
    spare = (cuda.Event(), cuda.Event())  # the tail's events: recorded, never read
    samples: list[float] = []
    events: list[float] = []
    t0 = time.perf_counter()
    while True:
        count = min(batch, settings.max_reps - len(samples))
        if gate is not None:
            gate.hold()
        try:
            for i in range(count + tail_reps):
                if prepare is not None:
                    prepare()
                if flush is not None:
                    flush()
                start, end = (starts[i], ends[i]) if i < count else spare
                start.record(stream)
                launch()
                end.record(stream)
        finally:
            if gate is not None:
                gate.release()
        ends[count - 1].synchronize()
        if gate is not None:
            gate.settled()
        events.extend(ends[i].time_since(starts[i]) * 1e3 for i in range(count))
        if kernel_clock is None:
            samples = events
        else:
            enqueued = count + tail_reps
            if tail_reps:
                stream.synchronize()  # the tail's launches finish before their records count
            durations = kernel_clock(enqueued)
            if len(durations) != enqueued:
                raise ClockMismatch(
                    f"the kernel clock saw {len(durations)} launches of a batch of {enqueued}",
                    key="kernel_clock", value=len(durations), expected=enqueued)
            samples.extend(durations[:count])
        if should_stop(samples, time.perf_counter() - t0, settings, tick_us):
            return LaunchTimes(samples_us=samples, event_samples_us=events,
                               wall_s=time.perf_counter() - began)
