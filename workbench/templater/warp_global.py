"""A warp per item named by the global warp index: ``(blockIdx.x * blockDim.x + threadIdx.x) /
32`` (or ``>> 5``), in place or through a local global thread index.

The block size is then the launch rule's (the kernel reads ``blockDim.x`` only there), and
the warp's item is the global warp index: with ``LANES`` lanes an item, the item is the
global thread index divided by ``LANES`` and the lane the global (or the block's) thread
index modulo ``LANES``, both exact because every block the template launches holds whole
groups (``32 * WARPS_PER_BLOCK`` threads, LANES dividing 32). :func:`find_global_item`
returns what :mod:`.warp` rewrites; uses of the global thread index other than the division
and ``g % 32`` / ``g & 31`` (a lane) are refused with the line.

The item may also be a row loop's variable, ``for (row = START; row < n; row += S)``
(:func:`row_loop`), assigned nowhere else: here S must be the grid's warps ``(gridDim.x *
blockDim.x) / 32`` (in place or a local read only there), which becomes the grid's items
``/ LANES``, so every group walks its own rows once whatever LANES is.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    Definition,
    binary,
    builtin,
    factors,
    int_value,
    strip,
    terms,
    text,
    walk,
    write_target,
)
from workbench.templater.plan import Plan
from workbench.templater.vector import Illegal

_DIVIDES = {("/", 32), (">>", 5)}
_LANE_OPS = {("%", 32), ("&", 31)}


@dataclass(frozen=True)
class GridWarps:
    """The grid's warps ``X / 32`` (or ``>> 5``) with X ``gridDim.x * blockDim.x``: a global
    row loop's stride, which becomes the grid's items ``X / LANES``."""

    division: Node
    index: Node


@dataclass(frozen=True)
class GlobalItem:
    """The item ``d = X / 32``: its definition, the division node, X, the local global
    thread index X names (None when X is written in place), and the lanes spelled from it
    (``g % 32`` in place, and the local holding one, if any)."""

    item: Definition
    division: Node
    index: Node
    thread: Definition | None
    lanes: tuple[Node, ...]
    lane_def: Definition | None
    totals: tuple[GridWarps, ...] = ()


def is_global_thread(node: Node) -> bool:
    """``node`` is ``blockIdx.x * blockDim.x + threadIdx.x`` (terms and factors in any
    order)."""
    parts = terms(strip(node))
    if len(parts) != 2 or any(sign < 0 for sign, _t in parts):
        return False
    thread = [t for _s, t in parts if builtin(t, "threadIdx") == "x"]
    if len(thread) != 1:
        return False
    other = next(t for _s, t in parts if t is not thread[0])
    fs = factors(other)
    return len(fs) == 2 and sorted(str(builtin(f, "blockIdx")) + str(builtin(f, "blockDim"))
                                   for f in fs) == ["Nonex", "xNone"]


def _thread_local(plan: Plan, node: Node) -> Definition | None:
    node = strip(node)
    d = plan.facts.defs.get(text(node)) if node.type == "identifier" else None
    if d is None or d.value is None or d.assigned or d.is_pointer or d.is_shared:
        return None
    return d if is_global_thread(d.value) else None


def _split(node: Node | None, ops: set[tuple[str, int]]) -> Node | None:
    """The left operand of ``node`` when it is ``L op k`` with (op, k) in ``ops``."""
    parts = binary(node) if node is not None else None
    if parts is None or (parts[1], int_value(parts[2])) not in ops:
        return None
    return strip(parts[0])


def find_global_item(plan: Plan) -> GlobalItem | None:
    """The item defined as the global warp index, else None; raises Illegal where the global
    thread index is also used in ways the rewrite does not model."""
    for d in plan.facts.defs.values():
        if d.value is None or d.is_pointer or d.is_shared:
            continue
        stride = row_loop(plan, d) if d.assigned else None
        if d.assigned and stride is None:
            continue
        index = _split(strip(d.value), _DIVIDES)
        if index is None:
            continue
        thread = _thread_local(plan, index)
        if thread is None and not is_global_thread(index):
            continue
        totals = _grid_warps(plan, d, stride) if stride is not None else ()
        lanes, lane_def = _lanes(plan, thread, index) if thread is not None else ((), None)
        return GlobalItem(d, strip(d.value), index, thread, lanes, lane_def, totals)
    return None


def _grid_warps(plan: Plan, d: Definition, stride: Node) -> tuple[GridWarps, ...]:
    """The grid's warps a global row loop steps by (in place or through a local read only
    there): each warp then walks its own rows once, as each group of LANES lanes does when
    the stride is the grid's items. Raises Illegal for any other stride."""
    node, local = strip(stride), None
    if node.type == "identifier":
        local = plan.facts.defs.get(text(node))
        if local is None or local.value is None or local.assigned or \
                len([u for u in plan.uses(local.name) if u.parent is None or
                     u.parent.type != "init_declarator"]) != 1:
            raise Illegal(f"the row loop steps by `{text(node)}`, not the grid's warps "
                          "(gridDim.x * blockDim.x) / 32 read only there", d.decl)
        node = strip(local.value)
    index = _split(node, _DIVIDES)
    fs = factors(index) if index is not None else []
    if index is None or sorted(str(builtin(f, "gridDim")) + str(builtin(f, "blockDim"))
                               for f in fs) != ["Nonex", "xNone"]:
        raise Illegal(f"the row loop steps by `{text(stride)}`, not the grid's warps "
                      "(gridDim.x * blockDim.x) / 32", d.decl)
    return (GridWarps(node, index),)


