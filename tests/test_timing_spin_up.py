"""The spin-up before a timing runs on evidence that the clocks are low (issue 29 item 5):
the rule (pure), the GPU session's decision with a fake NVML and an injected clock, the
retime when the timing's own gate saw a cold batch, and the record that reaches the
trial. No GPU, no sleeps: the injected clock moves by the time each step would take."""

from __future__ import annotations

import json
from typing import Any

import pytest

from workbench.core.records import Status
from workbench.engine import timing_loop
from workbench.engine.bench import BenchSettings
from workbench.engine.gpu_timing import DeviceTimer
from workbench.engine.spin_up import (
    IDLE_GAP_S,
    SPIN_UP_S,
    TRUST_IDLE_S,
    WARM_CLOCK_FRACTION,
    SpinUp,
    SpinUpReason,
    spin_up_reason,
    started_cold,
)
from workbench.engine.timing_loop import LaunchTimes
from workbench.engine.worker_messages import EvaluateReply

pytestmark = pytest.mark.timeout(30)

REFERENCE_MHZ = 1980.0  # the H100's application SM clock
IDLE_MHZ = 345          # what NVML reads on an idle H100


# -- the rule ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("idle_s", "clock", "reference", "reason"), [
    (IDLE_GAP_S / 2, IDLE_MHZ, REFERENCE_MHZ, SpinUpReason.RECENT),  # recent work: no read
    (0.2, 1980, REFERENCE_MHZ, SpinUpReason.WARM),
    (0.2, WARM_CLOCK_FRACTION * REFERENCE_MHZ, REFERENCE_MHZ, SpinUpReason.WARM),  # the edge
    (0.2, WARM_CLOCK_FRACTION * REFERENCE_MHZ - 1, REFERENCE_MHZ, SpinUpReason.LOW),
    (0.2, IDLE_MHZ, REFERENCE_MHZ, SpinUpReason.LOW),
    (0.2, None, REFERENCE_MHZ, SpinUpReason.UNKNOWN),  # no NVML reading
    (0.2, 1980, None, SpinUpReason.UNKNOWN),           # nothing to compare with
    (TRUST_IDLE_S, 1980, REFERENCE_MHZ, SpinUpReason.LONG_IDLE),  # not trusted that long
])
def test_the_rule(idle_s: float, clock: float | None, reference: float | None,
                  reason: SpinUpReason) -> None:
    assert spin_up_reason(idle_s, clock, reference) is reason


def test_only_evidence_of_warm_clocks_skips_the_spin_up() -> None:
    assert {r for r in SpinUpReason if not r.spins} == {SpinUpReason.RECENT, SpinUpReason.WARM}


def test_started_cold_reads_the_gates_batch_clocks() -> None:
    assert started_cold([1200.0, 1980.0, 1980.0], REFERENCE_MHZ)
    assert not started_cold([1975.0, 1980.0], REFERENCE_MHZ)
    assert not started_cold([], REFERENCE_MHZ)  # the gate could not tell
    assert not started_cold([1200.0], None)


# -- the session's decision (a fake NVML, an injected clock) ---------------------------------

class _Clock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class _FakeNvml:
    """NVML answering the SM clocks it is given, one per sample (the last one repeats);
    each sample costs 1 ms on the injected clock; ``static`` counts its calls."""

    def __init__(self, clock: _Clock, sm_clocks: list[int | None],
                 static: dict[str, Any] | None = None) -> None:
        self.clock = clock
        self.sm_clocks = sm_clocks
        self.nv = object() if static is not None else None
        self._static = static or {}
        self.samples = 0
        self.static_calls = 0

    def static(self) -> dict[str, Any]:
        self.static_calls += 1
        return dict(self._static)

    def sample(self) -> dict[str, Any]:
        if self.nv is None:
            return {}
        self.clock.now += 0.001
        value = self.sm_clocks[min(self.samples, len(self.sm_clocks) - 1)]
        self.samples += 1
        return {"sm_clock_mhz": value, "mem_clock_mhz": 2619, "temperature_c": 40,
                "throttle_reasons": 0}


