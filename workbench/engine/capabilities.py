"""What a runner can do beyond the :class:`~workbench.engine.runner.Runner` protocol.

Each optional capability is a small ``runtime_checkable`` protocol, so callers ask
``isinstance(runner, CopyTimer)`` instead of probing attributes by name. A runner that
lacks a capability simply does not define the method (never sets it to ``None``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from workbench.core.records import Config, TrialResult
from workbench.core.template import KernelTemplate
from workbench.engine.bench import CopyTiming
from workbench.engine.compiler import Compiler

__all__ = ["Compiling", "CopyTimer", "DeviceFacts", "ManyDevices",
           "RecordedConfirmations", "Remeasuring", "TemplateBound", "TemplateDeriving"]


@runtime_checkable
class Remeasuring(Protocol):
    """Can time an identical binary again (a live GPU); used by finalist confirmation."""

    def forget_measurements(self) -> None: ...


@runtime_checkable
class ManyDevices(Protocol):
    """Measures on several devices (a Dask cluster); ``one_device()`` is the same runner
    on one of them, where times that are compared with each other are taken."""

    def one_device(self) -> object: ...


@runtime_checkable
class CopyTimer(Protocol):
    """Can time (or recall) a device-to-device copy of a problem's bytes: the ceiling."""

    def copy_timing(self, shape: str, dtype: str) -> CopyTiming: ...


@runtime_checkable
class RecordedConfirmations(Protocol):
    """Holds an independent re-measurement of some configs (a recording's confirmation)."""

    def recorded_confirmation(self, config: Config, shape: str,
                              dtype: str) -> TrialResult | None: ...


@runtime_checkable
class Compiling(Protocol):
    """Compiles what it measures with nvcc (its version and flags key the trials)."""

    compiler: Compiler


@runtime_checkable
class DeviceFacts(Protocol):
    """Knows the measuring machine (driver, CUDA version...): live, or from a recording."""

    @property
    def facts(self) -> Mapping[str, Any]: ...


@runtime_checkable
class TemplateBound(Protocol):
    """Measures one template (``LocalRunner``, ``ReplayRunner``)."""

    template: KernelTemplate


@runtime_checkable
class TemplateDeriving(Protocol):
    """Can make a sibling runner for another template (e.g. the synthetic test runner)."""

    def for_template(self, template: KernelTemplate) -> object: ...
