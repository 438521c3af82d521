"""The messages between a runner and its GPU worker, as typed records.

The wire stays length-prefixed JSON (:mod:`workbench.engine.worker_protocol`); these records
are what both sides build and read, decoded at the pipe and typed inside. A request's
``to_message()`` is the JSON object the runner sends and :func:`decode_request` what the
worker reads back; the worker answers with a reply's ``to_message()`` and the runner reads
it with the reply's ``from_message()`` (or :func:`failure_in` for an error). A missing or
malformed field is a :class:`WorkerError` naming the field and what was expected, never a
KeyError deep in either process. Only NVML's readings stay a mapping (diagnostic: whatever
the driver answers, read in one place, :mod:`workbench.engine.discovery`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench.core.errors import WorkerError
from workbench.core.records import Status, Timing, TimingMethod
from workbench.engine.bench import BenchSettings
from workbench.engine.spin_up import SpinUp

__all__ = ["CopyReply", "CopyRequest", "EvaluateReply", "EvaluateRequest", "HelloReply",
           "HelloRequest",
           "LaunchGeometry", "LoadReply", "LoadRequest", "ProblemSpec", "QuitRequest",
           "Request", "WorkerFailure", "decode_request", "failure_in"]


def _need(message: Mapping[str, Any], name: str, what: str) -> Any:
    if name not in message:
        raise WorkerError(f"the GPU worker's {what} message lacks {name!r}", key=name,
                          value=sorted(message), expected=f"a {what} message with {name!r}")
    return message[name]


def _triple(value: Any, name: str) -> tuple[int, int, int]:
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 3:
        raise WorkerError(f"launch {name} = {value!r}; expected three integers", key=name,
                          value=value, expected="three integers")
    return (int(value[0]), int(value[1]), int(value[2]))


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class LaunchGeometry:
    """Grid, block and dynamic shared memory of one launch."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem_bytes: int
    pdl: bool = False  # programmatic dependent launch (workbench.core.template.Launch)

    def to_message(self) -> dict[str, Any]:
        return {"grid": list(self.grid), "block": list(self.block),
                "smem_bytes": self.smem_bytes, **({"pdl": True} if self.pdl else {})}

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> LaunchGeometry:
        return cls(grid=_triple(_need(message, "grid", "launch"), "grid"),
                   block=_triple(_need(message, "block", "launch"), "block"),
                   smem_bytes=int(_need(message, "smem_bytes", "launch")),
                   pdl=bool(message.get("pdl", False)))


@dataclass(frozen=True)
class ProblemSpec:
    """One problem the worker allocates: its sizes, argument layout and launch.

    ``args`` is :meth:`KernelFolder.arg_layout` (name, role, concrete dtype, shape, and a
    scalar's value), which the worker's input generator and reference.py read as given;
    ``constants`` is :meth:`KernelFolder.constant_layout` (name, dtype, shape): the module
    globals the worker uploads before every run (absent from the message when none)."""

    shape_name: str
    shape: Mapping[str, int]
    args: Sequence[Mapping[str, Any]]
    launch: LaunchGeometry
    constants: Sequence[Mapping[str, Any]] = ()

    def to_message(self) -> dict[str, Any]:
        return {"shape_name": self.shape_name, "shape": dict(self.shape),
                "args": [dict(a) for a in self.args], "launch": self.launch.to_message(),
                **({"constants": [dict(c) for c in self.constants]} if self.constants
                   else {})}

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> ProblemSpec:
        constants = message.get("constants") or []
        if not isinstance(constants, list) or not all(
                isinstance(c, Mapping) and {"name", "dtype", "shape"} <= set(c)
                for c in constants):
            raise WorkerError("the GPU worker's problem message has malformed 'constants'",
                              key="constants", value=constants,
                              expected="a list of {name, dtype, shape}")
        return cls(shape_name=str(_need(message, "shape_name", "problem")),
                   shape={str(k): int(v) for k, v in _need(message, "shape", "problem").items()},
                   args=[dict(a) for a in _need(message, "args", "problem")],
                   launch=LaunchGeometry.from_message(_need(message, "launch", "problem")),
                   constants=tuple(dict(c) for c in constants))