def _session(clock: _Clock, nvml: _FakeNvml, idle_s: float) -> tuple[DeviceTimer, list[float]]:
    """A DeviceTimer without a CUDA context: what the spin-up decision reads."""
    session = DeviceTimer(cuda=None, stream=None, attrs={}, nvml=nvml)  # type: ignore[arg-type]
    session.clock = clock
    session.last_busy_s = clock.now - idle_s
    busy: list[float] = []

    def fake_busy(ms: float) -> None:  # the GPU kept busy: the clock moves by that much
        busy.append(ms)
        clock.now += ms / 1e3

    session.busy = fake_busy  # type: ignore[method-assign]
    return session, busy


H100_STATIC = {"app_sm_clock_mhz": 1980, "max_sm_clock_mhz": 1980, "driver": "580"}


def test_warm_clocks_after_an_idle_gap_start_the_timing_at_once() -> None:
    clock = _Clock()
    nvml = _FakeNvml(clock, [1980], H100_STATIC)
    session, busy = _session(clock, nvml, idle_s=0.3)
    spin, before, nvml_s = session.warm_up()
    assert busy == []
    assert spin == SpinUp(ran=False, reason=SpinUpReason.WARM, idle_s=spin.idle_s,
                          sm_clock_mhz=1980.0, reference_mhz=1980.0)
    assert spin.idle_s == pytest.approx(0.3)
    assert before["sm_clock_mhz"] == 1980  # the timing's "before" reading is this one
    assert nvml_s == pytest.approx(0.001)


def test_low_clocks_pay_the_spin_up_and_record_both_readings() -> None:
    clock = _Clock()
    nvml = _FakeNvml(clock, [IDLE_MHZ, 1980], H100_STATIC)
    session, busy = _session(clock, nvml, idle_s=0.3)
    spin, before, nvml_s = session.warm_up()
    assert busy == [pytest.approx(SPIN_UP_S * 1e3)]
    assert spin.ran and spin.reason is SpinUpReason.LOW
    assert spin.spin_up_s == pytest.approx(SPIN_UP_S)
    assert (spin.sm_clock_mhz, spin.sm_clock_after_mhz) == (IDLE_MHZ, 1980)
    assert before["sm_clock_mhz"] == 1980  # read again after the spin-up
    assert nvml_s == pytest.approx(0.002)


def test_without_nvml_every_idle_gap_still_spins_up() -> None:
    clock = _Clock()
    session, busy = _session(clock, _FakeNvml(clock, [None], static=None), idle_s=0.3)
    spin, before, _ = session.warm_up()
    assert spin.ran and spin.reason is SpinUpReason.UNKNOWN and before == {}
    assert busy == [pytest.approx(SPIN_UP_S * 1e3)]


def test_right_after_timed_work_nothing_spins_even_at_a_low_reading() -> None:
    clock = _Clock()
    session, busy = _session(clock, _FakeNvml(clock, [IDLE_MHZ], H100_STATIC),
                             idle_s=IDLE_GAP_S / 2)
    spin, _, _ = session.warm_up()
    assert not spin.ran and spin.reason is SpinUpReason.RECENT and busy == []


def test_nvml_static_facts_are_read_once_per_session() -> None:
    clock = _Clock()
    nvml = _FakeNvml(clock, [1980], H100_STATIC)
    session, _ = _session(clock, nvml, idle_s=0.3)
    for _ in range(5):
        session.warm_up()
    assert nvml.static_calls == 1


# -- the timing checks itself: a cold start the gate saw is timed again -----------------------

class _FakeGate:
    timeouts = 0

    def __init__(self) -> None:
        self.clocks_mhz: list[float] = []


