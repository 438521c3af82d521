"""Per-phase seconds of one measurement (issue 29 item 5): the GPU worker's phases
(module load, spin-up when the clocks may be low, NVML, timing, the after-check; the
spin-up rule itself: tests/test_timing_spin_up.py), the parent's
round trip over the pipe, and a Dask measure task's own phases (its wait for the runner's
turn). Pure: injected clocks, fake locks, no GPU, no Dask cluster."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from workbench.core.records import Config, Status, TrialResult
from workbench.engine.dask_tasks import _PhaseClock, task_phases
from workbench.engine.gpu_session import evaluate_phases
from workbench.engine.gpu_timing import Timed
from workbench.engine.runner import request_phases
from workbench.engine.worker_messages import EvaluateReply

pytestmark = pytest.mark.timeout(30)


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _timed(spin_up_s: float = 0.2, nvml_s: float = 0.004, bench_s: float = 0.026) -> Timed:
    return Timed(timing=None, samples_us=(), event_samples_us=(), method=None,  # type: ignore[arg-type]
                  bench_s=bench_s, nvml={}, spin_up_s=spin_up_s, nvml_s=nvml_s)


def test_worker_phases_add_up_to_the_request() -> None:
    phases = evaluate_phases(module_s=0.001, verify_s=0.0015, timed=_timed(),
                             check_after_s=0.0005, evaluate_s=0.2400)
    assert phases["spin_up_s"] == pytest.approx(0.2)
    assert phases["module_s"] == pytest.approx(0.001)  # inside verify_s, not added twice
    named = sum(phases[k] for k in ("verify_s", "spin_up_s", "nvml_s", "bench_s",
                                    "check_after_s", "other_s"))
    assert named == pytest.approx(phases["evaluate_s"])
    assert phases["other_s"] == pytest.approx(0.24 - 0.2320)


def test_phases_cross_the_pipe_and_the_parent_adds_its_round_trip() -> None:
    worker = evaluate_phases(0.001, 0.0015, _timed(spin_up_s=0.0), 0.0005, 0.040)
    reply = EvaluateReply(status=Status.OK, verify_s=0.0015, phases_s=worker)
    back = EvaluateReply.from_message(json.loads(json.dumps(reply.to_message())))
    assert back.phases_s == worker
    seen = request_phases(back.phases_s, request_s=0.047)
    assert seen["request_s"] == pytest.approx(0.047)
    assert seen["pipe_s"] == pytest.approx(0.007)
    assert "phases_s" not in EvaluateReply(status=Status.OK).to_message()


class _TimedLock:
    """A lock whose acquisition takes ``wait_s`` on the injected clock (another task held
    the runner that long)."""

    def __init__(self, clock: _Clock, wait_s: float) -> None:
        self.clock, self.wait_s, self.inner = clock, wait_s, threading.Lock()

    def __enter__(self) -> None:
        self.clock.now += self.wait_s
        self.inner.acquire()

    def __exit__(self, *exc: object) -> None:
        self.inner.release()


def test_a_measure_task_counts_its_wait_for_the_turn_apart_from_its_work() -> None:
    clock = _Clock()
    phases = _PhaseClock(clock.now, clock=clock)
    with phases.turn(_TimedLock(clock, wait_s=0.150)):  # type: ignore[arg-type]
        clock.now += 0.001  # plan
    phases.mark("plan_s")
    clock.now += 0.020  # the local compile lookup
    phases.mark("local_compile_s")
    with phases.turn(_TimedLock(clock, wait_s=0.050)):  # type: ignore[arg-type]
        clock.now += 0.060  # verify and time on the device
    phases.mark("finish_s")
    got = phases.phases()
    assert got["wait_turn_s"] == pytest.approx(0.200)
    assert got["plan_s"] == pytest.approx(0.001)
    assert got["local_compile_s"] == pytest.approx(0.020)
    assert got["finish_s"] == pytest.approx(0.060)
    assert got["task_s"] == pytest.approx(0.281)


def test_task_phases_join_the_workers_phases_in_the_trial() -> None:
    result = TrialResult(config=Config({"B": 1}), shape="s", dtype="bf16", status=Status.OK,
                         extra={"phases_s": {"bench_s": 0.026}, "launch": {"grid": [1]}})
    merged = task_phases(result, {"wait_turn_s": 0.2, "task_s": 0.29})
    assert merged.extra["phases_s"] == {"bench_s": 0.026, "wait_turn_s": 0.2, "task_s": 0.29}
    assert merged.extra["launch"] == {"grid": [1]}


def test_a_reused_measurement_does_not_claim_the_seconds_of_the_one_it_copies(
        tmp_path: Path) -> None:
    from workbench.core.records import Candidate
    from workbench.core.template import Launch
    from workbench.engine.compiler import CompileResult
    from workbench.engine.runner import LocalRunner, PlannedCandidate, RunnerStats

    runner = object.__new__(LocalRunner)
    runner.stats, runner._measured, runner._cubin_digests = RunnerStats(), {}, {}
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(b"same binary")
    launch = Launch(grid=(1, 1, 1), block=(32, 1, 1), smem_bytes=0)
    compiled = CompileResult(instance_hash="h2", arch="sm_90a", ok=True,
                             cubin_path=str(cubin), usage=None, compile_s=0.5)
    earlier = TrialResult(config=Config({"B": 1}), shape="s", dtype="bf16", status=Status.OK,
                          extra={"phases_s": {"bench_s": 0.026}, "launch": {"grid": [1]}})
    runner._measured[(runner._cubin_digest(str(cubin)), repr(launch), "s", "bf16")] = earlier
    plan = PlannedCandidate(Candidate(Config({"B": 2}), "s", "bf16"),
                            type("I", (), {"hash": "h2", "entry": "k"})(), launch)
    reused = runner.finish(plan, compiled)
    assert reused.extra["reused_from"] == {"B": 1}
    assert "phases_s" not in reused.extra and reused.extra["launch"] == {"grid": [1]}
