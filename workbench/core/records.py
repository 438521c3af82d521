"""Result records: frozen, hashable dataclasses with units in their field names.

Expected failures are data (a :class:`Status` on a :class:`TrialResult`), not exceptions.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

Value = int | str | bool


class Config(Mapping[str, Value]):
    """An immutable, hashable mapping of parameter name -> value, in a stable order."""

    __slots__ = ("_hash", "_items")

    def __init__(self, values: Mapping[str, Value] | None = None, /, **kwargs: Value) -> None:
        merged = dict(values or {}, **kwargs)
        self._items: tuple[tuple[str, Value], ...] = tuple(sorted(merged.items()))
        self._hash = hash(self._items)

    def __getitem__(self, key: str) -> Value:
        for name, value in self._items:
            if name == key:
                return value
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[Config], tuple[dict[str, Value]]]:
        # rebuilt, never restored: str hashes differ between processes (PYTHONHASHSEED), so
        # a pickled _hash would be stale in a Dask worker or back in the driver
        return (Config, (dict(self._items),))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Config):
            return self._items == other._items
        if isinstance(other, Mapping):
            return dict(self._items) == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._items)
        return f"Config({inner})"

    def key(self) -> str:
        """Canonical JSON text; the store and recordings key configs by it."""
        return json.dumps(dict(self._items), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_key(cls, text: str) -> Config:
        return cls(json.loads(text))

    def replace(self, **changes: Value) -> Config:
        return Config(dict(self._items, **changes))


class Status(enum.StrEnum):
    """Outcome of one candidate. Only ``OK`` carries a timing."""

    OK = "ok"
    PRUNED = "pruned"
    COMPILE_ERROR = "compile_error"
    LAUNCH_ERROR = "launch_error"
    WRONG_RESULT = "wrong_result"
    TIMEOUT = "timeout"
    CRASHED = "crashed"

    @property
    def is_failure(self) -> bool:
        return self not in (Status.OK, Status.PRUNED)


@dataclass(frozen=True)
class ResourceUsage:
    """What ptxas reports for one kernel (per thread / per block)."""

    regs_per_thread: int
    static_smem_bytes: int = 0
    dynamic_smem_bytes: int = 0
    stack_frame_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    const_bytes: int = 0

    @property
    def smem_bytes_per_block(self) -> int:
        return self.static_smem_bytes + self.dynamic_smem_bytes

    @property
    def spills(self) -> bool:
        return self.spill_store_bytes > 0 or self.spill_load_bytes > 0

    def with_dynamic_smem(self, dynamic_smem_bytes: int) -> ResourceUsage:
        return ResourceUsage(**{**asdict(self), "dynamic_smem_bytes": dynamic_smem_bytes})


@dataclass(frozen=True)
class Occupancy:
    """Active blocks and warps per SM, and the resource that limits them."""

    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limited_by: str  # "threads" | "warps" | "blocks" | "registers" | "shared_memory" | "none"

    @property
    def fraction(self) -> float:
        return self.warps_per_sm / self.max_warps_per_sm if self.max_warps_per_sm else 0.0


@dataclass(frozen=True)
class Timing:
    """Robust statistics of one candidate's timed repetitions (microseconds)."""

    median_us: float
    min_us: float
    q1_us: float
    q3_us: float
    mean_us: float
    reps: int
    rse_median_pct: float  # relative standard error of the median, in percent
    l2_flushed: bool
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    temperature_c: int | None = None
    throttled: bool | None = None

    @property
    def iqr_us(self) -> float:
        return self.q3_us - self.q1_us


@dataclass(frozen=True)
class ClockStats:
    """The SM clock the timing gate measured during the timed batches (cycles/globaltimer)."""

    median_mhz: float
    min_mhz: float
    max_mhz: float
    batches: int