def _timed_session(monkeypatch: pytest.MonkeyPatch, nvml_clocks: list[int | None],
                   gate_clocks: list[list[float]]) -> tuple[DeviceTimer, list[float], list[int]]:
    """A session whose timing loop is faked: each call takes 25 ms on the injected clock
    and its gate reports the next list of batch clocks."""
    clock = _Clock()
    session, busy = _session(clock, _FakeNvml(clock, nvml_clocks, H100_STATIC), idle_s=0.3)
    gate = _FakeGate()
    session.gate = gate  # type: ignore[assignment]
    calls: list[int] = []

    def fake_time_launches(*args: Any, **kwargs: Any) -> LaunchTimes:
        gate.clocks_mhz = list(gate_clocks[len(calls)])
        calls.append(1)
        clock.now += 0.025
        return LaunchTimes(samples_us=[2.5, 2.4, 2.6], event_samples_us=[2.5, 2.4, 2.6],
                           wall_s=0.025)

    monkeypatch.setattr(timing_loop, "time_launches", fake_time_launches)
    return session, busy, calls


def test_a_skipped_spin_up_whose_gate_saw_a_cold_batch_is_retimed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    session, busy, calls = _timed_session(monkeypatch, [1980, 1980],
                                          [[1100.0, 1980.0], [1980.0, 1980.0]])
    timed = session.timed(lambda: None, BenchSettings(timer="events"), None, "k", flush=None)
    assert len(calls) == 2  # the cold timing was thrown away
    assert busy == [pytest.approx(SPIN_UP_S * 1e3)]
    spin = timed.spin_up
    assert spin is not None and spin.ran and spin.retimed
    assert spin.reason is SpinUpReason.RETIMED
    assert spin.idle_s == pytest.approx(0.3) and spin.sm_clock_mhz == 1980  # the first look
    assert timed.method.sm_clock is not None and timed.method.sm_clock.min_mhz == 1980.0
    assert timed.bench_s == pytest.approx(0.050)  # both timings' seconds
    assert timed.spin_up_s == pytest.approx(SPIN_UP_S)


def test_a_warm_skip_whose_gate_agrees_is_timed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    session, busy, calls = _timed_session(monkeypatch, [1980], [[1980.0, 1975.0]])
    timed = session.timed(lambda: None, BenchSettings(timer="events"), None, "k", flush=None)
    assert len(calls) == 1 and busy == []
    assert timed.spin_up is not None and timed.spin_up.reason is SpinUpReason.WARM
    assert timed.spin_up_s == 0.0 and timed.bench_s == pytest.approx(0.025)
    assert timed.nvml["reference_sm_clock_mhz"] == 1980.0


def test_a_timing_after_a_spin_up_is_not_retimed(monkeypatch: pytest.MonkeyPatch) -> None:
    # a power-limited kernel runs under the fraction even warm: one spin-up, one timing
    session, busy, calls = _timed_session(monkeypatch, [IDLE_MHZ, 1700], [[1650.0, 1700.0]])
    timed = session.timed(lambda: None, BenchSettings(timer="events"), None, "k", flush=None)
    assert len(calls) == 1 and len(busy) == 1
    assert timed.spin_up is not None and timed.spin_up.reason is SpinUpReason.LOW


# -- the record reaches the trial ------------------------------------------------------------

def test_the_spin_up_record_crosses_the_pipe() -> None:
    spin = SpinUp(ran=True, reason=SpinUpReason.LOW, idle_s=0.31, sm_clock_mhz=345.0,
                  reference_mhz=1980.0, spin_up_s=0.2001, sm_clock_after_mhz=1980.0)
    reply = EvaluateReply(status=Status.OK, spin_up=spin)
    back = EvaluateReply.from_message(json.loads(json.dumps(reply.to_message())))
    assert back.spin_up == spin
    assert back.spin_up is not None and back.spin_up.to_message()["reason"] == "clock low"
    assert EvaluateReply.from_message(EvaluateReply(status=Status.OK).to_message()).spin_up \
        is None
