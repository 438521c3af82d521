"""The GPU worker: the one process that owns a CUDA context.

The notebook / CLI process never imports pycuda. It starts this module as a child
(``python -m workbench.engine.worker``) and speaks a length-prefixed JSON protocol over the
child's stdin/stdout: each message is a 4-byte big-endian length followed by that many bytes
of UTF-8 JSON. An illegal address poisons a CUDA context for good, so after such an error
(or a hang, or the child dying) the parent kills the child and starts a fresh one; only that
candidate is lost. Every failure is classified by one table, :data:`FAILURE_TABLE`.

This module holds the pure parts (framing, the table), the parent's handle
(:class:`WorkerClient`) and the child's main loop (which imports pycuda lazily, so the module
imports fine on a machine without a GPU), :class:`GpuSession`.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
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


# --------------------------------------------------------------------------------------------
# The parent's handle


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


class WorkerDied(WorkerError):
    """The worker exited (or broke the protocol) without answering."""


class WorkerTimeout(WorkerError):
    """The worker did not answer within the deadline and was killed."""


class WorkerClient:
    """Starts, talks to, watches and kills one worker process.

    ``request`` raises :class:`WorkerTimeout` when no answer arrives in time (the child is
    killed first) and :class:`WorkerDied` when the child exits without answering. A reply
    with ``{"error": ...}`` is returned as is; interpreting it is the caller's job.
    """

    def __init__(self, *, python: str | None = None, env: Mapping[str, str] | None = None,
                 start_timeout_s: float = 120.0) -> None:
        self.python = python or sys.executable
        self._env = dict(os.environ if env is None else env)
        root = _package_root()
        self._env["PYTHONPATH"] = os.pathsep.join(
            p for p in (root, self._env.get("PYTHONPATH", "")) if p)
        self._env.setdefault("PYTHONUNBUFFERED", "1")
        self.start_timeout_s = start_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._replies: queue.Queue[dict[str, Any] | BaseException | None] = queue.Queue()
        self._stderr_file: IO[bytes] | None = None
        self.starts = 0

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self) -> None:
        """Start a fresh child (killing any previous one)."""
        self.kill()
        self._stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the child)
        self._replies = queue.Queue()
        self._proc = subprocess.Popen(
            [self.python, "-m", "workbench.engine.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr_file,
            env=self._env, start_new_session=True)
        self.starts += 1
        proc, replies = self._proc, self._replies

        def pump() -> None:
            assert proc.stdout is not None
            try:
                while True:
                    msg = read_message(proc.stdout)
                    replies.put(msg)
                    if msg is None:
                        return
            except BaseException as exc:  # torn frame: hand it to the waiting caller
                replies.put(exc)

        threading.Thread(target=pump, name="workbench-worker-reader", daemon=True).start()

    def stderr_tail(self, limit: int = 4000) -> str:
        """The last ``limit`` characters the child wrote to stderr."""
        if self._stderr_file is None:
            return ""
        try:
            self._stderr_file.flush()
            size = self._stderr_file.seek(0, os.SEEK_END)
            self._stderr_file.seek(max(0, size - limit))
            return self._stderr_file.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def request(self, message: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one command and wait up to ``timeout_s`` for its reply."""
        if not self.alive:
            self.start()
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        try:
            write_message(proc.stdin, message)
        except (BrokenPipeError, OSError) as exc:
            tail = self.stderr_tail()
            self.kill()
            raise WorkerDied(f"worker pipe closed: {exc}", stderr=tail) from exc
        try:
            reply = self._replies.get(timeout=timeout_s)
        except queue.Empty:
            tail = self.stderr_tail()
            self.kill()
            raise WorkerTimeout(f"worker gave no answer to {message.get('cmd')!r} within "
                                f"{timeout_s:.1f} s; killed", timeout_s=timeout_s,
                                stderr=tail) from None
        if reply is None or isinstance(reply, BaseException):
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            tail = self.stderr_tail()
            code = proc.poll()
            self.kill()
            raise WorkerDied(f"worker exited (code {code}) while answering "
                             f"{message.get('cmd')!r}", returncode=code, stderr=tail)
        return reply

    def kill(self) -> None:
        """Kill the child (if any) and wait for it."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def close(self) -> None:
        """Ask the child to quit, then make sure it is gone."""
        if self.alive:
            with contextlib.suppress(WorkerError):
                self.request({"cmd": "quit"}, timeout_s=10)
        self.kill()
        if self._stderr_file is not None:
            self._stderr_file.close()
            self._stderr_file = None


# --------------------------------------------------------------------------------------------
# The child's GPU session (pycuda is imported only here, inside the worker process)

#: Poison written into outputs before a verification run: a signalling-NaN bit pattern for
#: floats (not 0x7FFF / 0x7FC00000, the canonical NaNs a kernel's conversions produce, so
#: "NaN written" and "never written" stay distinguishable), the same bits as an integer
#: sentinel. 8-byte outputs get the 4-byte pattern twice.
POISON_BITS = {2: 0x7FAB, 4: 0x7FBADBAD, 8: 0x7FBADBAD}
_STORAGE = {"bf16": "uint16", "fp16": "uint16", "fp32": "float32", "f32": "float32",
            "i32": "int32", "i64": "int64"}
_ELEMENT_DTYPES = ("bf16", "fp16", "fp32")
_SCALAR_FORMAT = {"i32": "i", "i64": "q", "f32": "f", "fp32": "f"}
#: NVML throttle reasons that mean "slowed down": SW power cap, HW slowdown, SW/HW thermal,
#: HW power brake (idle, application-clock and sync-boost reasons are not slowdowns).
THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
CLOCK_SHORTFALL = 0.05


#: Device-side checks: conversion of outputs to float32 (golden copies) and comparison
#: against them, counting unwritten (poison) elements, NaNs and tolerance misses, so that
#: outputs of hundreds of MB never cross PCIe. Compiled by the parent with the Compiler.
CHECK_KERNELS_SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// kind: 0 bf16 bits, 1 fp16 bits, 2 f32, 3 i32, 4 i64
__device__ __forceinline__ float wb_load(const void* p, long long i, int kind, bool* poison) {
  switch (kind) {
    case 0: { unsigned short b = ((const unsigned short*)p)[i]; *poison = b == 0x7FAB;
              return __uint_as_float(((unsigned int)b) << 16); }
    case 1: { unsigned short b = ((const unsigned short*)p)[i]; *poison = b == 0x7FAB;
              return __half2float(__ushort_as_half(b)); }
    case 2: { unsigned int b = ((const unsigned int*)p)[i]; *poison = b == 0x7FBADBADu;
              return __uint_as_float(b); }
    case 3: { int b = ((const int*)p)[i]; *poison = b == 0x7FBADBAD; return (float)b; }
    default: { long long b = ((const long long*)p)[i]; *poison = b == 0x7FBADBAD7FBADBADLL;
               return (float)b; }
  }
}
// counters: [0] unwritten  [1] NaN where a number was expected  [2] outside tolerance
//           [3] first bad index (min)  [4] max |got - want| as float bits (non-negative)
__device__ void wb_flush(unsigned long long* counters, unsigned long long c0,
                         unsigned long long c1, unsigned long long c2,
                         unsigned long long first, unsigned long long maxbits) {
  for (int o = 16; o > 0; o >>= 1) {
    c0 += __shfl_xor_sync(0xffffffffu, c0, o);
    c1 += __shfl_xor_sync(0xffffffffu, c1, o);
    c2 += __shfl_xor_sync(0xffffffffu, c2, o);
    first = min(first, __shfl_xor_sync(0xffffffffu, first, o));
    maxbits = max(maxbits, __shfl_xor_sync(0xffffffffu, maxbits, o));
  }
  if ((threadIdx.x & 31) == 0) {
    if (c0) atomicAdd(&counters[0], c0);
    if (c1) atomicAdd(&counters[1], c1);
    if (c2) atomicAdd(&counters[2], c2);
    if (first != ~0ull) atomicMin(&counters[3], first);
    if (maxbits) atomicMax(&counters[4], maxbits);
  }
}
extern "C" __global__ void wb_to_f32(const void* src, int kind, int check_poison, float* dst,
                                     long long n, unsigned long long* counters) {
  unsigned long long c0 = 0, first = ~0ull;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    bool poison; float v = wb_load(src, i, kind, &poison);
    dst[i] = v;
    if (check_poison && poison) { c0++; first = min(first, (unsigned long long)i); }
  }
  wb_flush(counters, c0, 0, 0, first, 0);
}
extern "C" __global__ void wb_compare(const void* got, int kind, int check_poison,
                                      const float* want, long long n, float rtol, float atol,
                                      unsigned long long* counters) {
  unsigned long long c0 = 0, c1 = 0, c2 = 0, first = ~0ull, maxbits = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    bool poison; float v = wb_load(got, i, kind, &poison);
    float w = want[i];
    if (check_poison && poison) { c0++; first = min(first, (unsigned long long)i); continue; }
    if (isnan(v) && !isnan(w)) { c1++; first = min(first, (unsigned long long)i); continue; }
    float d = fabsf(v - w);
    bool close = (v == w) || (isnan(v) && isnan(w)) || (d <= atol + rtol * fabsf(w));
    if (!close) { c2++; first = min(first, (unsigned long long)i); }
    if (isfinite(d)) maxbits = max(maxbits, (unsigned long long)__float_as_uint(d));
  }
  wb_flush(counters, c0, c1, c2, first, maxbits);
}
"""
CHECK_KERNELS_ENTRY = "wb_compare"
_KIND = {"bf16": 0, "fp16": 1, "fp32": 2, "f32": 2, "i32": 3, "i64": 4}