@dataclass(frozen=True)
class HelloRequest:
    """Describe the device (the reply is a mapping: see the module docstring)."""

    def to_message(self) -> dict[str, Any]:
        return {"cmd": "hello"}


@dataclass(frozen=True)
class QuitRequest:
    """Free everything and exit."""

    def to_message(self) -> dict[str, Any]:
        return {"cmd": "quit"}


@dataclass(frozen=True)
class LoadRequest:
    """Allocate a problem, run the baseline on it and keep its outputs as the reference."""

    key: str
    folder: str
    dtype: str
    seed: int
    check_kernels: str        # cubin of the worker's own check and timing kernels
    baseline_cubin: str
    baseline_entry: str
    main: ProblemSpec
    check: ProblemSpec

    def to_message(self) -> dict[str, Any]:
        return {"cmd": "load", "key": self.key, "folder": self.folder, "dtype": self.dtype,
                "seed": self.seed, "check_kernels": self.check_kernels,
                "baseline": {"cubin": self.baseline_cubin, "entry": self.baseline_entry},
                "main": self.main.to_message(), "check": self.check.to_message()}

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> LoadRequest:
        baseline = _need(message, "baseline", "load")
        return cls(key=str(_need(message, "key", "load")),
                   folder=str(_need(message, "folder", "load")),
                   dtype=str(_need(message, "dtype", "load")),
                   seed=int(_need(message, "seed", "load")),
                   check_kernels=str(_need(message, "check_kernels", "load")),
                   baseline_cubin=str(_need(baseline, "cubin", "load baseline")),
                   baseline_entry=str(_need(baseline, "entry", "load baseline")),
                   main=ProblemSpec.from_message(_need(message, "main", "load")),
                   check=ProblemSpec.from_message(_need(message, "check", "load")))


@dataclass(frozen=True)
class EvaluateRequest:
    """Verify one cubin on the loaded problem and (``time``) time it under ``condition``
    (one of :data:`workbench.core.conditions.CONDITIONS`:
    :func:`workbench.engine.conditions.timing_of` says what each does)."""

    key: str
    cubin: str
    entry: str
    launch: LaunchGeometry
    settings: BenchSettings
    time: bool = True
    condition: str = "read"

    def to_message(self) -> dict[str, Any]:
        return {"cmd": "evaluate", "key": self.key, "cubin": self.cubin, "entry": self.entry,
                **self.launch.to_message(), "settings": self.settings.to_dict(),
                "time": self.time, "condition": self.condition}

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> EvaluateRequest:
        return cls(key=str(_need(message, "key", "evaluate")),
                   cubin=str(_need(message, "cubin", "evaluate")),
                   entry=str(_need(message, "entry", "evaluate")),
                   launch=LaunchGeometry.from_message(message),
                   settings=BenchSettings.from_dict(_need(message, "settings", "evaluate")),
                   time=bool(message.get("time", True)),
                   condition=str(message.get("condition", "read")))


@dataclass(frozen=True)
class CopyRequest:
    """Time a device-to-device copy of ``nbytes`` like a kernel (the bandwidth ceiling)."""

    nbytes: int
    seed: int
    settings: BenchSettings
    check_kernels: str

    def to_message(self) -> dict[str, Any]:
        return {"cmd": "copy", "nbytes": self.nbytes, "seed": self.seed,
                "settings": self.settings.to_dict(), "check_kernels": self.check_kernels}

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> CopyRequest:
        return cls(nbytes=int(_need(message, "nbytes", "copy")),
                   seed=int(message.get("seed", 0)),
                   settings=BenchSettings.from_dict(_need(message, "settings", "copy")),
                   check_kernels=str(message.get("check_kernels") or ""))


#: Every request the worker serves.
Request = HelloRequest | QuitRequest | LoadRequest | EvaluateRequest | CopyRequest

_DECODERS: dict[str, Any] = {
    "hello": lambda m: HelloRequest(), "quit": lambda m: QuitRequest(),
    "load": LoadRequest.from_message, "evaluate": EvaluateRequest.from_message,
    "copy": CopyRequest.from_message}


