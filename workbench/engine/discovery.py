"""Device discovery: a :class:`DeviceSpec` from the live GPU, checked against the table.

The GPU worker's ``hello`` answer carries the CUDA device attributes (pycuda names) and,
when nvidia-ml-py is importable, NVML clocks, temperature and the driver version. The spec
used for pruning comes from those live attributes; where they differ from the table entry
of the same GPU, the differences are warned once per process, with both values
(the live values win).

Before any worker starts, :func:`no_live_reason` says why this machine cannot measure live
(no CUDA driver, no device, no pycuda, no nvcc), in that order: the one reason that
``workbench tune``, ``agent``, ``lab``, ``doctor`` and the panel header state.
"""

from __future__ import annotations

import ctypes
import enum
import importlib.util
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from workbench.core.errors import DeviceError
from workbench.core.hardware import (
    DeviceSpec,
    TableCheck,
    check_against_table,
    from_live,
    match_device_name,
)
from workbench.engine.worker_messages import HelloReply

log = logging.getLogger(__name__)


def spec_from_hello(hello: HelloReply) -> DeviceSpec:
    """The live device's spec; where it differs from the table entry, one warning per
    process naming both values (:func:`~workbench.core.hardware.check_against_table`)."""
    name = hello.name
    if not hello.attrs or not name:
        raise DeviceError("the worker's hello lacks device attributes or a name",
                          key="hello", value=name, expected="attrs and name")
    live = from_live(dict(hello.attrs), name)
    check = check_against_table(live)
    with _WARNED_LOCK:
        first = check not in _WARNED
        _WARNED.add(check)
    if first and check.lines():
        log.warning("; ".join(check.lines()))
    return live


_WARNED: set[TableCheck] = set()  # each live-vs-table difference is warned once per process
_WARNED_LOCK = threading.Lock()


def device_facts(hello: HelloReply) -> dict[str, Any]:
    """Name, driver, CUDA version and clocks: the ``device`` block of a recording."""
    nvml = hello.nvml
    name = hello.name
    return {
        "name": name,
        "spec": match_device_name(name) or "",
        "driver": nvml.get("driver"),
        "cuda": hello.cuda_driver_version,
        "sm_clock_mhz": nvml.get("app_sm_clock_mhz") or nvml.get("max_sm_clock_mhz"),
        "mem_clock_mhz": nvml.get("app_mem_clock_mhz") or nvml.get("max_mem_clock_mhz"),
        "max_sm_clock_mhz": nvml.get("max_sm_clock_mhz"),
        "power_limit_w": nvml.get("power_limit_w"),
        "compute_capability": list(hello.compute_capability),
        "total_memory_bytes": hello.total_memory_bytes,
    }


class NoLive(enum.Enum):
    """Why live measurement is impossible here, in the order the checks are made: the
    first that holds is the one stated."""

    NO_DRIVER = "no driver"
    NO_DEVICE = "no device"
    NO_PYCUDA = "no pycuda"
    NO_NVCC = "no nvcc"


@dataclass(frozen=True)
class NoLiveReason:
    """The first thing missing for live measurement, and what the probe found."""

    kind: NoLive
    found: str  # the probe's own words: the loader's error, cuInit's code, the search path

    @property
    def text(self) -> str:
        """One clause: ``"no CUDA driver (libcuda.so.1: cannot open shared object file)"``."""
        what = {NoLive.NO_DRIVER: "no CUDA driver",
                NoLive.NO_DEVICE: "the CUDA driver sees no GPU",
                NoLive.NO_PYCUDA: "pycuda (the GPU worker's CUDA binding) is not installed",
                NoLive.NO_NVCC: "nvcc is not found"}[self.kind]
        return f"{what} ({self.found})" if self.found else what


@dataclass(frozen=True)
class DriverProbe:
    """What the CUDA driver API answered: device names and version, or why not."""

    devices: tuple[str, ...]
    driver_version: str
    problem: NoLiveReason | None


