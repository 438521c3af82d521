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
class TrialResult:
    """Everything known about one (config, shape, dtype) evaluation."""

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
            elif f.name in ("timing", "usage", "occupancy") and value is not None:
                value = asdict(value)
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
        return cls(**kwargs)


@dataclass(frozen=True)
class Candidate:
    """One thing for a runner to evaluate."""

    config: Config
    shape: str
    dtype: str