def decode_request(message: Mapping[str, Any]) -> Request:
    """The typed request a message holds; a WorkerError naming the command or field that
    is unknown or missing."""
    cmd = message.get("cmd")
    decoder = _DECODERS.get(str(cmd))
    if decoder is None:
        raise WorkerError(f"unknown command {cmd!r}", key="cmd", value=cmd,
                          expected=f"one of {sorted(_DECODERS)}")
    request: Request = decoder(message)
    return request


@dataclass(frozen=True)
class WorkerFailure:
    """The worker could not answer a request: ``kind`` says why ("cuda": an unclassified
    CUDA error, "protocol": a bad request, "internal": a bug, "baseline_wrong": the
    baseline disagrees with reference.py). ``status`` is the classified trial status
    of a CUDA error the failure table knows; ``restart_worker`` asks the runner to replace
    the process (its context is poisoned)."""

    error: str
    kind: str
    restart_worker: bool = False
    status: Status | None = None
    traceback: str = ""

    def to_message(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": self.error, "kind": self.kind,
                               "restart_worker": self.restart_worker}
        if self.status is not None:
            out["status"] = self.status.value
        if self.traceback:
            out["traceback"] = self.traceback
        return out

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> WorkerFailure:
        status = message.get("status")
        return cls(error=str(_need(message, "error", "failure")),
                   kind=str(message.get("kind", "")),
                   restart_worker=bool(message.get("restart_worker", False)),
                   status=None if status is None else Status(status),
                   traceback=str(message.get("traceback", "")))


def failure_in(reply: Mapping[str, Any]) -> WorkerFailure | None:
    """The failure a reply reports, or None when it is an answer."""
    return WorkerFailure.from_message(reply) if "error" in reply else None


@dataclass(frozen=True)
class HelloReply:
    """The worker's device: its CUDA attributes (pycuda names), identity and versions, NVML's
    readings, and whether it can load libcupti (``cupti_error`` says why not)."""

    name: str
    attrs: Mapping[str, int]
    compute_capability: tuple[int, int]
    total_memory_bytes: int
    cuda_driver_version: str
    pycuda_cuda_version: str
    pid: int
    nvml: Mapping[str, Any] = field(default_factory=dict)  # driver, clocks, power (diagnostic)
    cupti_path: str = ""
    cupti_api_version: int | None = None
    cupti_error: str | None = None

    def to_message(self) -> dict[str, Any]:
        cupti: dict[str, Any] = ({"error": self.cupti_error} if self.cupti_error is not None
                                 else {"path": self.cupti_path,
                                       "api_version": self.cupti_api_version})
        return {"ok": True, "pid": self.pid, "name": self.name, "attrs": dict(self.attrs),
                "compute_capability": list(self.compute_capability),
                "total_memory_bytes": self.total_memory_bytes,
                "cuda_driver_version": self.cuda_driver_version,
                "pycuda_cuda_version": self.pycuda_cuda_version, "nvml": dict(self.nvml),
                "cupti": cupti}

    @classmethod
    def from_message(cls, reply: Mapping[str, Any]) -> HelloReply:
        attrs = _need(reply, "attrs", "hello")
        if not isinstance(attrs, Mapping):
            raise WorkerError(f"the GPU worker's hello attrs = {attrs!r}; expected a mapping",
                              key="attrs", value=attrs, expected="a mapping of attributes")
        major, minor = _need(reply, "compute_capability", "hello")
        cupti = reply.get("cupti") or {"error": "the worker did not report on libcupti"}
        version = cupti.get("api_version")
        return cls(name=str(_need(reply, "name", "hello")),
                   attrs={str(k): int(v) for k, v in attrs.items()},
                   compute_capability=(int(major), int(minor)),
                   total_memory_bytes=int(_need(reply, "total_memory_bytes", "hello")),
                   cuda_driver_version=str(_need(reply, "cuda_driver_version", "hello")),
                   pycuda_cuda_version=str(reply.get("pycuda_cuda_version", "")),
                   pid=int(reply.get("pid", 0)), nvml=dict(reply.get("nvml") or {}),
                   cupti_path=str(cupti.get("path") or ""),
                   cupti_api_version=None if version is None else int(version),
                   cupti_error=None if "error" not in cupti else str(cupti["error"]))


