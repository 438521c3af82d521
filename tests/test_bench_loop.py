"""The timing loop's order of operations, driven by a recording fake of the CUDA driver.

What matters for trustworthy timing and cannot be seen in the numbers: inputs restored and
the L2 evicted *outside* each event pair, every repetition of a batch enqueued behind the
gate before the gate opens (so host delays never fall inside a timed region), the gate
opened even when enqueueing fails, and the stopping rule applied per batch.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from workbench.core.errors import WorkbenchError
from workbench.engine.bench import RETIRED_FIELDS, BenchSettings, resolve_timer
from workbench.engine.timing_loop import (
    TAIL_REPS,
    TIMING_KERNELS_SOURCE,
    ClockMismatch,
    time_launches,
)

pytestmark = pytest.mark.timeout(60)


class _Log:
    def __init__(self) -> None:
        self.ops: list[str] = []
        self.clock_us = 0.0


class _Event:
    def __init__(self, log: _Log) -> None:
        self.log = log
        self.at_us = 0.0

    def record(self, stream: object) -> None:
        self.log.ops.append("record")
        self.at_us = self.log.clock_us

    def synchronize(self) -> None:
        self.log.ops.append("sync")

    def time_since(self, other: _Event) -> float:  # milliseconds, like pycuda
        return (self.at_us - other.at_us) / 1e3


class _Cuda:
    def __init__(self, log: _Log) -> None:
        self.log = log

    def Event(self) -> _Event:  # pycuda's name
        return _Event(self.log)


class _Stream:
    def __init__(self, log: _Log) -> None:
        self.log = log

    def synchronize(self) -> None:
        self.log.ops.append("stream-sync")


class _Gate:
    def __init__(self, log: _Log) -> None:
        self.log = log

    def hold(self) -> None:
        self.log.ops.append("hold")

    def release(self) -> None:
        self.log.ops.append("release")

    def settled(self) -> None:
        self.log.ops.append("settled")


def _run(settings: BenchSettings, *, gate: bool = True, launch_us: float = 5.0,
         fail_at: int | None = None) -> tuple[_Log, list[float]]:
    log = _Log()
    launches = 0

    def launch() -> None:
        nonlocal launches
        launches += 1
        if fail_at is not None and launches == fail_at:
            raise RuntimeError("launch failed")
        log.ops.append("launch")
        log.clock_us += launch_us

    samples = time_launches(
        _Cuda(log), _Stream(log), launch, settings,
        prepare=lambda: log.ops.append("restore"), flush=lambda: log.ops.append("flush"),
        gate=_Gate(log) if gate else None, tail_reps=0).samples_us
    return log, samples


SETTINGS = BenchSettings(warmup_ms=0.0, min_reps=4, max_reps=12, max_time_s=30.0, timeout_s=60.0,
                         batch_reps=4, target_rse_pct=5.0)


def test_each_batch_is_enqueued_behind_the_gate_and_synchronised_after_it_opens() -> None:
    log, samples = _run(SETTINGS)
    timed = log.ops[log.ops.index("hold"):]
    # constant 5 us launches: the first batch already meets the stopping rule
    assert samples == [5.0] * 4
    per_rep = ["restore", "flush", "record", "launch", "record"]
    assert timed == ["hold", *per_rep * 4, "release", "sync", "settled"]


def test_restore_and_flush_stay_outside_the_event_pair() -> None:
    log, _ = _run(SETTINGS)
    ops = log.ops[log.ops.index("hold"):]
    for i, op in enumerate(ops):
        if op == "launch":
            assert ops[i - 1] == "record" and ops[i + 1] == "record"
            assert ops[i - 3:i - 1] == ["restore", "flush"]


def test_without_a_gate_the_loop_still_batches() -> None:
    log, samples = _run(SETTINGS, gate=False)
    assert "hold" not in log.ops and "release" not in log.ops
    assert len(samples) == 4


def test_the_gate_opens_even_when_a_launch_raises() -> None:
    # warm-up makes 2 launches; the 4th launch is the second timed one
    with pytest.raises(RuntimeError, match="launch failed"):
        _run(SETTINGS, fail_at=4)
    log = _Log()
    calls = {"n": 0}

    def launch() -> None:
        calls["n"] += 1
        log.ops.append("launch")
        if calls["n"] == 4:
            raise RuntimeError("launch failed")

    with pytest.raises(RuntimeError):
        time_launches(_Cuda(log), _Stream(log), launch, SETTINGS, gate=_Gate(log), tail_reps=0)
    assert log.ops[log.ops.index("hold"):] == ["hold", "record", "launch", "record", "record",
                                               "launch", "release"]


def test_noisy_samples_run_more_batches_until_max_reps() -> None:
    log = _Log()
    times = iter([5.0, 9.0, 5.5, 12.0, 5.0, 7.0, 6.0, 11.0, 5.2, 8.0, 5.1, 10.0])

    def launch() -> None:
        log.ops.append("launch")
        log.clock_us += next(times, 5.0)

    settings = BenchSettings(warmup_ms=0.0, min_reps=4, max_reps=10, max_time_s=30.0, timeout_s=60.0,
                             batch_reps=4, target_rse_pct=0.01)
    samples = time_launches(_Cuda(log), _Stream(log), launch, settings,
                            gate=_Gate(log), tail_reps=0).samples_us
    assert len(samples) == 10  # 4 + 4 + a last batch cut to max_reps
    assert log.ops.count("hold") == 3 == log.ops.count("release")


def test_tail_repetitions_are_enqueued_like_timed_ones_and_never_counted() -> None:
    log = _Log()
    timed_us = iter([5.0] * 2 + [5.0] * 4)  # warm-up, then the timed batch

    def launch() -> None:  # the tail's launches take 50 us: any of them counted would show
        log.ops.append("launch")
        log.clock_us += next(timed_us, 50.0)

    settings = BenchSettings(warmup_ms=0.0, min_reps=4, max_reps=4, max_time_s=30.0,
                             timeout_s=60.0, batch_reps=4, target_rse_pct=5.0)
    samples = time_launches(_Cuda(log), _Stream(log), launch, settings,
                            prepare=lambda: log.ops.append("restore"),
                            flush=lambda: log.ops.append("flush"), gate=_Gate(log),
                            tail_reps=3).samples_us
    assert samples == [5.0] * 4
    per_rep = ["restore", "flush", "record", "launch", "record"]
    assert log.ops[log.ops.index("hold"):] == ["hold", *per_rep * 7, "release", "sync", "settled"]


def test_the_worker_queues_six_tail_repetitions_unless_told_otherwise() -> None:
    log = _Log()

    def launch() -> None:
        log.ops.append("launch")
        log.clock_us += 5.0

    settings = BenchSettings(warmup_ms=0.0, min_reps=4, max_reps=4, max_time_s=30.0,
                             timeout_s=60.0, batch_reps=4, target_rse_pct=5.0)
    time_launches(_Cuda(log), _Stream(log), launch, settings, gate=_Gate(log))
    held = log.ops[log.ops.index("hold"):log.ops.index("release")]
    assert TAIL_REPS == 6 and held.count("launch") == 4 + TAIL_REPS


class _KernelClock:
    """Records each launch's 'kernel duration' (the event time minus a fixed front-end cost)
    and hands them out like CuptiClock.take: everything finished since the last call."""

    def __init__(self, log: _Log, front_end_us: float = 1.5) -> None:
        self.log = log
        self.front_end_us = front_end_us
        self.pending: list[float] = []
        self.calls: list[int] = []
        self.lose = 0  # launches the next call 'misses'

    def launched(self, event_us: float) -> None:
        self.pending.append(event_us - self.front_end_us)

    def __call__(self, expected: int) -> list[float]:
        self.calls.append(expected)
        self.log.ops.append("take")
        got, self.pending = self.pending[self.lose:], []
        return got


def _clocked(settings: BenchSettings, times_us: list[float], lose: int = 0,
             tail_reps: int = 0) -> tuple[_Log, _KernelClock, object]:
    log = _Log()
    clock = _KernelClock(log)
    clock.lose = lose
    it = iter(times_us)

    def launch() -> None:
        log.ops.append("launch")
        t = next(it, 50.0)
        log.clock_us += t
        clock.launched(t)

    times = time_launches(_Cuda(log), _Stream(log), launch, settings, gate=_Gate(log),
                          kernel_clock=clock, tail_reps=tail_reps)
    return log, clock, times


def test_a_kernel_clock_supplies_the_samples_and_the_event_times_are_kept_beside_them() -> None:
    settings = BenchSettings(warmup_ms=0.0, min_reps=4, max_reps=4, max_time_s=30.0,
                             timeout_s=60.0, batch_reps=4, target_rse_pct=5.0)
    # 2 warm-up launches (60 us: must not be counted), 4 timed, 2 tail (50 us each)
    log, clock, times = _clocked(settings, [60.0, 60.0, 5.0, 6.0, 7.0, 8.0], tail_reps=2)
    assert times.samples_us == [3.5, 4.5, 5.5, 6.5]  # clock: event time - 1.5 us front end
    assert times.event_samples_us == [5.0, 6.0, 7.0, 8.0]
    # the warm-up is forgotten (take(0)) and each batch asks for timed + tail launches,
    # after the stream (tail included) is synchronised
    assert clock.calls == [0, 6]
    assert log.ops[-4:] == ["sync", "settled", "stream-sync", "take"]


def test_a_kernel_clock_that_misses_launches_is_an_error_naming_the_counts() -> None:
    settings = BenchSettings(warmup_ms=0.0, min_reps=4, max_reps=4, max_time_s=30.0,
                             timeout_s=60.0, batch_reps=4, target_rse_pct=5.0)
    with pytest.raises(ClockMismatch, match="saw 3 launches of a batch of 4") as info:
        _clocked(settings, [5.0] * 6, lose=1)
    assert info.value.details == {"key": "kernel_clock", "value": 3, "expected": 4}


def test_timer_is_validated_with_the_key_named() -> None:
    with pytest.raises(WorkbenchError, match="timer") as info:
        BenchSettings(timer="ncu")
    assert info.value.details["expected"] == "one of ('auto', 'events', 'cupti')"
    assert BenchSettings.from_dict({"timer": "cupti"}).timer == "cupti"
    assert BenchSettings().timer == "auto"


def test_settings_stored_before_the_timer_existed_mean_the_event_timer() -> None:
    # recordings made before the timer field carry no "timer": they were timed by events
    old = {k: v for k, v in BenchSettings(timer="events").to_dict().items() if k != "timer"}
    assert BenchSettings.from_dict(old).timer == "events"
    assert BenchSettings.from_dict({**old, "timer": "cupti"}).timer == "cupti"


def test_auto_timer_resolves_to_cupti_where_libcupti_loads_and_says_why_otherwise() -> None:
    settings, note = resolve_timer(BenchSettings(), None)
    assert settings.timer == "cupti" and note == "cupti: auto: libcupti loaded"
    settings, note = resolve_timer(BenchSettings(), "no usable libcupti; tried: /x: gone")
    assert settings.timer == "events"
    assert note == "events: auto, no usable libcupti (no usable libcupti; tried: /x: gone)"
    same, note = resolve_timer(BenchSettings(timer="events"), None)
    assert same.timer == "events" and note == "events: asked for"
    # asking for CUPTI explicitly where it cannot load is an error naming why, not events
    with pytest.raises(WorkbenchError, match="tried: /x: gone") as info:
        resolve_timer(BenchSettings(timer="cupti"), "tried: /x: gone")
    assert info.value.details == {"key": "timer", "value": "cupti",
                                  "expected": "a loadable libcupti"}


def test_research_settings_are_not_settings() -> None:
    for name in ("flush_method", "host_gate", "tail_reps", "placements", "windows",
                 "window_gap_ms", "carveout", "l2_flush_bytes", "graph_launches"):
        assert name not in BenchSettings.__dataclass_fields__
        with pytest.raises(TypeError):
            BenchSettings(**{name: RETIRED_FIELDS[name]})


def test_stored_settings_with_retired_fields_read_back_at_the_fixed_value_only() -> None:
    # a recording's "bench" as the H100 sweeps of 2026-11-22 wrote it
    stored = {"warmup_ms": 1.0, "min_reps": 10, "max_reps": 400, "max_time_s": 0.1,
              "target_rse_pct": 0.25, "flush_l2": True, "l2_flush_bytes": 0, "timeout_s": 5.0,
              "batch_reps": 10, "flush_method": "read", "host_gate": True, "tail_reps": 6,
              "placements": 8, "scatter_placements": False, "timer": "cupti", "windows": 1,
              "window_gap_ms": 0.0, "carveout": "driver"}
    assert BenchSettings.from_dict(stored) == BenchSettings(
        warmup_ms=1.0, min_reps=10, max_reps=400, max_time_s=0.1, target_rse_pct=0.25,
        timeout_s=5.0, batch_reps=10, timer="cupti")
    # a research run's settings cannot silently become the default protocol
    for key, value in (("tail_reps", 0), ("flush_method", "write"), ("carveout", "occupancy"),
                       ("windows", 8), ("host_gate", False)):
        with pytest.raises(WorkbenchError, match=f"BenchSettings.{key} = ") as info:
            BenchSettings.from_dict({**stored, key: value})
        assert info.value.details == {"key": key, "value": value,
                                      "expected": RETIRED_FIELDS[key]}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_timing_kernels_keep_their_loads_and_poll_a_volatile_flag(tmp_path: Path) -> None:
    src = tmp_path / "timing.cu"
    src.write_text(TIMING_KERNELS_SOURCE)
    ptx = tmp_path / "timing.ptx"
    subprocess.run(["nvcc", "-arch=sm_90", "-ptx", "-o", str(ptx), str(src)], check=True,
                   capture_output=True, timeout=120)
    text = ptx.read_text()
    evict = text[text.index(".entry wb_evict"):]
    gate = text[text.index(".entry wb_gate"):text.index(".entry wb_evict")] \
        if text.index(".entry wb_gate") < text.index(".entry wb_evict") else \
        text[text.index(".entry wb_gate"):]
    assert "ld.global.nc.v4.f32" in evict  # the eviction reads survive optimisation
    assert "ld.volatile.global" in gate  # the flag is re-read every spin
    assert "%globaltimer" in gate  # and the gate has a timeout


def test_the_gate_clock_is_cycles_over_nanoseconds_and_none_for_a_brief_hold() -> None:
    import numpy as np

    from workbench.engine.timing_loop import GATE_CLOCK_MIN_NS, GATE_STATE_INT32, gate_clock_mhz

    state = np.zeros(GATE_STATE_INT32, dtype=np.int32)
    words = state.view(np.uint64)
    words[1], words[2] = 198_000, 100_000  # 198k SM cycles in 100 us = 1980 MHz
    assert gate_clock_mhz(state) == pytest.approx(1980.0)
    words[2] = GATE_CLOCK_MIN_NS - 1
    assert gate_clock_mhz(state) is None


def test_the_timer_is_part_of_a_live_runners_provenance() -> None:
    from workbench.engine.runner import live_description

    name = "NVIDIA H100 80GB HBM3"
    assert live_description(name, BenchSettings(timer="events")) == f"{name} (live)"
    assert live_description(name, BenchSettings(timer="cupti")) == f"{name} (live, cupti timer)"