CUDA_ERROR_NO_DEVICE = 100  # cuInit's code when a driver is loaded but no GPU is visible


def probe_driver(load: Callable[[str], Any] = ctypes.CDLL) -> DriverProbe:
    """Ask ``libcuda.so.1`` (ctypes; no CUDA context is kept) for its devices."""
    try:
        cuda = load("libcuda.so.1")
    except OSError as exc:
        return DriverProbe((), "", NoLiveReason(NoLive.NO_DRIVER, str(exc)))
    try:
        code = int(cuda.cuInit(0))
        if code == CUDA_ERROR_NO_DEVICE:
            return DriverProbe((), "", NoLiveReason(NoLive.NO_DEVICE, "cuInit: CUDA error 100, "
                                                                      "no CUDA-capable device"))
        if code != 0:
            return DriverProbe((), "", NoLiveReason(
                NoLive.NO_DRIVER, f"cuInit returned CUDA error {code}: the driver is not usable"))
        version, count = ctypes.c_int(0), ctypes.c_int(0)
        cuda.cuDriverGetVersion(ctypes.byref(version))
        cuda.cuDeviceGetCount(ctypes.byref(count))
        names = []
        for index in range(count.value):
            device = ctypes.c_int(0)
            buffer = ctypes.create_string_buffer(256)
            cuda.cuDeviceGet(ctypes.byref(device), index)
            cuda.cuDeviceGetName(buffer, 256, device)
            names.append(buffer.value.decode(errors="replace"))
    except (OSError, AttributeError) as exc:  # a library without the driver API's symbols
        return DriverProbe((), "", NoLiveReason(NoLive.NO_DRIVER, f"libcuda.so.1: {exc}"))
    driver = f"{version.value // 1000}.{version.value % 1000 // 10}"
    if not names:
        return DriverProbe((), driver, NoLiveReason(NoLive.NO_DEVICE,
                                                    f"driver API {driver} lists 0 devices"))
    return DriverProbe(tuple(names), driver, None)


def pycuda_reason(find_spec: Callable[[str], object] = importlib.util.find_spec
                  ) -> NoLiveReason | None:
    """:attr:`NoLive.NO_PYCUDA` unless pycuda is importable."""
    if find_spec("pycuda") is None:
        return NoLiveReason(NoLive.NO_PYCUDA, "")
    return None


def nvcc_reason() -> NoLiveReason | None:
    """:attr:`NoLive.NO_NVCC` unless nvcc is found (``$CUDA_HOME``, ``$CUDA_PATH``, PATH)."""
    from workbench.core.errors import WorkbenchError
    from workbench.engine.compiler import find_nvcc

    try:
        find_nvcc()
    except WorkbenchError as exc:
        return NoLiveReason(NoLive.NO_NVCC, exc.message.split(";")[0])
    return None


def first_reason(reasons: Iterable[NoLiveReason | None]) -> NoLiveReason | None:
    """The reason stated when several hold: driver, then device, then pycuda, then nvcc."""
    order = list(NoLive)
    found = [r for r in reasons if r is not None]
    return min(found, key=lambda r: order.index(r.kind)) if found else None


def no_live_reason(*, load: Callable[[str], Any] = ctypes.CDLL,
                   find_spec: Callable[[str], object] = importlib.util.find_spec,
                   nvcc: Callable[[], NoLiveReason | None] = nvcc_reason
                   ) -> NoLiveReason | None:
    """Why this machine cannot measure live, or None when it can: the one reason every
    caller states (the driver and device first: without them pycuda would not help)."""
    return first_reason([probe_driver(load).problem, pycuda_reason(find_spec), nvcc()])


def tuning_mode_line(reason: NoLiveReason | None, device: str = "") -> str:
    """``"live on <device>"`` or ``"replay because <reason>"`` (the panel header and
    ``workbench lab``/``doctor`` print this)."""
    if reason is None:
        return f"live on {device}" if device else "live"
    return f"replay because {reason.text}"
