"""The GPU worker's pure parts: framing, the classification table, the parent's watchdog
(with stand-in child processes, no GPU), host-side output checks and the throttle flag."""

from __future__ import annotations

import io
import os
import stat
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from workbench.core.errors import WorkerError
from workbench.core.records import Status
from workbench.engine import worker
from workbench.engine.worker import (
    FAILURE_TABLE,
    WorkerClient,
    WorkerDied,
    WorkerTimeout,
    classify_cuda_error,
    compare_outputs,
    encode_message,
    read_message,
    rule_for_event,
    throttled,
    write_message,
)


def test_frames_round_trip_and_end_cleanly() -> None:
    buf = io.BytesIO()
    messages = [{"cmd": "hello"}, {"x": [1.5, None, "ü"], "n": 2**40}, {}]
    for m in messages:
        write_message(buf, m)
    buf.seek(0)
    assert [read_message(buf) for _ in messages] == messages
    assert read_message(buf) is None


@pytest.mark.parametrize("cut", [2, 4, 10])
def test_torn_frames_raise(cut: int) -> None:
    frame = encode_message({"cmd": "evaluate", "cubin": "x" * 20})
    with pytest.raises(WorkerError):
        read_message(io.BytesIO(frame[:cut]))


def test_oversized_length_is_refused() -> None:
    with pytest.raises(WorkerError):
        read_message(io.BytesIO((2**31).to_bytes(4, "big") + b"{}"))


def test_non_object_frame_is_refused() -> None:
    body = b"[1,2]"
    with pytest.raises(WorkerError):
        read_message(io.BytesIO(len(body).to_bytes(4, "big") + body))


@pytest.mark.parametrize(("text", "status", "restart"), [
    ("LaunchError: cuCtxSynchronize failed: an illegal memory access was encountered",
     Status.CRASHED, True),
    ("LaunchError: cuCtxSynchronize failed: unspecified launch failure", Status.CRASHED, True),
    ("LogicError: cuCtxSynchronize failed: misaligned address", Status.CRASHED, True),
    ("LaunchError: cuLaunchKernel failed: too many resources requested for launch",
     Status.LAUNCH_ERROR, False),
    ("LogicError: cuLaunchKernel failed: invalid argument", Status.LAUNCH_ERROR, False),
    ("LogicError: cuModuleGetFunction failed: named symbol not found", Status.LAUNCH_ERROR, False),
    ("LaunchError: cuCtxSynchronize failed: the launch timed out and was terminated",
     Status.TIMEOUT, True),
])
def test_cuda_errors_classify_by_one_table(text: str, status: Status, restart: bool) -> None:
    rule = classify_cuda_error(text)
    assert rule is not None and rule.status is status and rule.restart_worker is restart


def test_unrecognised_errors_are_not_guessed() -> None:
    assert classify_cuda_error("something entirely new happened") is None


def test_every_status_but_ok_has_a_row_and_events_resolve() -> None:
    covered = {rule.status for rule in FAILURE_TABLE}
    assert covered == set(Status) - {Status.OK}
    assert rule_for_event("watchdog").status is Status.TIMEOUT
    assert rule_for_event("worker_died").status is Status.CRASHED
    assert rule_for_event("compile_failed").status is Status.COMPILE_ERROR
    with pytest.raises(KeyError):
        rule_for_event("no_such_event")


def _fake_python(tmp_path: Path, body: str) -> str:
    """An 'interpreter' that ignores `-m workbench.engine.worker` and runs ``body``."""
    script = tmp_path / "child.py"
    script.write_text(body)
    shim = tmp_path / "python"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n")
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    return str(shim)


ECHO = """
import sys
from workbench.engine.worker import read_message, write_message
while True:
    m = read_message(sys.stdin.buffer)
    if m is None or m.get("cmd") == "quit":
        write_message(sys.stdout.buffer, {"ok": True}); break
    if m.get("cmd") == "die":
        sys.stderr.write("fatal: simulated driver crash\\n"); sys.stderr.flush()
        sys.exit(7)
    if m.get("cmd") == "hang":
        import time; time.sleep(3600)
    write_message(sys.stdout.buffer, {"echo": m, "pid": __import__("os").getpid()})
"""


@pytest.mark.timeout(60)
def test_client_talks_times_out_restarts_and_survives_a_dying_child(tmp_path: Path) -> None:
    client = WorkerClient(python=_fake_python(tmp_path, ECHO))
    try:
        reply = client.request({"cmd": "ping", "n": 1}, timeout_s=20)
        assert reply["echo"] == {"cmd": "ping", "n": 1}
        first_pid = reply["pid"]

        started = time.perf_counter()
        with pytest.raises(WorkerTimeout):
            client.request({"cmd": "hang"}, timeout_s=1.0)
        assert 1.0 <= time.perf_counter() - started < 15
        assert not client.alive
        with pytest.raises(ProcessLookupError):
            os.kill(first_pid, 0)  # the hung child is gone

        reply = client.request({"cmd": "ping"}, timeout_s=20)  # restarted on demand
        assert reply["pid"] != first_pid

        with pytest.raises(WorkerDied) as info:
            client.request({"cmd": "die"}, timeout_s=20)
        assert info.value.details["returncode"] == 7
        assert "simulated driver crash" in info.value.details["stderr"]
        assert client.request({"cmd": "ping"}, timeout_s=20)["echo"]["cmd"] == "ping"
        assert client.starts == 3
    finally:
        client.close()
    assert not client.alive


def _arg(name: str, role: str = "out", rtol: float = 1e-2, atol: float = 1e-3) -> dict:
    return {"name": name, "role": role, "rtol": rtol, "atol": atol}


def test_host_comparison_names_unwritten_nan_and_tolerance_misses() -> None:
    want = {"out": np.linspace(-1, 1, 12).reshape(3, 4)}
    clean = np.zeros((3, 4), bool)
    assert compare_outputs({"out": (want["out"] + 1e-4, clean)}, want, [_arg("out")], "x") \
        == pytest.approx(1e-4)

    holes = clean.copy()
    holes[1, 2] = True
    with pytest.raises(worker._Mismatch, match=r"1 of 12 elements not written.*\(1, 2\)"):
        compare_outputs({"out": (want["out"], holes)}, want, [_arg("out")], "set 1")

    nan = want["out"].copy()
    nan[2, 3] = np.nan
    with pytest.raises(worker._Mismatch, match="NaN"):
        compare_outputs({"out": (nan, clean)}, want, [_arg("out")], "set 1")

    off = want["out"].copy()
    off[0, 1] += 0.5
    with pytest.raises(worker._Mismatch, match=r"1 of 12 elements outside.*\(0, 1\)"):
        compare_outputs({"out": (off, clean)}, want, [_arg("out")], "set 1")


def test_throttle_flag_from_reasons_and_clocks() -> None:
    assert throttled([{"sm_clock_mhz": 1980, "throttle_reasons": 0}], 1980) is False
    assert throttled([{"sm_clock_mhz": 1980, "throttle_reasons": 0x1}], 1980) is False  # idle
    assert throttled([{"sm_clock_mhz": 1980, "throttle_reasons": 0x40}], 1980) is True  # thermal
    assert throttled([{"sm_clock_mhz": 1700, "throttle_reasons": 0}], 1980) is True  # -14 %
    assert throttled([{}], None) is None
