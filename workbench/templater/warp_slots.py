"""Per-item shared slots of a warp-per-item kernel (:mod:`.warp`): ``__shared__ T s[F]``
indexed only by the block's warp index ``w`` (``s[w]``), with F the items per block.

Each item then owns one slot (a lane posts a row's value, a barrier, every lane of the item
reads it back), so with LANES lanes an item the slot stays the item's own when ``w`` becomes
the item's index in the block (``threadIdx.x / LANES``) and the array grows to the block's
items (``F`` -> ``W * (32 / LANES)``). Modelled only when every use of the array is ``s[w]``
(no address taken, no other subscript), every use of ``w`` beyond the item is such a
subscript, and every ``__syncthreads()`` is a statement of the kernel's body itself (outside
any branch or loop) with no ``return`` before it: every thread of the block reaches each
barrier at every config, as it does as written.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import line, strip, text, walk
from workbench.templater.apron_loads import base_array, indices
from workbench.templater.block import _shared_arrays
from workbench.templater.plan import Plan
from workbench.templater.vector import Illegal

BARRIER = "__syncthreads"


def warp_slots(plan: Plan, warp: str, uses: list[Node]) -> tuple[Node, ...]:
    """The size nodes of the shared arrays the warp index ``warp`` subscripts in ``uses``
    (its uses beyond the item index); raises Illegal (naming the use) for any other use."""
    arrays = {name: extents for name, _decl, extents in _shared_arrays(plan)}
    slots: dict[str, Node] = {}
    for u in uses:
        sub = _subscript_of(u)
        name = base_array(sub) if sub is not None else None
        if sub is None or name not in arrays or len(arrays[name]) != 1:
            raise Illegal(f"the warp index `{warp}` is used beyond the item index, in "
                          f"`{text(u.parent)[:50]}` (only a one-slot-a-warp __shared__ array "
                          f"`s[{warp}]` is modelled)", u)
        slots[name] = arrays[name][0]
    for name in slots:
        for n in plan.uses(name):
            if _declared(n):
                continue
            sub = _subscript_of_array(n)
            index = indices(sub) if sub is not None else []
            if len(index) != 1 or text(strip(index[0])) != warp:
                raise Illegal(f"the shared array `{name}` is used as `{text(n.parent)[:50]}` "
                              f"(only `{name}[{warp}]`, one slot an item, is modelled)", n)
    return tuple(slots.values())


def barrier_problem(plan: Plan) -> str | None:
    """Why a ``__syncthreads()`` of the kernel might not be reached by every thread, or
    None: each must be a statement of the body itself with no ``return`` before it."""
    returns = [n.start_byte for n in walk(plan.body) if n.type == "return_statement"]
    for n in walk(plan.body):
        if n.type != "call_expression" or \
                text(n.child_by_field_name("function")) != BARRIER:
            continue
        statement = n.parent
        if statement is None or statement.type != "expression_statement" or \
                statement.parent != plan.body:
            return f"line {line(n)}: a barrier inside a branch or loop"
        if any(r < n.start_byte for r in returns):
            return f"line {line(n)}: a barrier after a return"
    return None


def _subscript_of(index: Node) -> Node | None:
    """The ``a[index]`` whose whole (parenthesized) subscript is ``index``, else None."""
    node = index
    while node.parent is not None and node.parent.type == "parenthesized_expression":
        node = node.parent
    up = node.parent
    if up is not None and up.type == "subscript_argument_list":
        up = up.parent
    if up is None or up.type != "subscript_expression":
        return None
    found = indices(up)
    return up if len(found) == 1 and strip(found[0]) == strip(node) else None


def _subscript_of_array(name: Node) -> Node | None:
    up = name.parent
    return up if up is not None and up.type == "subscript_expression" and \
        up.child_by_field_name("argument") == name else None


def _declared(n: Node) -> bool:
    up = n.parent
    while up is not None and up.type == "array_declarator":
        up = up.parent
    return up is not None and up.type == "declaration" and n.parent is not None and \
        n.parent.type == "array_declarator"