@dataclass(frozen=True)
class LoadReply:
    """A problem is loaded: how long it took and the device memory its inputs hold."""

    load_s: float
    device_bytes: int

    def to_message(self) -> dict[str, Any]:
        return {"ok": True, "load_s": self.load_s, "device_bytes": self.device_bytes}

    @classmethod
    def from_message(cls, reply: Mapping[str, Any]) -> LoadReply:
        return cls(load_s=float(_need(reply, "load_s", "load")),
                   device_bytes=int(_need(reply, "device_bytes", "load")))


@dataclass(frozen=True)
class EvaluateReply:
    """The worker's answer to an :class:`EvaluateRequest` (or a failure the parent saw)."""

    status: Status
    reason: str = ""
    timing: Timing | None = None
    samples_us: tuple[float, ...] = ()
    event_samples_us: tuple[float, ...] = ()
    method: TimingMethod | None = None
    verify_s: float | None = None
    bench_s: float | None = None
    max_abs_err: float | None = None
    log_excerpt: str = ""
    restart_worker: bool = False
    nvml: Mapping[str, Any] = field(default_factory=dict)  # clocks and temperature, diagnostic
    #: Where the evaluation's seconds went, by phase (diagnostic; see GpuSession.evaluate)
    phases_s: Mapping[str, float] = field(default_factory=dict)
    #: Whether the GPU was kept busy before the timing, why, and the clock seen
    spin_up: SpinUp | None = None

    def to_message(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status.value, "reason": self.reason,
                               "restart_worker": self.restart_worker}
        if self.phases_s:
            out["phases_s"] = dict(self.phases_s)
        if self.spin_up is not None:
            out["spin_up"] = self.spin_up.to_message()
        if self.timing is not None:
            out["timing"] = asdict(self.timing)
            out["samples_us"] = list(self.samples_us)
            out["event_samples_us"] = list(self.event_samples_us)
            out["nvml"] = dict(self.nvml)
        if self.method is not None:
            out["method"] = asdict(self.method)
        for name in ("verify_s", "bench_s", "max_abs_err"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.log_excerpt:
            out["log_excerpt"] = self.log_excerpt
        return out

    @classmethod
    def from_message(cls, reply: Mapping[str, Any]) -> EvaluateReply:
        status = Status(_need(reply, "status", "evaluate"))
        timing = None
        if status is Status.OK and "timing" in reply:
            timing = Timing(**reply["timing"])
        method = reply.get("method")
        spin_up = reply.get("spin_up")
        return cls(status=status, reason=str(reply.get("reason", "")), timing=timing,
                   samples_us=tuple(float(x) for x in reply.get("samples_us") or ()),
                   event_samples_us=tuple(float(x) for x in reply.get("event_samples_us") or ()),
                   method=(TimingMethod.from_dict(method)
                           if isinstance(method, Mapping) and timing is not None else None),
                   verify_s=_optional_float(reply.get("verify_s")),
                   bench_s=_optional_float(reply.get("bench_s")),
                   max_abs_err=_optional_float(reply.get("max_abs_err")),
                   log_excerpt=str(reply.get("log_excerpt", "")),
                   restart_worker=bool(reply.get("restart_worker", False)),
                   nvml=dict(reply.get("nvml") or {}),
                   phases_s={str(k): float(v) for k, v in
                             (reply.get("phases_s") or {}).items()},
                   spin_up=SpinUp.from_message(spin_up) if isinstance(spin_up, Mapping)
                   else None)


@dataclass(frozen=True)
class CopyReply:
    """The worker's timing of a device copy."""

    nbytes: int
    timing: Timing
    samples_us: tuple[float, ...]
    method: TimingMethod | None = None

    def to_message(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": True, "nbytes": self.nbytes,
                               "timing": asdict(self.timing),
                               "samples_us": list(self.samples_us)}
        if self.method is not None:
            out["method"] = asdict(self.method)
        return out

    @classmethod
    def from_message(cls, reply: Mapping[str, Any]) -> CopyReply:
        method = reply.get("method")
        return cls(nbytes=int(_need(reply, "nbytes", "copy")),
                   timing=Timing(**_need(reply, "timing", "copy")),
                   samples_us=tuple(float(x) for x in _need(reply, "samples_us", "copy")),
                   method=TimingMethod.from_dict(method) if isinstance(method, Mapping)
                   else None)
