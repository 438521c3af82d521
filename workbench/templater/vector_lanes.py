"""A vector lane's own element where the body reads it as a value: ``var + wb_v``, with one
division a vector where the body decomposes it.

A per-element body often splits its flat index into coordinates (``ox = idx % OW;
oy = (idx / OW) % OH; ...``). Vectorized, lane ``k`` evaluates ``(var + k) / E`` and
``(var + k) % E``: VEC divisions by a run-time ``E`` where the kernel as written did one an
element, so a gather (a pixel shuffle, a permute, an NCHW <-> NHWC copy) stays bound by its
integer divides. Where ``var`` is not negative and ``0 <= k < VEC <= E``, lane ``k``'s
quotient is ``var / E`` plus a carry, ``var % E + k >= E``, and its remainder
``var % E + k`` less ``E`` on a carry: ``var / E`` and ``var % E`` are the same expression in
every lane, so the compiler makes them once a vector. ``var`` is the flat region's index
(``blockIdx.x * .. + threadIdx.x`` as written: not negative); ``E`` must be a size expression
(kernel scalars never written, integer macros, locals never reassigned: the same in every
lane) that names a run-time size (a literal divisor is the compiler's), and the template is constrained to ``E >= VEC`` at each shape.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from workbench.templater.analysis import binary, identifiers, text, walk, writer
from workbench.templater.plan import Plan

LANE_DIVMOD = """\
// lane k of a vector starting at base, 0 <= base and 0 <= k < VEC <= e (the template's
// constraint): (base + k) / e and (base + k) % e from base / e and base % e, which every lane
// of the vector shares, and a carry
template <typename B, typename E>
__device__ __forceinline__ auto wb_lane_div(B base, int k, E e) -> decltype((base + k) / e) {
  return (decltype((base + k) / e))(base / e + (base % e + k >= e ? 1 : 0));
}
template <typename B, typename E>
__device__ __forceinline__ auto wb_lane_mod(B base, int k, E e) -> decltype((base + k) % e) {
  return (decltype((base + k) % e))(base % e + k - (base % e + k >= e ? e : 0));
}
"""


def lane_values(plan: Plan, values: list[Node], var: str, *, divide: bool) -> list[str]:
    """Rewrite each read of ``var`` in ``values`` as its lane's element (``var + wb_v``); with
    ``divide`` (``var`` is never negative), a division or remainder by a size expression
    through the shared quotient. Returns the constraints that keeps correct."""
    from workbench.templater.vector import size_expression  # vector imports this module

    constraints: list[str] = []
    written: set[str] | None = None
    for n in values:
        top = n
        while top.parent is not None and top.parent.type == "parenthesized_expression":
            top = top.parent
        op = top.parent
        parts = binary(op) if op is not None and op.type == "binary_expression" else None
        if divide and op is not None and parts is not None and parts[1] in ("/", "%") and \
                _unparenthesized(parts[0]) == n:
            if written is None:
                written = _written_scalars(plan)
            size = size_expression(plan, parts[2])
            # a divisor known at compile time is the compiler's (shifts, a multiply)
            if size is not None and re.search(r"[A-Za-z_]", size) and \
                    not any(text(i) in written for i in identifiers(parts[2])):
                fn = "wb_lane_div" if parts[1] == "/" else "wb_lane_mod"
                plan.rw.insert(op.start_byte, f"{fn}(")
                plan.rw.replace_span(parts[0].start_byte, parts[2].start_byte,
                                     f"{var}, wb_v, (")
                plan.rw.insert(parts[2].end_byte, "))")
                plan.helper(LANE_DIVMOD)
                if f"{size} >= VEC" not in constraints:
                    constraints.append(f"{size} >= VEC")
                continue
        plan.rw.replace(n, f"({var} + wb_v)")
    return constraints


def _written_scalars(plan: Plan) -> set[str]:
    scalars = {p.name for p in plan.kernel.params if not p.is_pointer}
    return {text(n) for n in walk(plan.body) if n.type == "identifier" and text(n) in scalars
            and writer(n) is not None}


def _unparenthesized(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node
