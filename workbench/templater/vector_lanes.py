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
from collections.abc import Callable

from tree_sitter import Node

from workbench.templater.analysis import binary, identifiers, text, unparenthesized
from workbench.templater.inline_bind import written
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Rewriter
from workbench.templater.vector_access import size_expression

LANE_DIVMOD = """\
// lane k of a vector starting at base, 0 <= base and 0 <= k <= e (the template's
// constraints): (base + k) / e and (base + k) % e from base / e and base % e, which every lane
// of the vector shares, and a carry
template <typename B, typename E>
__device__ __forceinline__ int wb_lane_carry(B base, int k, E e) {
  return base % e + k >= e ? 1 : 0;
}
template <typename B, typename E>
__device__ __forceinline__ auto wb_lane_div(B base, int k, E e) -> decltype((base + k) / e) {
  return (decltype((base + k) / e))(base / e + wb_lane_carry(base, k, e));
}
template <typename B, typename E>
__device__ __forceinline__ auto wb_lane_mod(B base, int k, E e) -> decltype((base + k) % e) {
  return (decltype((base + k) % e))(base % e + k - (wb_lane_carry(base, k, e) ? e : 0));
}
"""


def lane_values(plan: Plan, values: list[Node], var: str, *, divide: bool) -> list[str]:
    """Rewrite each read of ``var`` in ``values`` as its lane's element (``var + wb_v``); with
    ``divide`` (``var`` is never negative), a division or remainder by a size expression
    through the shared quotient, and a quotient's own division or remainder
    (``(idx / W) % H``) through its shared quotient and the lane's carry. Returns the
    constraints that keep those exact."""
    constraints: list[str] = []
    scalars = [p.name for p in plan.kernel.params if not p.is_pointer]
    changed = {name for name in scalars if written(plan.body, name, address=False)} \
        if divide else set()
    for n in values:
        op = _enclosing(n)
        parts = binary(op) if op is not None and op.type == "binary_expression" else None
        size = None
        if divide and op is not None and parts is not None and parts[1] in ("/", "%") and \
                unparenthesized(parts[0]) == n:
            size = _divisor(plan, parts[2], changed, run_time=True)
        if op is None or parts is None or size is None:
            plan.rw.replace(n, f"({var} + wb_v)")
            continue
        plan.helper(LANE_DIVMOD)
        if f"{size} >= VEC" not in constraints:
            constraints.append(f"{size} >= VEC")
        outer = _enclosing(op)
        outer_parts = binary(outer) if outer is not None and \
            outer.type == "binary_expression" else None
        if parts[1] == "/" and outer is not None and outer_parts is not None and \
                outer_parts[1] in ("/", "%") and unparenthesized(outer_parts[0]) == op:
            size2 = _divisor(plan, outer_parts[2], changed, run_time=False)
            if size2 is not None:
                if not size2.isdigit() and f"{size2} >= 1" not in constraints:
                    constraints.append(f"{size2} >= 1")  # the carry (0 or 1) is at most it
                fn = "wb_lane_div" if outer_parts[1] == "/" else "wb_lane_mod"
                plan.rw.replace_span(outer.start_byte, outer.end_byte,
                                     make=_carried(fn, var, parts[2], outer_parts[2]))
                continue
        fn = "wb_lane_div" if parts[1] == "/" else "wb_lane_mod"
        plan.rw.insert(op.start_byte, f"{fn}(")
        plan.rw.replace_span(parts[0].start_byte, parts[2].start_byte, f"{var}, wb_v, (")
        plan.rw.insert(parts[2].end_byte, "))")
    return constraints


def _carried(fn: str, var: str, e1: Node, e2: Node) -> Callable[[Rewriter], str]:
    """``fn`` of ``var / e1`` by ``e2`` for the lane: the shared quotient and its carry."""
    def make(rw: Rewriter) -> str:
        return (f"{fn}({var} / ({rw.text(e1)}), wb_lane_carry({var}, wb_v, ({rw.text(e1)})), "
                f"({rw.text(e2)}))")
    return make


def _enclosing(node: Node) -> Node | None:
    """The expression ``node`` is an operand of, through parentheses."""
    top = node
    while top.parent is not None and top.parent.type == "parenthesized_expression":
        top = top.parent
    return top.parent


def _divisor(plan: Plan, node: Node, changed: set[str], *, run_time: bool) -> str | None:
    """``node`` as a size expression that is the same in every lane of a thread's vector, or
    None; with ``run_time``, only one naming a run-time size (a divisor known at compile
    time is the compiler's: shifts, a multiply), else also a positive literal."""
    size = size_expression(plan, node)
    if size is None or any(text(i) in changed for i in identifiers(node)):
        return None
    if re.search(r"[A-Za-z_]", size):
        return size
    return None if run_time or not size.isdigit() or int(size) < 1 else size
