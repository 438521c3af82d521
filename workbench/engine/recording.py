"""Recordings: real measurements saved as JSON, one file per device run.

``sample_kernels/NAME/recordings/<device>-<date>.json`` (format in docs/design.md)::

    {"format": 1, "kernel": ..., "template_sha256": ..., "device": {...}, "date": ...,
     "bench": {...BenchSettings...}, "copy": [...], "baseline": [TrialResult dicts],
     "trials": [TrialResult dicts], "sweep": {...how the sweep went...},
     "confirmed": [TrialResult dicts], "confirmation": {...how they were measured...}}

``confirmed`` (optional) holds independent re-measurements of the sweep's fastest configs:
a sweep's best times are minima over thousands of noisy medians and read low (the winner's
curse), so the fastest few of each (shape, dtype) are measured again in a fresh worker with
the recording's settings after the sweep, and ``confirmation`` says when, where and how.

Loading validates everything and names the file and the key of the first problem
(:class:`RecordingError` carries ``file``, ``key``, ``value``, ``expected``).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from workbench.core.errors import RecordingError
from workbench.core.picks import ranked_ok
from workbench.core.records import Status, TrialResult
from workbench.engine.bench import CopyTiming

FORMAT = 1
_REQUIRED = {"format": int, "kernel": str, "template_sha256": str, "device": dict, "date": str,
             "bench": dict, "copy": list, "baseline": list, "trials": list}
_DEVICE_REQUIRED = ("name", "spec")
_TRIAL_REQUIRED = ("config", "shape", "dtype", "status")


@dataclass(frozen=True)
class Recording:
    """One device run's measurements of one kernel folder."""

    kernel: str
    template_sha256: str
    device: Mapping[str, Any]
    date: str
    bench: Mapping[str, Any]
    copy: tuple[CopyTiming, ...]
    baseline: tuple[TrialResult, ...]
    trials: tuple[TrialResult, ...]
    sweep: Mapping[str, Any] = field(default_factory=dict)
    confirmed: tuple[TrialResult, ...] = ()
    confirmation: Mapping[str, Any] = field(default_factory=dict)
    #: knobs the template gained after the sweep, whose defaults compile to the recorded
    #: code (benchmarks/carry_recording.py): ``added_knobs`` name -> the value recorded
    carried_over: Mapping[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @property
    def added_knobs(self) -> dict[str, Any]:
        """Knob -> the only value the recording measured (knobs added since the sweep)."""
        return dict(self.carried_over.get("added_knobs") or {})

    @property
    def added_values(self) -> dict[str, list[Any]]:
        """Knob -> values it gained since the sweep (never measured; the replay answers
        them as not recorded)."""
        return {k: list(v) for k, v in (self.carried_over.get("added_values") or {}).items()}

    @property
    def device_name(self) -> str:
        return str(self.device.get("name", ""))

    @property
    def label(self) -> str:
        """``"NVIDIA H100 80GB HBM3 recording from 2026-11-22"``."""
        return f"{self.device_name} recording from {self.date}"

    @functools.cached_property
    def trial_index(self) -> Mapping[tuple[Any, str, str], TrialResult]:
        """(config key, shape, dtype) -> the recorded trial, made once a recording (one
        loaded file is shared by every replay of a process: 7,620 keys cost 0.1-0.25 s)."""
        return MappingProxyType({(t.config.key(), t.shape, t.dtype): t for t in self.trials})

    @functools.cached_property
    def config_names(self) -> frozenset[str]:
        """Every parameter name of the trials' and confirmations' configs, made once."""
        return frozenset(name for t in (*self.trials, *self.confirmed) for name in t.config)

    def fastest(self, shape: str, dtype: str, count: int) -> list[TrialResult]:
        """The ``count`` fastest ok trials of one (shape, dtype), fastest first."""
        return ranked_ok(t for t in self.trials if t.shape == shape and t.dtype == dtype)[:count]

    def confirmed_result(self, config: Mapping[str, Any], shape: str,
                         dtype: str) -> TrialResult | None:
        """The independent re-measurement of one config, if the recording has one."""
        for t in self.confirmed:
            if t.shape == shape and t.dtype == dtype and dict(t.config) == dict(config):
                return t
        return None

    def to_dict(self) -> dict[str, Any]:
        out = {"format": FORMAT, "kernel": self.kernel, "template_sha256": self.template_sha256,
               "device": dict(self.device), "date": self.date, "bench": dict(self.bench),
               "copy": [c.to_dict() for c in self.copy],
               "baseline": [t.to_dict() for t in self.baseline],
               "trials": [t.to_dict() for t in self.trials], "sweep": dict(self.sweep)}
        if self.confirmed or self.confirmation:
            out["confirmation"] = dict(self.confirmation)
            out["confirmed"] = [t.to_dict() for t in self.confirmed]
        if self.carried_over:
            out["carried_over"] = dict(self.carried_over)
        return out


def _finite(value: Any) -> Any:
    """JSON has no NaN/inf: store them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def save_recording(recording: Recording, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write ``recording`` as JSON (one trial per line, so diffs stay readable) under the one
    write policy (:func:`workbench.core.write_policy.write_beside`): missing folders are
    created, symlinks refused, and an existing recording replaced only with ``overwrite``."""
    from workbench.core.write_policy import write_beside

    data = _finite(recording.to_dict())
    lists = {k: data.pop(k) for k in ("copy", "baseline", "trials", "confirmed") if k in data}
    head = json.dumps(data, indent=1, allow_nan=False)[:-2]  # strip the closing "\n}"
    parts = [head]
    for key, items in lists.items():
        body = ",\n".join(json.dumps(item, separators=(",", ":"), allow_nan=False)
                          for item in items)
        parts.append(f',\n "{key}": [\n{body}\n ]' if items else f',\n "{key}": []')
    return write_beside(path, "".join(parts) + "\n}\n", overwrite=overwrite)


def _fail(path: Path, key: str, value: Any, expected: str) -> RecordingError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return RecordingError(f"{path}: {key}: got {shown}; expected {expected}", file=str(path),
                          key=key, value=value, expected=expected)


def _trials(path: Path, data: Sequence[Any], key: str) -> tuple[TrialResult, ...]:
    out = []
    statuses = {s.value for s in Status}
    for i, item in enumerate(data):
        where = f"{key}[{i}]"
        if not isinstance(item, dict):
            raise _fail(path, where, item, "a TrialResult object")
        for name in _TRIAL_REQUIRED:
            if name not in item:
                raise _fail(path, f"{where}.{name}", None, "present")
        if item["status"] not in statuses:
            raise _fail(path, f"{where}.status", item["status"], f"one of {sorted(statuses)}")
        if not isinstance(item["config"], dict):
            raise _fail(path, f"{where}.config", item["config"], "an object")
        if item["status"] == Status.OK.value and not isinstance(item.get("timing"), dict):
            raise _fail(path, f"{where}.timing", item.get("timing"), "a timing for status ok")
        try:
            out.append(TrialResult.from_dict(item))
        except (TypeError, ValueError, KeyError) as exc:
            raise _fail(path, where, str(exc), "a valid TrialResult") from exc
    return tuple(out)


#: Recordings read in this process, by file identity: (path, inode, size, mtime) -> the
#: record. A recording is immutable data and one holds tens of thousands of trials, so the
#: replay runner, the CLI and the panel reading the same file again share one parse; any
#: change to the file (a new inode, size or mtime) reads it afresh.
_LOADED: dict[tuple[str, int, int, int], Recording] = {}
_LOADED_MAX = 8


def load_recording(path: str | Path) -> Recording:
    """Read and validate one recording; RecordingError names the file and the key."""
    source = Path(path)
    if not source.is_file():
        raise RecordingError(f"recording {source} not found", file=str(source), key="",
                             value=None, expected="an existing JSON file")
    key = _identity(source)
    cached = _LOADED.get(key)
    if cached is None:
        cached = _read_recording(source)
        _remember(key, cached)
    return cached


def _identity(source: Path) -> tuple[str, int, int, int]:
    st = source.stat()
    return (str(source), st.st_ino, st.st_size, st.st_mtime_ns)


def _remember(key: tuple[str, int, int, int], recording: Recording) -> None:
    if len(_LOADED) >= _LOADED_MAX:
        _LOADED.pop(next(iter(_LOADED)))
    _LOADED[key] = recording


def share_parse(original: str | Path, copy: str | Path) -> None:
    """Test hook: ``copy`` holds the bytes of ``original`` (a test's copy of a sample folder),
    so the next ``load_recording(copy)`` answers ``original``'s record with the copy as its
    path instead of parsing 5-11 MB of JSON again (0.5-1 CPU s). The bytes are compared
    first; a later change to ``copy`` reads it afresh, as for any file."""
    source, target = Path(original), Path(copy)
    if source.read_bytes() != target.read_bytes():
        raise RecordingError(f"{target} is not a byte-for-byte copy of {source}: it must be "
                             "read", file=str(target), key="", value=str(source),
                             expected="a byte-for-byte copy")
    _remember(_identity(target), replace(load_recording(source), path=target))


def _read_recording(source: Path) -> Recording:
    try:
        data = json.loads(source.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _fail(source, "", str(exc), "valid JSON") from exc
    if not isinstance(data, dict):
        raise _fail(source, "", type(data).__name__, "a JSON object")
    for key, kind in _REQUIRED.items():
        if key not in data:
            raise _fail(source, key, None, f"present ({kind.__name__})")
        if not isinstance(data[key], kind):
            raise _fail(source, key, data[key], kind.__name__)
    if data["format"] != FORMAT:
        raise _fail(source, "format", data["format"], str(FORMAT))
    for key in _DEVICE_REQUIRED:
        if not isinstance(data["device"].get(key), str) or not data["device"][key]:
            raise _fail(source, f"device.{key}", data["device"].get(key), "a non-empty string")
    copies = []
    for i, item in enumerate(data["copy"]):
        try:
            copies.append(CopyTiming.from_dict(item))
        except (TypeError, KeyError, ValueError) as exc:
            raise _fail(source, f"copy[{i}]", item, "shape, dtype, bytes, median_us") from exc
    for key, kind in (("confirmed", list), ("confirmation", dict), ("carried_over", dict)):
        if key in data and not isinstance(data[key], kind):
            raise _fail(source, key, data[key], f"{kind.__name__} (optional)")
    return Recording(kernel=data["kernel"], template_sha256=data["template_sha256"],
                     device=data["device"], date=data["date"], bench=data["bench"],
                     copy=tuple(copies), baseline=_trials(source, data["baseline"], "baseline"),
                     trials=_trials(source, data["trials"], "trials"),
                     sweep=data.get("sweep") or {},
                     confirmed=_trials(source, data.get("confirmed", []), "confirmed"),
                     confirmation=data.get("confirmation") or {},
                     carried_over=data.get("carried_over") or {}, path=source)


#: Bytes read from a recording's start to find its date: the keys before it (format,
#: kernel, template hash, device) take well under 1 KiB as save_recording writes them.
_HEAD_BYTES = 1 << 16


def recording_date(path: Path) -> str:
    """``str(json.load(file).get("date", ""))``, or "" where the file cannot be read or is
    not JSON, without parsing a whole recording (5-11 MB of trials): the top-level keys
    are read from the file's first 64 KiB up to the first "date" (save_recording writes
    each key once), and a file that does not end in "}" has no date (a truncated
    recording; one broken between its head and its end still gives its date). Where the
    head does not say (no "date" in it, not an object, not UTF-8), the whole file is
    parsed."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD_BYTES)
            fh.seek(max(0, fh.seek(0, 2) - 16))
            tail = fh.read()
    except OSError:
        return ""
    if not tail.rstrip().endswith(b"}"):
        return ""
    date = _head_date(head)
    return date if date is not None else _parsed_date(path)


def _head_date(head: bytes) -> str | None:
    """The first top-level "date" of the JSON object that ``head`` starts, or None where
    ``head`` does not hold it (cut before it, malformed, not an object)."""
    try:
        text = head.decode("utf-8")  # a character cut at the end: the whole file says
        decoder = json.JSONDecoder()
        at = _skip_space(text, 0)
        if text[at:at + 1] != "{":
            return None
        at += 1
        while True:
            key, at = decoder.raw_decode(text, _skip_space(text, at))
            at = _skip_space(text, at)
            if not isinstance(key, str) or text[at:at + 1] != ":":
                return None
            value, at = decoder.raw_decode(text, _skip_space(text, at + 1))
            if key == "date":
                return str(value)
            at = _skip_space(text, at)
            if text[at:at + 1] != ",":
                return None
            at += 1
    except ValueError:  # cut inside a value, or not JSON (UnicodeDecodeError too)
        return None


def _skip_space(text: str, at: int) -> int:
    while text[at:at + 1] in (" ", "\t", "\n", "\r"):
        at += 1
    return at


def _parsed_date(path: Path) -> str:
    try:
        with path.open(encoding="utf-8") as fh:
            return str(json.load(fh).get("date", ""))
    except (OSError, ValueError):
        return ""


def recording_paths(folder: str | Path) -> list[Path]:
    """The recordings of a kernel folder, newest name last."""
    return sorted((Path(folder) / "recordings").glob("*.json"))
