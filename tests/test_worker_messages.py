"""The worker protocol's records: each request and reply survives the pipe (to_message, the
JSON frame, from_message) unchanged, and the worker's side decodes at the boundary, naming
a missing field instead of failing deep inside. Pure: no GPU, no worker process."""

from __future__ import annotations

import io
import json
import types
from dataclasses import replace
from typing import Any

import pytest

from workbench.core.errors import WorkerError
from workbench.core.records import ClockStats, Status, Timing, TimingMethod
from workbench.engine import worker_messages as wm
from workbench.engine.bench import BenchSettings
from workbench.engine.discovery import device_facts
from workbench.engine.gpu_session import GpuSession
from workbench.engine.worker_protocol import read_message, write_message

pytestmark = pytest.mark.timeout(30)

LAUNCH = wm.LaunchGeometry(grid=(128, 1, 1), block=(256, 1, 1), smem_bytes=4096)
PROBLEM = wm.ProblemSpec(shape_name="decode", shape={"tokens": 128, "d": 11008},
                      args=[{"name": "out", "role": "out", "dtype": "bf16",
                             "shape": [128, 11008]},
                            {"name": "n", "role": "scalar", "dtype": "i32", "value": 7}],
                      launch=LAUNCH)
SETTINGS = BenchSettings(warmup_ms=1.0, min_reps=10, max_reps=400, max_time_s=0.1,
                         target_rse_pct=0.25, timeout_s=5.0, batch_reps=10, timer="cupti")
TIMING = Timing(median_us=4.377, min_us=4.2, q1_us=4.3, q3_us=4.45, mean_us=4.39, reps=120,
                rse_median_pct=0.21, l2_flushed=True, sm_clock_mhz=1980, mem_clock_mhz=2619,
                temperature_c=41, throttled=False)
METHOD = TimingMethod(timer="cupti", flush="read", gated=True, clock_tick_us=0.032,
                      gate_timeouts=0, sm_clock=ClockStats(1975.0, 1972.0, 1980.0, 12))


def _through_the_pipe(message: dict[str, Any]) -> dict[str, Any]:
    """What the other process reads: the framed JSON bytes, decoded."""
    buffer = io.BytesIO()
    write_message(buffer, message)
    buffer.seek(0)
    got = read_message(buffer)
    assert got is not None
    return got


REQUESTS: list[wm.Request] = [
    wm.HelloRequest(),
    wm.QuitRequest(),
    wm.LoadRequest(key="silu_and_mul/decode/bf16/0", folder="/k/silu_and_mul", dtype="bf16",
                seed=12345, check_kernels="/cache/checks.cubin",
                baseline_cubin="/cache/base.cubin", baseline_entry="silu_and_mul_kernel",
                main=PROBLEM, check=wm.ProblemSpec("small", {"tokens": 7, "d": 256}, [], LAUNCH)),
    wm.EvaluateRequest(key="silu_and_mul/decode/bf16/0", cubin="/cache/x.cubin",
                    entry="silu_and_mul_kernel", launch=LAUNCH, settings=SETTINGS,
                    time=False, condition="graph"),
    wm.EvaluateRequest(key="k", cubin="c", entry="e", launch=LAUNCH, settings=BenchSettings()),
    wm.EvaluateRequest(key="k", cubin="c", entry="e", settings=BenchSettings(),
                       launch=wm.LaunchGeometry((64, 1, 1), (128, 1, 1), 0, pdl=True)),
    wm.CopyRequest(nbytes=1 << 20, seed=3, settings=BenchSettings(flush_l2=False),
                check_kernels="/cache/checks.cubin"),
]


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: type(r).__name__)
def test_every_request_survives_the_pipe(request_: Any) -> None:
    assert wm.decode_request(_through_the_pipe(request_.to_message())) == request_


def test_the_evaluate_message_keeps_its_wire_names() -> None:
    # the runner and a worker of the same checkout agree; the names are what a log shows
    message = REQUESTS[3].to_message()
    assert message["cmd"] == "evaluate" and message["condition"] == "graph"
    assert message["grid"] == [128, 1, 1] and message["smem_bytes"] == 4096
    assert message["settings"] == SETTINGS.to_dict()


REPLIES = [
    wm.EvaluateReply(status=Status.OK, timing=TIMING, samples_us=(4.3, 4.377, 4.5),
                  event_samples_us=(5.1, 5.2, 5.3), method=METHOD, verify_s=0.012,
                  bench_s=0.09, max_abs_err=0.0,
                  nvml={"before": {"sm_clock_mhz": 1980}, "after": {"sm_clock_mhz": 1980},
                        "reference_sm_clock_mhz": 1980}),
    wm.EvaluateReply(status=Status.WRONG_RESULT, reason="out[3] = 2.0, expected 1.0",
                  max_abs_err=1.0, verify_s=0.01),
    wm.EvaluateReply(status=Status.CRASHED, reason="illegal address during timing",
                  restart_worker=True, verify_s=0.02),
]


