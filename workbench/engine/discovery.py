"""Device discovery: a :class:`DeviceSpec` from the live GPU, checked against the table.

The GPU worker's ``hello`` answer carries the CUDA device attributes (pycuda names) and,
when nvidia-ml-py is importable, NVML clocks, temperature and the driver version. The spec
used for pruning comes from those live attributes; where they differ from the table entry
of the same GPU, each difference is logged (the live values win).
"""

from __future__ import annotations

import logging
from typing import Any

from workbench.core.errors import DeviceError, WorkbenchError
from workbench.core.hardware import (
    DeviceSpec,
    compare_specs,
    from_live,
    get_device,
    match_device_name,
)
from workbench.engine.worker_messages import HelloReply

log = logging.getLogger(__name__)


def spec_from_hello(hello: HelloReply) -> DeviceSpec:
    """The live device's spec; differences from the table entry are logged as warnings."""
    name = hello.name
    if not hello.attrs or not name:
        raise DeviceError("the worker's hello lacks device attributes or a name",
                          key="hello", value=name, expected="attrs and name")
    live = from_live(dict(hello.attrs), name)
    key = match_device_name(name)
    if key is None:
        log.warning("device %r has no table entry; using its live attributes only", name)
        return live
    try:
        table = get_device(key)
    except WorkbenchError:
        log.warning("table entry %r for device %r is missing; using live attributes", key, name)
        return live
    differences = compare_specs(live, table)
    for line in differences:
        log.warning("live %s differs from table entry %s: %s", name, key, line)
    if not differences:
        log.info("live %s matches table entry %s", name, key)
    return live


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
