"""The offline templater (no LLM): a kernel as written -> a parameterized template.

:mod:`.semantic` is the templater: a dependency-aware refactoring on the tree-sitter parse
of the baseline (block size with every use it governs, vector width, items per thread,
blocks per row, the tile family), each transform applied only where legal and otherwise
reported with its reason. :mod:`.legacy` lifts constants a kernel already names
(``constexpr int kThreads``, ``16 / ELEM_BYTES``, ``#pragma unroll N``); its result is used
where it lifts more than the semantic pass, which is the case for hand-tuned kernels such
as the sample kernels.
"""

from workbench.llm.templater.legacy import code_mask, code_sub, lift_source, unified_diff
from workbench.llm.templater.offline import offline_template
from workbench.llm.templater.records import (
    Finding,
    LiftedParameter,
    LiftedSource,
    TemplaterResult,
)
from workbench.llm.templater.semantic import lift_kernel

__all__ = [
    "Finding",
    "LiftedParameter",
    "LiftedSource",
    "TemplaterResult",
    "code_mask",
    "code_sub",
    "lift_kernel",
    "lift_source",
    "offline_template",
    "unified_diff",
]