@pytest.mark.parametrize("reply", REPLIES, ids=lambda r: r.status.value)
def test_every_evaluate_reply_survives_the_pipe(reply: wm.EvaluateReply) -> None:
    assert wm.EvaluateReply.from_message(_through_the_pipe(reply.to_message())) == reply


HELLO = wm.HelloReply(name="NVIDIA H100 80GB HBM3",
                      attrs={"MULTIPROCESSOR_COUNT": 132, "L2_CACHE_SIZE": 52428800},
                      compute_capability=(9, 0), total_memory_bytes=85_045_362_688,
                      cuda_driver_version="13.0", pycuda_cuda_version="12.8.0", pid=4242,
                      nvml={"driver": "580.159.04", "max_sm_clock_mhz": 1980},
                      cupti_path="/usr/local/cuda/lib64/libcupti.so", cupti_api_version=130001)


def test_hello_replies_survive_the_pipe_and_say_whether_cupti_loads() -> None:
    assert wm.HelloReply.from_message(_through_the_pipe(HELLO.to_message())) == HELLO
    without = replace(HELLO, cupti_path="", cupti_api_version=None,
                      cupti_error="no usable libcupti; tried: /x: gone")
    message = _through_the_pipe(without.to_message())
    assert message["cupti"] == {"error": "no usable libcupti; tried: /x: gone"}
    assert wm.HelloReply.from_message(message) == without
    # an older worker that says nothing about libcupti: the timer cannot be CUPTI
    del message["cupti"]
    assert wm.HelloReply.from_message(message).cupti_error == \
        "the worker did not report on libcupti"
    # what a recording's device block is built from
    facts = device_facts(HELLO)
    assert facts["driver"] == "580.159.04" and facts["cuda"] == "13.0"
    assert facts["compute_capability"] == [9, 0] and facts["spec"] == "h100_sxm"
    with pytest.raises(WorkerError, match="hello message lacks 'attrs'"):
        wm.HelloReply.from_message({k: v for k, v in HELLO.to_message().items()
                                    if k != "attrs"})


def test_load_copy_and_failure_replies_survive_the_pipe() -> None:
    load = wm.LoadReply(load_s=0.8, device_bytes=11_272_192)
    assert wm.LoadReply.from_message(_through_the_pipe(load.to_message())) == load
    copy = wm.CopyReply(nbytes=4096, timing=TIMING, samples_us=(1.0, 1.1), method=METHOD)
    assert wm.CopyReply.from_message(_through_the_pipe(copy.to_message())) == copy
    for failure in (wm.WorkerFailure(error="CUDA_ERROR_LAUNCH_FAILED", kind="cuda",
                                  restart_worker=True, status=Status.CRASHED),
                    wm.WorkerFailure(error="boom", kind="internal", traceback="Traceback ...")):
        message = _through_the_pipe(failure.to_message())
        assert wm.failure_in(message) == failure
    # an answer is not a failure
    assert wm.failure_in(load.to_message()) is None
    assert wm.failure_in(REPLIES[0].to_message()) is None


def test_a_missing_field_names_the_field_and_the_message() -> None:
    message = REQUESTS[3].to_message()
    del message["entry"]
    with pytest.raises(WorkerError, match="evaluate message lacks 'entry'") as info:
        wm.decode_request(message)
    assert info.value.details["key"] == "entry"
    with pytest.raises(WorkerError, match="three integers"):
        wm.decode_request({**REQUESTS[3].to_message(), "grid": [1, 2]})
    with pytest.raises(WorkerError, match="unknown command 'fly'") as info:
        wm.decode_request({"cmd": "fly"})
    assert "evaluate" in info.value.details["expected"]


def test_a_request_with_research_settings_is_refused_by_name() -> None:
    message = REQUESTS[4].to_message()
    message["settings"] = {**message["settings"], "tail_reps": 0}
    with pytest.raises(Exception, match="tail_reps"):
        wm.decode_request(message)


def _session() -> GpuSession:
    """A session with no CUDA context: enough for the boundary, which runs before any GPU
    work (the worker's GPU paths run in the gpu tier)."""
    session = GpuSession.__new__(GpuSession)
    session.cuda = types.SimpleNamespace(Error=RuntimeError)
    session.sets = []
    session.problem_key = None
    return session


def test_the_worker_decodes_at_the_pipe_and_answers_bad_requests_as_protocol_failures() -> None:
    session = _session()
    bad = session.handle({"cmd": "evaluate", "key": "k"})
    assert wm.failure_in(bad) == wm.WorkerFailure(
        error="the GPU worker's evaluate message lacks 'cubin'", kind="protocol")
    assert wm.failure_in(session.handle({"cmd": "fly"})).kind == "protocol"  # type: ignore[union-attr]
    # a well-formed request for a problem that is not loaded: the typed handler answers
    reply = session.handle(json.loads(json.dumps(REQUESTS[4].to_message())))
    failure = wm.failure_in(reply)
    assert failure is not None and failure.kind == "protocol"
    assert "problem 'k' is not loaded" in failure.error
    assert session.handle(wm.QuitRequest().to_message()) == {"ok": True}
