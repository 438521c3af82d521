"""The worker's wire protocol and its failure classification table (pure; no GPU).

Parent and child speak length-prefixed JSON over the child's stdin/stdout: each message is a
4-byte big-endian length followed by that many bytes of UTF-8 JSON. Every way a candidate can
fail is classified by one table, :data:`FAILURE_TABLE`; the parent (:mod:`worker_client`,
:mod:`runner`, :mod:`replay`) and the child (:mod:`gpu_session`) both read it.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any

from workbench.core.errors import WorkerError
from workbench.core.records import Status

_HEADER = struct.Struct(">I")
#: Largest message either side accepts (a guard against reading garbage as a length).
MAX_MESSAGE_BYTES = 256 * 1024 * 1024


# --------------------------------------------------------------------------------------------
# Framing


def encode_message(message: Mapping[str, Any]) -> bytes:
    """One frame: 4-byte big-endian length, then UTF-8 JSON."""
    body = json.dumps(message, separators=(",", ":"), allow_nan=True).encode("utf-8")
    if len(body) > MAX_MESSAGE_BYTES:
        raise WorkerError(f"message of {len(body)} bytes exceeds {MAX_MESSAGE_BYTES}",
                          value=len(body), limit=MAX_MESSAGE_BYTES)
    return _HEADER.pack(len(body)) + body


def write_message(stream: IO[bytes], message: Mapping[str, Any]) -> None:
    """Write one frame and flush."""
    stream.write(encode_message(message))
    stream.flush()


def _read_exact(stream: IO[bytes], n: int) -> bytes:
    chunks = []
    remaining = n
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    """Read one frame. ``None`` on a clean end of stream; WorkerError on a torn frame."""
    header = _read_exact(stream, _HEADER.size)
    if not header:
        return None
    if len(header) < _HEADER.size:
        raise WorkerError(f"torn frame header ({len(header)} of {_HEADER.size} bytes)",
                          got=len(header), expected=_HEADER.size)
    (length,) = _HEADER.unpack(header)
    if length > MAX_MESSAGE_BYTES:
        raise WorkerError(f"frame length {length} exceeds {MAX_MESSAGE_BYTES}",
                          value=length, limit=MAX_MESSAGE_BYTES)
    body = _read_exact(stream, length)
    if len(body) < length:
        raise WorkerError(f"torn frame body ({len(body)} of {length} bytes)",
                          got=len(body), expected=length)
    message = json.loads(body.decode("utf-8"))
    if not isinstance(message, dict):
        raise WorkerError("frame is not a JSON object", value=type(message).__name__,
                          expected="object")
    return message


# --------------------------------------------------------------------------------------------
# The classification table: every way a candidate can fail, in one place.


@dataclass(frozen=True)
class FailureRule:
    """How one kind of failure is recorded.

    ``match`` is either ``"event:<name>"`` (something the workbench itself detects) or a
    lower-case substring of the CUDA driver's error text. ``restart_worker`` says whether
    the CUDA context is unusable afterwards (the worker must be replaced).
    """

    match: str
    status: Status
    restart_worker: bool
    meaning: str


FAILURE_TABLE: tuple[FailureRule, ...] = (
    # detected by the workbench
    FailureRule("event:launch_problem", Status.PRUNED, False,
                "the launch exceeds a device limit (checked before compiling)"),
    FailureRule("event:zero_occupancy", Status.PRUNED, False,
                "no block fits on an SM with the compiled resource usage"),
    FailureRule("event:not_in_space", Status.PRUNED, False, "a template constraint rejects it"),
    FailureRule("event:not_recorded", Status.PRUNED, False, "a replay has no measurement of it"),
    FailureRule("event:compile_failed", Status.COMPILE_ERROR, False, "nvcc/ptxas refused it"),
    FailureRule("event:wrong_result", Status.WRONG_RESULT, False,
                "unwritten elements, NaN, or values outside tolerance vs the baseline"),
    FailureRule("event:watchdog", Status.TIMEOUT, True,
                "no answer within BenchSettings.timeout_s: a hang; the worker is killed"),
    FailureRule("event:worker_died", Status.CRASHED, True,
                "the worker process exited without answering"),
    # CUDA errors that leave the context usable (the launch never ran)
    FailureRule("too many resources requested", Status.LAUNCH_ERROR, False,
                "registers x threads or shared memory over the limit"),
    FailureRule("invalid argument", Status.LAUNCH_ERROR, False, "launch configuration refused"),
    FailureRule("invalid value", Status.LAUNCH_ERROR, False, "launch configuration refused"),
    FailureRule("named symbol not found", Status.LAUNCH_ERROR, False, "entry not in the cubin"),
    FailureRule("no kernel image", Status.LAUNCH_ERROR, False, "cubin built for another arch"),
    FailureRule("device kernel image is invalid", Status.LAUNCH_ERROR, False, "bad cubin"),
    FailureRule("invalid source", Status.LAUNCH_ERROR, False, "bad cubin"),
    FailureRule("file not found", Status.LAUNCH_ERROR, False, "cubin missing"),
    FailureRule("out of memory", Status.LAUNCH_ERROR, False, "allocation failed"),
    # CUDA errors that poison the context (the kernel ran and faulted)
    FailureRule("illegal memory access", Status.CRASHED, True, "out-of-bounds access"),
    FailureRule("illegal address", Status.CRASHED, True, "out-of-bounds access"),
    FailureRule("misaligned address", Status.CRASHED, True, "misaligned vector access"),
    FailureRule("illegal instruction", Status.CRASHED, True, "illegal instruction"),
    FailureRule("invalid program counter", Status.CRASHED, True, "bad jump"),
    FailureRule("hardware stack error", Status.CRASHED, True, "stack overflow / corruption"),
    FailureRule("device-side assert", Status.CRASHED, True, "assert() failed in the kernel"),
    FailureRule("not supported on global/shared address space", Status.CRASHED, True,
                "bad address space"),
    FailureRule("unspecified launch failure", Status.CRASHED, True, "kernel faulted"),
    FailureRule("launch timed out", Status.TIMEOUT, True, "the display watchdog killed it"),
)


def rule_for_event(event: str) -> FailureRule:
    """The table row for a workbench-detected event (``"watchdog"``, ``"worker_died"`` ...)."""
    key = f"event:{event}"
    for rule in FAILURE_TABLE:
        if rule.match == key:
            return rule
    raise KeyError(event)


def classify_cuda_error(text: str) -> FailureRule | None:
    """The table row whose substring occurs in a CUDA error text; None if unrecognised."""
    lower = text.lower()
    for rule in FAILURE_TABLE:
        if not rule.match.startswith("event:") and rule.match in lower:
            return rule
    return None