@dataclass(frozen=True)
class TimingMethod:
    """How a timed result was measured, as the GPU worker reports it beside the numbers."""

    timer: str = "events"          # "events" (CUDA event pairs) | "cupti" (kernel durations)
    flush: str = "none"            # how L2 was flushed before each launch ("none": it wasn't)
    gated: bool = False            # launches queued behind a spin gate
    clock_tick_us: float = 0.0     # the GPU timer's step (medians are grouped by it)
    gate_timeouts: int = 0         # the host stalled longer than the gate waits
    window_medians_us: tuple[float, ...] = ()  # one median per timing window
    sm_clock: ClockStats | None = None
    graph_launches: int = 0        # the "graph" cache condition: launches per timed graph

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TimingMethod:
        clock = data.get("sm_clock") or data.get("sm_clock_effective_mhz")
        return cls(timer=str(data.get("timer") or "events"), flush=str(data.get("flush", "none")),
                   gated=bool(data.get("gated", False)),
                   clock_tick_us=float(data.get("clock_tick_us") or 0.0),
                   gate_timeouts=int(data.get("gate_timeouts") or 0),
                   graph_launches=int(data.get("graph_launches") or 0),
                   window_medians_us=tuple(float(x) for x in
                                           data.get("window_medians_us") or ()),
                   sm_clock=ClockStats(
                       median_mhz=float(clock.get("median_mhz", clock.get("median", 0.0))),
                       min_mhz=float(clock.get("min_mhz", clock.get("min", 0.0))),
                       max_mhz=float(clock.get("max_mhz", clock.get("max", 0.0))),
                       batches=int(clock.get("batches", 0)))
                   if isinstance(clock, Mapping) else None)


# Keys earlier versions kept in ``TrialResult.extra``; read back into the typed fields.
_LEGACY_METHOD_KEYS = ("timer", "clock_tick_us", "gate_timeouts", "window_medians_us",
                       "sm_clock_effective_mhz", "graph_launches", "flush")


@dataclass(frozen=True)
class TrialResult:
    """Everything known about one (config, shape, dtype) evaluation.

    ``samples_us`` are the raw per-launch times the median summarizes (the timer's: kernel
    durations with CUPTI, event pairs otherwise); ``event_samples_us`` the event-pair times
    of the same launches where CUPTI timed them; ``method`` how they were taken. ``extra``
    is for free-form notes only (a replay's warning, the config a cubin was reused from).
    """

    config: Config
    shape: str
    dtype: str
    status: Status
    reason: str = ""  # pruning reason or failure summary; empty when ok
    timing: Timing | None = None
    usage: ResourceUsage | None = None
    occupancy: Occupancy | None = None
    instance_hash: str = ""
    bytes_moved: int | None = None
    compile_s: float | None = None
    verify_s: float | None = None
    bench_s: float | None = None
    max_abs_err: float | None = None
    device: str = ""  # device name, e.g. "NVIDIA H100 80GB HBM3"
    source: str = "live"  # "live" or "replay:<file> (<date>)"
    log_excerpt: str = ""
    samples_us: tuple[float, ...] = field(default=(), compare=False)
    event_samples_us: tuple[float, ...] = field(default=(), compare=False)
    method: TimingMethod | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def median_us(self) -> float | None:
        return self.timing.median_us if self.timing else None

    @property
    def bandwidth_gb_per_s(self) -> float | None:
        """Achieved bandwidth: roofline bytes over the median time (1 GB = 1e9 B)."""
        if self.timing is None or not self.bytes_moved:
            return None
        return self.bytes_moved / (self.timing.median_us * 1e-6) / 1e9

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "config":
                value = dict(value)
            elif f.name == "status":
                value = value.value
            elif f.name in ("timing", "usage", "occupancy", "method") and value is not None:
                value = asdict(value)
            elif f.name in ("samples_us", "event_samples_us"):
                value = list(value)
            elif f.name == "extra":
                value = dict(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrialResult:
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["config"] = Config(kwargs.get("config") or {})
        kwargs["status"] = Status(kwargs["status"])
        if kwargs.get("timing") is not None:
            kwargs["timing"] = Timing(**kwargs["timing"])
        if kwargs.get("usage") is not None:
            kwargs["usage"] = ResourceUsage(**kwargs["usage"])
        if kwargs.get("occupancy") is not None:
            kwargs["occupancy"] = Occupancy(**kwargs["occupancy"])
        extra = dict(kwargs.get("extra") or {})
        for name in ("samples_us", "event_samples_us"):  # typed now; older files kept them
            raw = kwargs.get(name) or extra.pop(name, None) or ()
            kwargs[name] = tuple(float(x) for x in raw)
        legacy = {k: extra.pop(k) for k in _LEGACY_METHOD_KEYS if k in extra}
        if kwargs.get("method") is not None:
            kwargs["method"] = TimingMethod.from_dict(kwargs["method"])
        elif legacy and kwargs.get("timing") is not None:
            kwargs["method"] = TimingMethod.from_dict(legacy)
        kwargs["extra"] = extra
        return cls(**kwargs)


@dataclass(frozen=True)
class Candidate:
    """One thing for a runner to evaluate."""

    config: Config
    shape: str
    dtype: str