def step_of(update: Node, var: str) -> Node | None:
    """K of an update that adds K to ``var``: ``var += K``, ``var = var + K`` or ``var = K +
    var`` (one meaning, three spellings); None for any other update."""
    update = strip(update)
    if update.type != "assignment_expression" or \
            text(strip(update.child_by_field_name("left") or update)) != var:
        return None
    op, right = text(update.child_by_field_name("operator")), update.child_by_field_name("right")
    if op == "+=":
        return strip(right) if right is not None else None
    parts = binary(right) if op == "=" and right is not None else None
    if parts is None or parts[1] != "+":
        return None
    names = [text(strip(parts[0])), text(strip(parts[2]))]
    if names.count(var) != 1:
        return None
    return strip(parts[2] if names[0] == var else parts[0])


def row_loop(plan: Plan, d: object) -> Node | None:
    """The stride S of a row loop ``for (T row = START; row < n; row += S)`` whose variable
    is ``d`` and is assigned nowhere else (each item walks rows START, START + S, ...), else
    None."""
    decl = d.decl  # type: ignore[attr-defined]
    loop = decl.parent
    if loop is None or loop.type != "for_statement" or \
            loop.child_by_field_name("initializer") != decl:
        return None
    update, cond = loop.child_by_field_name("update"), loop.child_by_field_name("condition")
    name = d.name  # type: ignore[attr-defined]
    step = step_of(update, name) if update is not None else None
    parts = binary(cond) if cond is not None else None
    writes = [w for w in walk(plan.body) if (t := write_target(w)) is not None and
              text(t) == name]
    if step is None or len(writes) != 1 or parts is None or parts[1] != "<" or \
            text(strip(parts[0])) != name:
        return None
    return step



def _lanes(plan: Plan, thread: Definition, index: Node) -> tuple[tuple[Node, ...],
                                                                   Definition | None]:
    """The ``g % 32`` lanes of the global thread index ``g``, and the local holding one;
    every other use of ``g`` is refused."""
    lanes: list[Node] = []
    lane_def = None
    for use in plan.uses(thread.name):
        parent = use.parent
        if parent is not None and parent.type == "init_declarator" and \
                parent.child_by_field_name("declarator") == use:
            continue
        if use.start_byte == index.start_byte:
            continue
        up = use.parent
        while up is not None and up.type == "parenthesized_expression":
            up = up.parent
        if up is None or _split(up, _LANE_OPS) is None:
            raise Illegal(f"the global thread index `{thread.name}` is used in "
                          f"`{text(up)[:50]}` (only its warp, `/ 32`, and its lane, `% 32`, "
                          "are modelled)", use)
        owner = next((d for d in plan.facts.defs.values() if d.value is not None and
                      strip(d.value) == strip(up) and not d.assigned), None)
        if owner is not None:
            lane_def = owner
        else:
            lanes.append(strip(up))
    return tuple(lanes), lane_def
