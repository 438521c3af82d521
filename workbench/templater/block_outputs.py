"""Outputs a block writes once, whatever its size (:mod:`.block`'s lift refuses on them).

A reduction to partials stores one element a block (``partial[blockIdx.x] = s[0];``): the
number of partials is the number of blocks, which a grid rule ``ceil_div(n, 256)`` ties to
the block size. Another block size then writes another count of partials, each a sum over
another range of the input: the array as the kernel folder sizes it (one a 256 elements) is
overrun or left short, and its values differ from the kernel as written at every shape. The
lift of that block dimension is refused where such a store exists (a store into a kernel
pointer whose index reads the block's index along the dimension, and no thread index, also
through the locals it is built from).
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import builtin, text, walk
from workbench.templater.plan import Plan


def per_block_store(plan: Plan, dim: str) -> Node | None:
    """The first store into a kernel pointer at an index that reads ``blockIdx.dim`` and no
    thread index (through locals too), or None."""
    pointers = {p.name for p in plan.kernel.pointer_params}
    for n in walk(plan.body):
        target = n.child_by_field_name("left") if n.type == "assignment_expression" else None
        if target is None or target.type != "subscript_expression" or \
                text(target.child_by_field_name("argument")) not in pointers:
            continue
        read = _builtins(plan, target.child_by_field_name("indices") or target, 0)
        if f"blockIdx.{dim}" in read and not any(r.startswith("threadIdx.") for r in read):
            return n
    return None


def _builtins(plan: Plan, node: Node, depth: int) -> set[str]:
    """``blockIdx.d`` / ``threadIdx.d`` that ``node`` reads, following locals' first values
    (a local assigned again counts as reading the thread: its value is not followed)."""
    out: set[str] = set()
    for m in walk(node):
        for name in ("blockIdx", "threadIdx"):
            d = builtin(m, name)
            if d is not None:
                out.add(f"{name}.{d}")
        found = plan.facts.defs.get(text(m)) if m.type == "identifier" else None
        if found is None:
            continue
        if found.assigned or found.value is None or depth > 8:
            out.add("threadIdx.?")
        else:
            out |= _builtins(plan, found.value, depth + 1)
    return out
