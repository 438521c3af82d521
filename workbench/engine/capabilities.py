"""What a runner can do beyond the :class:`~workbench.engine.runner.Runner` contract: three
capabilities, each a small ``runtime_checkable`` protocol, so callers ask
``isinstance(runner, Facts)`` instead of probing attributes by name.

- :class:`Facts`: what keys and bounds its measurements (the measuring machine's facts,
  the compiler whose version and flags key the trials, a device copy of the same bytes);
- :class:`ManyDevices`: it measures on several devices (a Dask cluster): the batch that
  keeps them fed, compiles queued ahead for the next batch, and one pinned device where
  times that are compared with each other are taken (a confirmation);
- :class:`TemplateBound`: it measures one template, can measure another from now on
  (``tune --widen``) and can make a sibling runner for another template (the agent).

Measuring again under a cache condition is the contract's own
(``measure(candidates, condition=...)``); a runner that cannot raises
:class:`~workbench.engine.conditions.ConditionUnavailable`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from workbench.core.records import Candidate
from workbench.core.template import KernelTemplate
from workbench.engine.bench import CopyTiming

__all__ = ["Facts", "ManyDevices", "TemplateBound"]


@runtime_checkable
class Facts(Protocol):
    """Knows the measuring machine and what keys its trials.

    ``facts``: driver, CUDA version... (live, or a recording's); ``compiler``: whose
    ``version`` and ``flags`` key the trials (None: it compiles nothing);
    ``copy_timing``: a device-to-device copy of a problem's bytes, the ceiling (None: it
    has no device to copy on)."""

    @property
    def facts(self) -> Mapping[str, Any]: ...

    @property
    def compiler(self) -> Any: ...

    def copy_timing(self, shape: str, dtype: str) -> CopyTiming | None: ...


@runtime_checkable
class ManyDevices(Protocol):
    """Measures on several devices (a Dask cluster).

    ``batch_size`` candidates per search batch keep every device fed (the batch follows
    the GPU count); ``compile_ahead``, called right after ``measure``, queues the next
    batch's compiles (bounded) so they overlap this batch's measurements; ``one_device()``
    is the same runner pinned to one device, where a confirmation measures."""

    @property
    def batch_size(self) -> int: ...

    def compile_ahead(self, candidates: Sequence[Candidate]) -> int: ...

    def one_device(self) -> Any: ...


@runtime_checkable
class TemplateBound(Protocol):
    """Measures one template (``template``): ``use_template`` measures another from now on
    (same source, wider ranges: ``tune --widen``); ``for_template`` is a sibling runner for
    another template (the caller closes it)."""

    template: KernelTemplate

    def use_template(self, template: KernelTemplate) -> None: ...

    def for_template(self, template: KernelTemplate) -> Any: ...
