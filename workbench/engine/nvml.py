"""NVML readings in the GPU worker: clocks, temperature and throttle reasons around a timing.

Diagnostic only (the SM clock a batch ran at is measured by the timing gate itself); every
call answers ``None`` / nothing when nvidia-ml-py is absent or a query fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: NVML throttle reasons that mean "slowed down": SW power cap, HW slowdown, SW/HW thermal,
#: HW power brake (idle, application-clock and sync-boost reasons are not slowdowns).
THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
CLOCK_SHORTFALL = 0.05


class Nvml:
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


def throttled(samples: list[Mapping[str, Any]],
              reference_sm_clock_mhz: float | None) -> bool | None:
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