class _Nvml:
    """NVML clocks / temperature / throttle reasons, or nothing when nvidia-ml-py is absent."""

    def __init__(self, pci_bus_id: str | None) -> None:
        self.nv: Any = None
        self.handle: Any = None
        try:
            import pynvml

            pynvml.nvmlInit()
            try:
                self.handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
            except Exception:
                self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            self.nv = pynvml
        except Exception:
            self.nv = None

    def _call(self, name: str, *args: Any) -> Any:
        if self.nv is None:
            return None
        fn = getattr(self.nv, name, None)
        if fn is None:
            return None
        try:
            return fn(self.handle, *args) if self.handle is not None else fn(*args)
        except Exception:
            return None

    def static(self) -> dict[str, Any]:
        if self.nv is None:
            return {}
        nv = self.nv
        driver = None
        try:
            driver = nv.nvmlSystemGetDriverVersion()
            driver = driver.decode() if isinstance(driver, bytes) else str(driver)
        except Exception:
            driver = None
        return {
            "driver": driver,
            "max_sm_clock_mhz": self._call("nvmlDeviceGetMaxClockInfo", nv.NVML_CLOCK_SM),
            "max_mem_clock_mhz": self._call("nvmlDeviceGetMaxClockInfo", nv.NVML_CLOCK_MEM),
            "app_sm_clock_mhz": self._call("nvmlDeviceGetApplicationsClock", nv.NVML_CLOCK_SM),
            "app_mem_clock_mhz": self._call("nvmlDeviceGetApplicationsClock", nv.NVML_CLOCK_MEM),
            "power_limit_w": (lambda v: v / 1000 if v else None)(
                self._call("nvmlDeviceGetEnforcedPowerLimit")),
        }

    def sample(self) -> dict[str, Any]:
        if self.nv is None:
            return {}
        nv = self.nv
        reasons = self._call("nvmlDeviceGetCurrentClocksEventReasons")
        if reasons is None:
            reasons = self._call("nvmlDeviceGetCurrentClocksThrottleReasons")
        return {
            "sm_clock_mhz": self._call("nvmlDeviceGetClockInfo", nv.NVML_CLOCK_SM),
            "mem_clock_mhz": self._call("nvmlDeviceGetClockInfo", nv.NVML_CLOCK_MEM),
            "temperature_c": self._call("nvmlDeviceGetTemperature", nv.NVML_TEMPERATURE_GPU),
            "throttle_reasons": reasons,
        }


