"""Kernel durations from CUPTI's activity API (ctypes; no CUPTI Python package needed).

A CUDA event pair times everything the GPU front end does between two stream positions: the
launch's processing as well as the kernel. CUPTI's kernel activity records carry the
kernel's own start and end timestamps, the quantity Nsight Systems and Nsight Compute
report as a kernel's duration. :class:`CuptiClock` collects those records in the worker
process and hands back the durations of one named kernel (or of device-to-device copies)
in launch order, so the timing loop can use them as its samples
(``BenchSettings(timer="cupti")``) while still recording its event pairs beside them.

Only the record fields the clock reads are decoded, at offsets taken from CUDA 13's
``cupti_activity.h`` (``CUpti_ActivityKernel10``, ``CUpti_ActivityMemcpy6``); a library
whose API version is older than 13.0 is refused rather than misread
(``tests/test_cupti.py`` checks the offsets against the header when it is installed).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import struct
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from workbench.core.errors import WorkbenchError
from workbench.core.settings import workbench_settings

#: Activity kinds (``CUpti_ActivityKind``).
KIND_MEMCPY = 1
KIND_KERNEL = 3
KIND_CONCURRENT_KERNEL = 10
#: ``CUpti_ActivityMemcpyKind`` of a device-to-device copy.
MEMCPY_DTOD = 8
#: ``CUPTI_ACTIVITY_FLAG_FLUSH_FORCED``: flush records of unfinished work too.
FLUSH_FORCED = 1
#: ``CUptiResult`` codes the clock tests for.
CUPTI_SUCCESS = 0
CUPTI_ERROR_MAX_LIMIT_REACHED = 12
#: The oldest ``cuptiGetVersion`` whose record layouts the offsets below describe.
MIN_API_VERSION = 130000

#: Byte offsets inside the records (CUDA 13 headers; see the module docstring).
KERNEL_START_OFFSET = 16
KERNEL_END_OFFSET = 24
KERNEL_NAME_OFFSET = 104
MEMCPY_COPY_KIND_OFFSET = 4
MEMCPY_START_OFFSET = 16
MEMCPY_END_OFFSET = 24

#: The name :meth:`CuptiClock.take` matches device-to-device copies by.
DTOD_COPY = "<memcpy dtod>"

#: Size of each activity buffer handed to CUPTI (a multiple of 8, as CUPTI requires).
BUFFER_BYTES = 1 << 20

#: Where libcupti is looked for, after ``$WORKBENCH_CUPTI_LIB`` and the loader's search.
_TOOLKIT_DIRS = ("lib64", "lib", "extras/CUPTI/lib64", "targets/x86_64-linux/lib",
                 "targets/sbsa-linux/lib")


class CuptiError(WorkbenchError):
    """CUPTI is missing, too old, or returned an error; carries the call and the code."""


@dataclass(frozen=True)
class ActivityRecord:
    """One decoded activity record: what ran and when (GPU timestamps in nanoseconds)."""

    name: str
    start_ns: int
    end_ns: int

    @property
    def duration_us(self) -> float:
        return (self.end_ns - self.start_ns) / 1e3


def library_candidates() -> list[str]:
    """Paths (or sonames) tried in order when loading libcupti."""
    found: list[str] = []
    env = workbench_settings().cupti_lib
    if env:
        found.append(env)
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")]
    roots += ["/usr/local/cuda", *sorted(glob.glob("/usr/local/cuda-*"), reverse=True)]
    for root in [r for r in roots if r]:
        for sub in _TOOLKIT_DIRS:
            found += sorted(glob.glob(os.path.join(root, sub, "libcupti.so*")))
    for site in sys.path:  # pip's nvidia-cuda-cupti wheels (torch brings one)
        for pattern in ("nvidia/cuda_cupti/lib/libcupti.so*", "nvidia/cu13/lib/libcupti.so*"):
            found += sorted(glob.glob(os.path.join(site, pattern)))
    soname = ctypes.util.find_library("cupti")
    if soname:
        found.append(soname)
    unique: list[str] = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique


def load_library(candidates: list[str] | None = None) -> tuple[ctypes.CDLL, str, int]:
    """The first loadable libcupti whose API version is new enough: (library, path, version).

    Raises :class:`CuptiError` naming every path tried and why each was refused.
    """
    tried: list[str] = []
    for path in candidates if candidates is not None else library_candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            tried.append(f"{path}: {exc}")
            continue
        version = ctypes.c_uint32(0)
        code = lib.cuptiGetVersion(ctypes.byref(version))
        if code != CUPTI_SUCCESS:
            tried.append(f"{path}: cuptiGetVersion returned {code}")
            continue
        if version.value < MIN_API_VERSION:
            tried.append(f"{path}: API version {version.value} < {MIN_API_VERSION} (CUDA 13)")
            continue
        return lib, str(Path(path)), int(version.value)
    raise CuptiError(
        "no usable libcupti (CUDA 13 or newer) for timer='cupti'; tried: "
        + ("; ".join(tried) if tried else "nothing found")
        + ". Set WORKBENCH_CUPTI_LIB to its path or use timer='events'.",
        key="WORKBENCH_CUPTI_LIB", value=workbench_settings().cupti_lib,
        expected="path of libcupti.so from CUDA 13+")


def decode_record(kind: int, raw: bytes,
                  kernel_name: Callable[[int], str]) -> tuple[str | None, int, int]:
    """(name, start_ns, end_ns) of a kernel or memcpy record's leading bytes.

    ``raw`` holds at least the record's first ``KERNEL_NAME_OFFSET + 8`` bytes for a kernel
    record (``kernel_name`` turns its name pointer into the name) or
    ``MEMCPY_END_OFFSET + 8`` for a copy. Other kinds give ``(None, 0, 0)``.
    """
    if kind in (KIND_KERNEL, KIND_CONCURRENT_KERNEL):
        start, end = struct.unpack_from("<QQ", raw, KERNEL_START_OFFSET)
        (name_ptr,) = struct.unpack_from("<Q", raw, KERNEL_NAME_OFFSET)
        return kernel_name(name_ptr), start, end
    if kind == KIND_MEMCPY:
        copy_kind = raw[MEMCPY_COPY_KIND_OFFSET]
        start, end = struct.unpack_from("<QQ", raw, MEMCPY_START_OFFSET)
        return (DTOD_COPY if copy_kind == MEMCPY_DTOD else f"<memcpy {copy_kind}>"), start, end
    return None, 0, 0


_REQUEST = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p),
                            ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t))
_COMPLETE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                             ctypes.c_size_t, ctypes.c_size_t)


class CuptiClock:
    """Collects kernel and device-to-device copy activity of this process.

    Create it in the process that owns the CUDA context (the GPU worker); then, around
    each batch of launches: synchronize, :meth:`take` the durations of the kernel named.
    One clock per process (CUPTI's activity callbacks are process-wide).
    """

    def __init__(self, candidates: list[str] | None = None) -> None:
        self.lib, self.path, self.version = load_library(candidates)
        self._lock = threading.Lock()
        self._buffers: dict[int, ctypes.Array[ctypes.c_char]] = {}
        self._records: list[ActivityRecord] = []
        self._names: dict[int, str] = {}
        self._request_cb = _REQUEST(self._on_request)
        self._complete_cb = _COMPLETE(self._on_complete)
        self.lib.cuptiActivityGetNextRecord.argtypes = [
            ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
        self._check("cuptiActivityRegisterCallbacks",
                    self.lib.cuptiActivityRegisterCallbacks(self._request_cb, self._complete_cb))
        self._check("cuptiActivityEnable(CONCURRENT_KERNEL)",
                    self.lib.cuptiActivityEnable(KIND_CONCURRENT_KERNEL))
        self._check("cuptiActivityEnable(MEMCPY)", self.lib.cuptiActivityEnable(KIND_MEMCPY))

    def _check(self, call: str, code: int) -> None:
        if code == CUPTI_SUCCESS:
            return
        text = ctypes.c_char_p()
        self.lib.cuptiGetResultString(code, ctypes.byref(text))
        message = text.value.decode() if text.value else "unknown"
        raise CuptiError(f"{call} failed: CUPTI error {code} ({message}) from {self.path}",
                         key=call, value=code, expected="CUPTI_SUCCESS (0)")

    # -- CUPTI's callbacks (any thread; ctypes takes the GIL) ----------------------------------

    def _on_request(self, buffer: ctypes._Pointer[ctypes.c_void_p],
                    size: ctypes._Pointer[ctypes.c_size_t],
                    max_records: ctypes._Pointer[ctypes.c_size_t]) -> None:
        block = ctypes.create_string_buffer(BUFFER_BYTES + 8)
        address = ctypes.addressof(block)
        aligned = (address + 7) & ~7
        with self._lock:
            self._buffers[aligned] = block
        buffer[0] = aligned
        size[0] = BUFFER_BYTES
        max_records[0] = 0

    def _on_complete(self, _context: int | None, _stream: int, buffer: int | None,
                     _size: int, valid: int) -> None:
        if not buffer:
            return
        decoded: list[ActivityRecord] = []
        record = ctypes.c_void_p(None)
        while valid:
            code = self.lib.cuptiActivityGetNextRecord(buffer, valid, ctypes.byref(record))
            if code != CUPTI_SUCCESS or not record.value:
                break  # CUPTI_ERROR_MAX_LIMIT_REACHED: end of the buffer
            kind = ctypes.c_uint32.from_address(record.value).value
            if kind not in (KIND_KERNEL, KIND_CONCURRENT_KERNEL, KIND_MEMCPY):
                continue
            raw = ctypes.string_at(record.value, KERNEL_NAME_OFFSET + 8
                                   if kind != KIND_MEMCPY else MEMCPY_END_OFFSET + 8)
            name, start, end = decode_record(kind, raw, self._name)
            if name is None:
                continue
            decoded.append(ActivityRecord(name, start, end))
        with self._lock:
            self._records.extend(decoded)
            self._buffers.pop(buffer, None)

    def _name(self, pointer: int) -> str:
        """The kernel name behind a record's name pointer (shared by its records; cached)."""
        name = self._names.get(pointer)
        if name is None:
            name = ctypes.string_at(pointer).decode(errors="replace") if pointer else "?"
            self._names[pointer] = name
        return name

    # -- the clock --------------------------------------------------------------------------

    def flush(self, forced: bool = False) -> None:
        """Hand finished records to the clock (call after synchronizing the stream); with
        ``forced``, buffers holding unfinished records too."""
        self._check("cuptiActivityFlushAll",
                    self.lib.cuptiActivityFlushAll(FLUSH_FORCED if forced else 0))

    def dropped(self) -> int:
        """Records CUPTI dropped for lack of buffer space (should stay 0)."""
        count = ctypes.c_size_t(0)
        self._check("cuptiActivityGetNumDroppedRecords",
                    self.lib.cuptiActivityGetNumDroppedRecords(None, 0, ctypes.byref(count)))
        return int(count.value)

    def take(self, name: str, expected: int = 0) -> list[float]:
        """Durations (us) of the records named ``name`` since the last take, in start
        order; every other record is forgotten. Call after the stream is synchronized.

        When fewer than ``expected`` arrived with the ordinary flush, a forced flush is
        tried before giving up (a record without an end time is never returned).
        """
        self.flush()
        with self._lock:
            have = sum(r.name == name for r in self._records)
        if have < expected:
            self.flush(forced=True)
        with self._lock:
            records, self._records = self._records, []
        mine = sorted((r for r in records if r.name == name and r.end_ns > r.start_ns),
                      key=lambda r: r.start_ns)
        return [r.duration_us for r in mine]

    def close(self) -> None:
        """Stop collecting (records still buffered are flushed and dropped)."""
        try:
            self.lib.cuptiActivityDisable(KIND_CONCURRENT_KERNEL)
            self.lib.cuptiActivityDisable(KIND_MEMCPY)
            self.lib.cuptiActivityFlushAll(FLUSH_FORCED)
        finally:
            with self._lock:
                self._records.clear()
