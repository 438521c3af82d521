"""The templater's working state: edits, parameters, constraints, launch rules, findings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource, KernelSignature
from workbench.templater.analysis import KernelFacts
from workbench.templater.records import Finding, LiftedParameter
from workbench.templater.rewrite import Rewriter

# Bytes per element of the argument dtypes cuda_source reports ("T" is the folder's dtype).
_ARG_BYTES = {"f32": 4, "fp16": 2, "bf16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1, "i8": 1, "u8": 1,
              "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8}


class Plan:
    """Mutable state of one templating pass (one kernel of one source)."""

    def __init__(self, source: CudaSource, kernel: KernelSignature, *, grid: list[str],
                 block: list[str], scalars: Mapping[str, str]) -> None:
        self.source = source
        self.kernel = kernel
        self.body: Node = source.body(kernel)
        self.facts = KernelFacts(self.body)
        self.rw = Rewriter(source.data)
        self.grid = list(grid)
        self.block = list(block)
        self.scalars = dict(scalars)  # kernel scalar parameter -> shape expression
        self.params: dict[str, LiftedParameter] = {}
        self.constraints: list[str] = []
        self.findings: list[Finding] = []
        self.helpers: list[str] = []
        self.launch_bounds: str | None = None  # expression for __launch_bounds__

    def add_param(self, name: str, spec: dict[str, Any], origin: str) -> None:
        self.params[name] = LiftedParameter(name, spec, f"{self.source.file}:{origin}")

    def constrain(self, text: str) -> None:
        if text not in self.constraints:
            self.constraints.append(text)

    def note(self, transform: str, applied: bool, reason: str, node: Node | None = None) -> None:
        self.findings.append(Finding(transform, applied, reason,
                                     0 if node is None else node.start_point.row + 1))

    def helper(self, text: str) -> None:
        if text not in self.helpers:
            self.helpers.append(text)

    def elem_bytes(self, pointer: str) -> str | None:
        """Bytes per element of a pointer parameter (``elem_bytes`` for the element dtype)."""
        try:
            p = self.kernel.param(pointer)
        except KeyError:
            return None
        if p.dtype == "T":
            return "elem_bytes"
        if p.dtype is None or p.dtype not in _ARG_BYTES:
            return None
        return str(_ARG_BYTES[p.dtype])

    def pointer(self, name: str) -> bool:
        try:
            return self.kernel.param(name).is_pointer
        except KeyError:
            return False

    def uses(self, name: str) -> list[Node]:
        return [n for n in self.source.walk(self.body)
                if n.type == "identifier" and (n.text or b"").decode() == name]
