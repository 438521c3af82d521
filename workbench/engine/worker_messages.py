"""The messages between a runner and its GPU worker, as typed records.

The wire stays length-prefixed JSON (:mod:`workbench.engine.worker_protocol`); these records
are what each side builds and reads: a request's ``to_message()`` is the JSON object sent,
a reply's ``from_message()`` reads what came back and says what it expected when a field
is missing (a WorkerError naming the field), never a KeyError deep in the runner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core.errors import WorkerError
from workbench.core.records import Status, Timing, TimingMethod

__all__ = ["CopyReply", "CopyRequest", "EvaluateReply", "EvaluateRequest", "LaunchGeometry",
           "LoadRequest", "ProblemSpec"]


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


@dataclass(frozen=True)
class ProblemSpec:
    """One problem the worker allocates: its sizes, argument layout and launch."""

    shape_name: str
    shape: Mapping[str, int]
    args: Sequence[Mapping[str, Any]]
    launch: LaunchGeometry

    def to_message(self) -> dict[str, Any]:
        return {"shape_name": self.shape_name, "shape": dict(self.shape),
                "args": [dict(a) for a in self.args], "launch": self.launch.to_message()}


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


@dataclass(frozen=True)
class EvaluateRequest:
    """Verify one cubin on the loaded problem and (``time``) time it."""

    key: str
    cubin: str
    entry: str
    launch: LaunchGeometry
    settings: Mapping[str, Any]  # BenchSettings.to_dict()
    time: bool = True
    carveout_pct: int | None = None

    def to_message(self) -> dict[str, Any]:
        return {"cmd": "evaluate", "key": self.key, "cubin": self.cubin, "entry": self.entry,
                **self.launch.to_message(), "settings": dict(self.settings), "time": self.time,
                "carveout_pct": self.carveout_pct}


@dataclass(frozen=True)
class CopyRequest:
    """Time a device-to-device copy of ``nbytes`` like a kernel (the bandwidth ceiling)."""

    nbytes: int
    seed: int
    settings: Mapping[str, Any]
    check_kernels: str

    def to_message(self) -> dict[str, Any]:
        return {"cmd": "copy", "nbytes": self.nbytes, "seed": self.seed,
                "settings": dict(self.settings), "check_kernels": self.check_kernels}


def _need(reply: Mapping[str, Any], name: str, what: str) -> Any:
    if name not in reply:
        raise WorkerError(f"the GPU worker's {what} reply lacks {name!r}", key=name,
                          value=sorted(reply), expected=f"a {what} reply with {name!r}")
    return reply[name]


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

    @classmethod
    def from_message(cls, reply: Mapping[str, Any]) -> EvaluateReply:
        status = Status(_need(reply, "status", "evaluate"))
        timing = None
        if status is Status.OK and "timing" in reply:
            timing = Timing(**reply["timing"])
        method = reply.get("method")
        return cls(status=status, reason=str(reply.get("reason", "")), timing=timing,
                   samples_us=tuple(float(x) for x in reply.get("samples_us") or ()),
                   event_samples_us=tuple(float(x) for x in reply.get("event_samples_us") or ()),
                   method=(TimingMethod.from_dict(method)
                           if isinstance(method, Mapping) and timing is not None else None),
                   verify_s=reply.get("verify_s"), bench_s=reply.get("bench_s"),
                   max_abs_err=reply.get("max_abs_err"),
                   log_excerpt=str(reply.get("log_excerpt", "")),
                   restart_worker=bool(reply.get("restart_worker", False)),
                   nvml=dict(reply.get("nvml") or {}))


@dataclass(frozen=True)
class CopyReply:
    """The worker's timing of a device copy."""

    nbytes: int
    timing: Timing
    samples_us: tuple[float, ...]

    @classmethod
    def from_message(cls, reply: Mapping[str, Any]) -> CopyReply:
        return cls(nbytes=int(_need(reply, "nbytes", "copy")),
                   timing=Timing(**_need(reply, "timing", "copy")),
                   samples_us=tuple(float(x) for x in _need(reply, "samples_us", "copy")))
