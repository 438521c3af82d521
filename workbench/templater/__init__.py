"""The offline templater (no LLM): a kernel as written -> a parameterized template.

:mod:`.semantic` is the templater: a dependency-aware refactoring on the tree-sitter parse
of the baseline (block size with every use it governs, vector width, items per thread,
blocks per row, the tile family), each transform applied only where legal and otherwise
reported with its reason; where none of them lifts anything, :mod:`.named` lifts the
constants a hand-tuned kernel already names (``constexpr int kThreads``, ``16 / ELEM_BYTES``,
``#pragma unroll N``), as for the sample kernels. One lifter: ``lift_kernel``.
"""

from workbench.templater.offline import offline_template
from workbench.templater.records import (
    Finding,
    LiftedParameter,
    LiftedSource,
    TemplaterResult,
    unified_diff,
)
from workbench.templater.semantic import lift_kernel

__all__ = [
    "Finding",
    "LiftedParameter",
    "LiftedSource",
    "TemplaterResult",
    "lift_kernel",
    "offline_template",
    "unified_diff",
]