def throttled(samples: list[Mapping[str, Any]], reference_sm_clock_mhz: int | None) -> bool | None:
    """True when a sample shows a slowdown reason or an SM clock >5 % under the reference."""
    known = False
    for s in samples:
        reasons = s.get("throttle_reasons")
        if reasons is not None:
            known = True
            if int(reasons) & THROTTLE_MASK:
                return True
        clock = s.get("sm_clock_mhz")
        if clock is not None and reference_sm_clock_mhz:
            known = True
            if clock < (1.0 - CLOCK_SHORTFALL) * reference_sm_clock_mhz:
                return True
    return False if known else None


class _Mismatch(Exception):
    """Verification failed (message says where)."""

    def __init__(self, reason: str, max_abs_err: float | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.max_abs_err = max_abs_err


class _InputSet:
    """Device buffers for one random input set, pristine copies of inouts, golden outputs."""

    def __init__(self, session: GpuSession, spec: Mapping[str, Any], dtype: str,
                 host_inputs: Mapping[str, Any]) -> None:
        import numpy as np

        from workbench.core import dtypes as wdt

        cuda = session.cuda
        self.session = session
        self.spec = spec
        self.dtype = dtype
        self.args: list[dict[str, Any]] = list(spec["args"])
        self.buffers: dict[str, Any] = {}
        self.pristine: dict[str, Any] = {}
        self.nbytes: dict[str, int] = {}
        self.golden: dict[str, Any] = {}
        self.quantized: dict[str, Any] = {}
        self.values: list[Any] = []
        fmt = ""
        for arg in self.args:
            name, role, adt = arg["name"], arg["role"], arg["dtype"]
            if role == "scalar":
                fmt += _SCALAR_FORMAT[adt]
                value = arg["value"]
                self.values.append(float(value) if adt in ("f32", "fp32") else int(value))
                continue
            fmt += "P"
            shape = tuple(int(n) for n in arg["shape"])
            storage = np.dtype(_STORAGE[adt])
            count = int(np.prod(shape)) if shape else 1
            nbytes = max(1, count * storage.itemsize)
            self.nbytes[name] = nbytes
            buf = cuda.mem_alloc(nbytes)
            self.buffers[name] = buf
            self.values.append(int(buf))
            if role in ("in", "inout"):
                if name not in host_inputs:
                    raise KeyError(f"reference.make_inputs returned no array for {name!r}")
                raw = np.asarray(host_inputs[name])
                if tuple(raw.shape) != shape:
                    raise ValueError(f"make_inputs()[{name!r}] has shape {raw.shape}; "
                                     f"kernel.toml says {shape}")
                if adt in _ELEMENT_DTYPES:
                    q = wdt.quantize(raw.astype(np.float32), adt)
                    bits = np.ascontiguousarray(wdt.to_device_bits(q, adt))
                else:
                    q = raw.astype(storage)
                    bits = np.ascontiguousarray(q)
                self.quantized[name] = q
                cuda.memcpy_htod(buf, bits)
                if role == "inout":
                    copy = cuda.mem_alloc(nbytes)
                    cuda.memcpy_dtod(copy, buf, nbytes)
                    self.pristine[name] = copy
        self.format = fmt

    def output_args(self) -> list[dict[str, Any]]:
        return [a for a in self.args if a["role"] in ("out", "inout")]

    def restore(self, stream: Any) -> None:
        """Copy every inout argument back from its pristine copy."""
        for name, copy in self.pristine.items():
            self.session.cuda.memcpy_dtod_async(self.buffers[name], copy, self.nbytes[name],
                                                stream)

    def poison(self, stream: Any) -> None:
        """Fill every out argument with the poison pattern."""
        import numpy as np

        cuda = self.session.cuda
        for arg in self.args:
            if arg["role"] != "out":
                continue
            itemsize = np.dtype(_STORAGE[arg["dtype"]]).itemsize
            buf, nbytes = self.buffers[arg["name"]], self.nbytes[arg["name"]]
            if itemsize == 2:
                cuda.memset_d16_async(buf, POISON_BITS[2], nbytes // 2, stream)
            else:
                cuda.memset_d32_async(buf, POISON_BITS[4], nbytes // 4, stream)

    def download(self) -> dict[str, tuple[Any, Any]]:
        """name -> (values as float64, mask of elements still holding poison)."""
        import numpy as np

        from workbench.core import dtypes as wdt

        out = {}
        for arg in self.output_args():
            shape = tuple(int(n) for n in arg["shape"])
            storage = np.dtype(_STORAGE[arg["dtype"]])
            host = np.empty(shape, dtype=storage)
            self.session.cuda.memcpy_dtoh(host, self.buffers[arg["name"]])
            raw = host.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[storage.itemsize])
            poison = (POISON_BITS[8] * (1 << 32) + POISON_BITS[8] if storage.itemsize == 8
                      else POISON_BITS[storage.itemsize])
            unwritten = (raw == poison) if arg["role"] == "out" else np.zeros(shape, bool)
            if arg["dtype"] in _ELEMENT_DTYPES:
                values = wdt.from_device_bits(host, arg["dtype"]).astype(np.float64)
            else:
                values = host.astype(np.float64)
            out[arg["name"]] = (values, unwritten)
        return out

    def _count(self, arg: Mapping[str, Any]) -> int:
        import numpy as np

        return int(np.prod([int(n) for n in arg["shape"]])) if arg["shape"] else 1

    def _launch_check(self, func: Any, n: int, *args: Any) -> Any:
        import numpy as np

        cuda, stream = self.session.cuda, self.session.stream
        counters = self.session.counters
        init = np.array([0, 0, 0, 2**64 - 1, 0], dtype=np.uint64)
        cuda.memcpy_htod_async(counters, init, stream)
        blocks = max(1, min((n + 255) // 256, 4096))
        func.prepared_async_call((blocks, 1, 1), (256, 1, 1), stream, *args, int(counters))
        host = np.empty(5, dtype=np.uint64)
        cuda.memcpy_dtoh_async(host, counters, stream)
        stream.synchronize()
        return host

    def make_golden(self) -> str | None:
        """Keep float32 device copies of the outputs; the reason if some were unwritten."""
        cuda = self.session.cuda
        for arg in self.output_args():
            n = self._count(arg)
            gold = cuda.mem_alloc(max(4, 4 * n))
            self.golden[arg["name"]] = gold
            counts = self._launch_check(self.session.to_f32, n, int(self.buffers[arg["name"]]),
                                        _KIND[arg["dtype"]], int(arg["role"] == "out"),
                                        int(gold), n)
            if counts[0]:
                return (f"{arg['name']}: {int(counts[0])} of {n} elements not written "
                        f"(first at {self._index(arg, int(counts[3]))})")
        return None

    def _index(self, arg: Mapping[str, Any], flat: int) -> tuple[int, ...]:
        import numpy as np

        shape = tuple(int(n) for n in arg["shape"]) or (1,)
        return tuple(int(i) for i in np.unravel_index(flat, shape))

    def _element(self, arg: Mapping[str, Any], flat: int) -> tuple[float, float]:
        import numpy as np

        from workbench.core import dtypes as wdt

        cuda = self.session.cuda
        storage = np.dtype(_STORAGE[arg["dtype"]])
        got = np.empty(1, dtype=storage)
        cuda.memcpy_dtoh(got, int(self.buffers[arg["name"]]) + flat * storage.itemsize)
        want = np.empty(1, dtype=np.float32)
        cuda.memcpy_dtoh(want, int(self.golden[arg["name"]]) + flat * 4)
        value = (wdt.from_device_bits(got, arg["dtype"]) if arg["dtype"] in _ELEMENT_DTYPES
                 else got.astype(np.float64))
        return float(value[0]), float(want[0])

    def verify(self, label: str) -> float:
        """Compare outputs with the golden copies on the GPU; raise _Mismatch on failure."""
        worst = 0.0
        for arg in self.output_args():
            n = self._count(arg)
            c = self._launch_check(self.session.compare, n, int(self.buffers[arg["name"]]),
                                   _KIND[arg["dtype"]], int(arg["role"] == "out"),
                                   int(self.golden[arg["name"]]), n, float(arg["rtol"]),
                                   float(arg["atol"]))
            import numpy as np

            err = float(np.array([int(c[4])], dtype=np.uint32).view(np.float32)[0])
            worst = max(worst, err)
            name, first = arg["name"], int(c[3])
            if c[0]:
                raise _Mismatch(f"{label}: {name}: {int(c[0])} of {n} elements not written "
                                f"(still poison; first at {self._index(arg, first)})", None)
            if c[1]:
                raise _Mismatch(f"{label}: {name}: {int(c[1])} of {n} elements are NaN where "
                                f"the baseline has numbers (first at "
                                f"{self._index(arg, first)})", float("nan"))
            if c[2]:
                got, want = self._element(arg, first)
                raise _Mismatch(f"{label}: {name}: {int(c[2])} of {n} elements outside "
                                f"rtol={arg['rtol']} atol={arg['atol']}; max abs err {err:.4g}; "
                                f"first at {self._index(arg, first)}: got {got:.6g}, "
                                f"expected {want:.6g}", err)
        return worst

    def free(self) -> None:
        for buf in [*self.buffers.values(), *self.pristine.values(),
                    *self.golden.values()]:
            buf.free()
        self.buffers.clear()
        self.pristine.clear()
        self.golden.clear()


def compare_outputs(got: Mapping[str, tuple[Any, Any]], want: Mapping[str, Any],
                    args: list[dict[str, Any]], label: str) -> float:
    """Raise _Mismatch naming the first bad output; return the largest absolute error."""
    import numpy as np

    worst = 0.0
    for arg in args:
        name = arg["name"]
        values, unwritten = got[name]
        expected = np.asarray(want[name], dtype=np.float64).reshape(values.shape)
        total = values.size
        n_unwritten = int(unwritten.sum())
        if n_unwritten:
            first = tuple(int(i) for i in np.argwhere(unwritten)[0])
            raise _Mismatch(f"{label}: {name}: {n_unwritten} of {total} elements not written "
                            f"(still poison; first at {first})", None)
        bad_nan = np.isnan(values) & ~np.isnan(expected)
        if bad_nan.any():
            first = tuple(int(i) for i in np.argwhere(bad_nan)[0])
            raise _Mismatch(f"{label}: {name}: {int(bad_nan.sum())} of {total} elements are "
                            f"NaN where the expected values are numbers (first at {first})",
                            float("nan"))
        rtol, atol = float(arg["rtol"]), float(arg["atol"])
        diff = np.abs(values - expected)
        finite = np.isfinite(diff)
        err = float(diff[finite].max()) if finite.any() else 0.0
        worst = max(worst, err)
        close = np.isclose(values, expected, rtol=rtol, atol=atol, equal_nan=True)
        if not close.all():
            n_bad = int((~close).sum())
            idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(np.where(close, -1, diff))),
                                                         values.shape))
            raise _Mismatch(f"{label}: {name}: {n_bad} of {total} elements outside rtol={rtol} "
                            f"atol={atol}; max abs err {err:.4g} at {idx} "
                            f"(got {values[idx]:.6g}, expected {expected[idx]:.6g})", err)
    return worst


IDLE_GAP_S = 0.05  # a longer pause before timing lets the clocks drop
SPIN_UP_S = 0.2  # busy time before timing after such a pause


class GpuSession:
    """The worker's state: one CUDA context, loaded modules, the current problem."""

    def __init__(self) -> None:
        import pycuda.driver as cuda

        cuda.init()
        if cuda.Device.count() < 1:
            raise RuntimeError("no CUDA device")
        self.cuda = cuda
        self.device = cuda.Device(0)
        self.context = self.device.make_context()
        self.stream = cuda.Stream()
        try:
            bus = self.device.pci_bus_id()
        except Exception:
            bus = None
        self.nvml = _Nvml(bus)
        self.modules: dict[str, Any] = {}
        self.functions: dict[tuple[str, str, str], Any] = {}
        self.references: dict[str, Any] = {}
        self.checked: set[str] = set()
        self.sets: list[_InputSet] = []
        self.problem_key: str | None = None
        self.flush_buf: Any = None
        self.compare: Any = None
        self.to_f32: Any = None
        self.counters: Any = None
        self.flush_bytes = 0
        self.last_busy_s = 0.0  # perf_counter() when the GPU last finished timed work
        attrs = self.device.get_attributes()
        self.attrs = {getattr(k, "name", str(k)): int(v) for k, v in attrs.items()}

    # -- commands -----------------------------------------------------------------------------

    def handle(self, message: Mapping[str, Any]) -> dict[str, Any]:
        import traceback

        cmd = message.get("cmd")
        handler = {"hello": self.hello, "load": self.load, "evaluate": self.evaluate,
                   "copy": self.copy}.get(str(cmd))
        if handler is None:
            return {"error": f"unknown command {cmd!r}", "kind": "protocol"}
        try:
            return handler(message)
        except self.cuda.Error as exc:
            text = f"{type(exc).__name__}: {exc}"
            rule = classify_cuda_error(text)
            return {"error": text, "kind": "cuda", "restart_worker": True if rule is None
                    else rule.restart_worker, "status": rule.status.value if rule else None}
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}", "kind": "internal",
                    "traceback": traceback.format_exc()[-4000:]}

    def hello(self, message: Mapping[str, Any]) -> dict[str, Any]:
        cuda = self.cuda
        version = cuda.get_driver_version()
        return {
            "ok": True, "pid": os.getpid(), "name": self.device.name(), "attrs": self.attrs,
            "compute_capability": list(self.device.compute_capability()),
            "total_memory_bytes": int(self.device.total_memory()),
            "cuda_driver_version": f"{version // 1000}.{(version % 1000) // 10}",
            "pycuda_cuda_version": ".".join(str(v) for v in cuda.get_version()),
            "nvml": {**self.nvml.static(), **self.nvml.sample()},
        }

    def _reference(self, folder: str) -> Any:
        if folder not in self.references:
            import importlib.util

            path = Path(folder) / "reference.py"
            spec = importlib.util.spec_from_file_location(
                f"_workbench_reference_{len(self.references)}", path)
            if spec is None or spec.loader is None:
                raise RuntimeError(f"cannot import {path}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self.references[folder] = module
        return self.references[folder]

    def _function(self, cubin: str, entry: str, fmt: str, smem_bytes: int) -> Any:
        key = (cubin, entry, fmt)
        func = self.functions.get(key)
        if func is None:
            if cubin not in self.modules:
                if len(self.modules) >= 256:  # unload the oldest modules
                    for old in [k for k in self.modules if k != "<checks>"][:64]:
                        del self.modules[old]
                        self.functions = {k: v for k, v in self.functions.items()
                                          if k[0] != old}
                self.modules[cubin] = self.cuda.module_from_file(cubin)
            func = self.modules[cubin].get_function(entry)
            func.prepare(fmt)
            self.functions[key] = func
        if smem_bytes > 48 * 1024:
            func.set_attribute(self.cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               int(smem_bytes))
        return func

    def _run_once(self, func: Any, launch: Mapping[str, Any], inputs: _InputSet) -> None:
        inputs.restore(self.stream)
        inputs.poison(self.stream)
        func.prepared_async_call(tuple(launch["grid"]), tuple(launch["block"]), self.stream,
                                 *inputs.values, shared_size=int(launch["smem_bytes"]))
        self.context.synchronize()

    def _free_problem(self) -> None:
        for s in self.sets:
            s.free()
        self.sets = []
        self.problem_key = None

    def load(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """Inputs for two random sets, golden outputs from the baseline, baseline check."""
        import numpy as np

        t0 = time.perf_counter()
        dtype = str(message["dtype"])
        seed = int(message["seed"])
        ref = self._reference(str(message["folder"]))
        baseline = message["baseline"]
        if self.compare is None:
            checks = self.cuda.module_from_file(str(message["check_kernels"]))
            self.modules["<checks>"] = checks
            self.to_f32 = checks.get_function("wb_to_f32")
            self.to_f32.prepare("PiiPqP")
            self.compare = checks.get_function("wb_compare")
            self.compare.prepare("PiiPqffP")
            self.counters = self.cuda.mem_alloc(5 * 8)
        self._free_problem()
        check = message.get("check")
        if check is not None:
            key = json.dumps([baseline["cubin"], check["shape"], dtype], sort_keys=True)
            if key not in self.checked:
                rng = np.random.default_rng([seed, 99])
                host = ref.make_inputs(dict(check["shape"]), dtype, rng)
                cset = _InputSet(self, check, dtype, host)
                try:
                    quantized = {**host, **cset.quantized}
                    expected = ref.reference(quantized, dict(check["shape"]), dtype)
                    func = self._function(baseline["cubin"], baseline["entry"], cset.format,
                                          int(check["launch"]["smem_bytes"]))
                    self._run_once(func, check["launch"], cset)
                    got = cset.download()
                    try:
                        compare_outputs(got, expected, cset.output_args(),
                                        f"baseline vs reference.py at shape "
                                        f"{check['shape_name']}")
                    except _Mismatch as exc:
                        return {"error": exc.reason, "kind": "baseline_wrong"}
                finally:
                    cset.free()
                self.checked.add(key)
        main = message["main"]
        for index in range(2):
            rng = np.random.default_rng([seed, index])
            host = ref.make_inputs(dict(main["shape"]), dtype, rng)
            iset = _InputSet(self, main, dtype, host)
            self.sets.append(iset)
            func = self._function(baseline["cubin"], baseline["entry"], iset.format,
                                  int(main["launch"]["smem_bytes"]))
            self._run_once(func, main["launch"], iset)
            problem = iset.make_golden()
            if problem is not None:
                self._free_problem()
                return {"error": f"the baseline is wrong at shape {main['shape_name']}: "
                                 f"{problem}", "kind": "baseline_wrong"}
        self.problem_key = str(message.get("key"))
        return {"ok": True, "load_s": time.perf_counter() - t0,
                "device_bytes": sum(sum(s.nbytes.values()) for s in self.sets)}

    def _flush_buffer(self, nbytes: int) -> Any:
        if self.flush_buf is None or self.flush_bytes < nbytes:
            if self.flush_buf is not None:
                self.flush_buf.free()
            self.flush_buf = self.cuda.mem_alloc(nbytes)
            self.flush_bytes = nbytes
        return self.flush_buf

    def _spin_up(self) -> None:
        """Keep the GPU busy for SPIN_UP_S after an idle gap, so timing starts at boost clocks.

        An idle GPU drops to low clocks within tens of milliseconds and takes a while to come
        back; a short per-candidate warm-up does not cover that (seen on the H100: a fresh
        worker timed 4-8 us kernels 2-5 % slower than the sweep that ran back to back).
        During a sweep the GPU never idles that long, so this costs nothing there.
        """
        if time.perf_counter() - self.last_busy_s < IDLE_GAP_S:
            return
        buf = self._flush_buffer(64 << 20)
        began = time.perf_counter()
        while time.perf_counter() - began < SPIN_UP_S:
            for _ in range(8):
                self.cuda.memset_d32_async(buf, 0, (64 << 20) // 4, self.stream)
            self.stream.synchronize()

    def _timed(self, launch_fn: Any, settings: Any, prepare: Any) -> dict[str, Any]:
        from workbench.engine.bench import summarize, time_launches

        flush = None
        if settings.flush_l2:
            nbytes = settings.flush_bytes_for(self.attrs.get("L2_CACHE_SIZE", 64 << 20))
            buf = self._flush_buffer(nbytes)

            def flush() -> None:
                self.cuda.memset_d32_async(buf, 0x3C003C00, nbytes // 4, self.stream)

        self._spin_up()
        before = self.nvml.sample()
        samples, wall_s = time_launches(self.cuda, self.stream, launch_fn, settings,
                                        prepare=prepare, flush=flush)
        self.last_busy_s = time.perf_counter()
        after = self.nvml.sample()
        static = self.nvml.static() if self.nvml.nv is not None else {}
        ref_clock = static.get("app_sm_clock_mhz") or static.get("max_sm_clock_mhz")
        timing = summarize(samples, l2_flushed=settings.flush_l2,
                           sm_clock_mhz=after.get("sm_clock_mhz"),
                           mem_clock_mhz=after.get("mem_clock_mhz"),
                           temperature_c=after.get("temperature_c"),
                           throttled=throttled([before, after], ref_clock))
        from dataclasses import asdict

        return {"samples_us": [round(x, 4) for x in samples], "timing": asdict(timing),
                "bench_s": wall_s, "nvml": {"before": before, "after": after,
                                            "reference_sm_clock_mhz": ref_clock}}

    def evaluate(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """Verify a cubin on both input sets against the baseline's outputs, then time it."""
        from workbench.engine.bench import BenchSettings

        if not self.sets or message.get("key") != self.problem_key:
            return {"error": f"problem {message.get('key')!r} is not loaded "
                             f"(loaded: {self.problem_key!r})", "kind": "protocol"}
        settings = BenchSettings.from_dict(dict(message["settings"]))
        launch = {"grid": message["grid"], "block": message["block"],
                  "smem_bytes": int(message["smem_bytes"])}
        t0 = time.perf_counter()
        phase = "load"
        try:
            func = self._function(str(message["cubin"]), str(message["entry"]),
                                  self.sets[0].format, launch["smem_bytes"])
            worst = 0.0
            for index, iset in enumerate(self.sets):
                phase = f"verification on input set {index + 1}"
                self._run_once(func, launch, iset)
                label = "input set 1" if index == 0 else "second (fresh) input set"
                worst = max(worst, iset.verify(label))
        except _Mismatch as exc:
            return {"status": Status.WRONG_RESULT.value, "reason": exc.reason,
                    "max_abs_err": exc.max_abs_err, "verify_s": time.perf_counter() - t0}
        except self.cuda.Error as exc:
            text = f"{type(exc).__name__}: {exc}"
            rule = classify_cuda_error(text)
            if rule is None:
                return {"error": text, "kind": "cuda", "restart_worker": True}
            return {"status": rule.status.value, "reason": f"{rule.meaning} during {phase}: "
                    f"{text}", "restart_worker": rule.restart_worker,
                    "verify_s": time.perf_counter() - t0}
        verify_s = time.perf_counter() - t0
        reply: dict[str, Any] = {"status": Status.OK.value, "reason": "", "max_abs_err": worst,
                                 "verify_s": verify_s}
        if not message.get("time", True):
            return reply
        iset = self.sets[0]
        grid, block, smem = tuple(launch["grid"]), tuple(launch["block"]), launch["smem_bytes"]

        def run() -> None:
            func.prepared_async_call(grid, block, self.stream, *iset.values, shared_size=smem)

        def restore() -> None:
            iset.restore(self.stream)

        try:
            reply.update(self._timed(run, settings, restore if iset.pristine else None))
        except self.cuda.Error as exc:
            text = f"{type(exc).__name__}: {exc}"
            rule = classify_cuda_error(text)
            if rule is None:
                return {"error": text, "kind": "cuda", "restart_worker": True}
            return {"status": rule.status.value, "reason": f"{rule.meaning} during timing: "
                    f"{text}", "restart_worker": rule.restart_worker, "verify_s": verify_s}
        return reply

    def copy(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """Time a device-to-device copy of ``nbytes`` (read + written = 2 x nbytes)."""
        import numpy as np

        from workbench.engine.bench import BenchSettings

        settings = BenchSettings.from_dict(dict(message["settings"]))
        nbytes = int(message["nbytes"]) // 4 * 4
        src = self.cuda.mem_alloc(nbytes)
        dst = self.cuda.mem_alloc(nbytes)
        try:
            rng = np.random.default_rng(int(message.get("seed", 0)))
            self.cuda.memcpy_htod(src, rng.integers(1, 2**31, size=nbytes // 4,
                                                    dtype=np.uint32))

            def run() -> None:
                self.cuda.memcpy_dtod_async(dst, src, nbytes, self.stream)

            reply = self._timed(run, settings, None)
        finally:
            src.free()
            dst.free()
        return {"ok": True, "nbytes": nbytes, **reply}

    def close(self) -> None:
        self._free_problem()
        if self.flush_buf is not None:
            self.flush_buf.free()
        self.modules.clear()
        self.functions.clear()
        self.context.pop()


# --------------------------------------------------------------------------------------------
# The child


def main() -> int:
    """Serve commands on stdin/stdout until ``quit`` or end of input."""
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints (pycuda, reference.py) must not corrupt the protocol
    sys.stdout = sys.stderr
    proto_in = sys.stdin.buffer
    session = GpuSession()
    while True:
        message = read_message(proto_in)
        if message is None or message.get("cmd") == "quit":
            write_message(proto_out, {"ok": True})
            session.close()
            return 0
        reply = session.handle(message)
        write_message(proto_out, reply)
        if reply.get("restart_worker"):
            # the context is poisoned: leave, so nothing else runs on it
            proto_out.flush()
            os._exit(3)


if __name__ == "__main__":
    sys.exit(main())
