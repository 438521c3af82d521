"""Device discovery: a :class:`DeviceSpec` from the live GPU, checked against the table.

The GPU worker's ``hello`` answer carries the CUDA device attributes (pycuda names) and,
when nvidia-ml-py is importable, NVML clocks, temperature and the driver version. The spec
used for pruning comes from those live attributes; where they differ from the table entry
of the same GPU, the differences are warned once per process, with both values
(the live values win).
"""

from __future__ import annotations

import logging
import threading
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
