"""Lane loops over an item's segment: ``for (j = begin + lane; j < end; j += 32)``.

The warp-per-row family (:mod:`.warp`) models lane loops that start at the lane; a CSR row, a
segment of a segmented sum or a row walked from its own pointer starts at an offset the item
reads (``row_ptr[row]``). Such a loop is a lane loop when the offset is the same for every
lane of the item: then, for any LANES, the item's lanes ``l`` take ``base + l, base + l +
LANES, ...`` and together cover ``base .. end`` once each, as the warp as written does (only
the order of a reduction's terms changes with LANES, as in every lane loop).

The offset is shown item-uniform on the parse: it is built only from literals, named
constants, kernel parameters the body never assigns, the item itself and locals defined once
and never assigned whose values are item-uniform in turn, through arithmetic, casts,
subscripts (a load at an item-uniform address reads one value for every lane) and element
addresses (``&values[offsets[seg]]``, a row pointer). Calls (a
shuffle's result differs per lane), ``threadIdx`` and anything else are refused with the line.

Practice of the family (CSR-vector sparse kernels, e.g. CUSP's ``spmv_csr_vector`` and
Bell & Garland's 2008 report): the threads per row are chosen from 2 to 32 by the mean row
length, since a warp on a row of a few nonzeros leaves most lanes idle; :data:`SEGMENT_LANES`
is that range. Segment loops are vectorized by peeling to their run-time alignment
(:mod:`.warp_seg_vec`), not by the family's VEC, and not kept in registers
(:mod:`.warp_regs` models rows that start at the lane).
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    declared_name,
    identifiers,
    int_value,
    strip,
    text,
    walk,
    write_target,
)
from workbench.templater.plan import Plan
from workbench.templater.vector import Illegal

#: The lanes an item may take when its lane loops walk segments (see the module doc).
SEGMENT_LANES_MIN = 2

_UNIFORM_NODES = frozenset({"identifier", "number_literal", "binary_expression",
                            "parenthesized_expression", "subscript_expression",
                            "cast_expression", "type_descriptor", "primitive_type",
                            "sized_type_specifier", "type_identifier", "unary_expression",
                            "abstract_pointer_declarator", "type_qualifier",
                            "conditional_expression", "subscript_argument_list"})
_SAFE_UNARY = ("-", "+", "~", "!")


def segment_lane(plan: Plan, loop: Node, start: Node, is_lane: object,
                 item: str | None) -> Node | None:
    """The lane node of ``loop``'s start ``base + lane`` (either order) whose ``base`` is the
    same for every lane of the item; None when ``start`` is no such sum. Raises Illegal, with
    the offending node, when it is a lane plus something not shown item-uniform, or when the
    loop's bound (``j < bound``) is not shown item-uniform (each lane would stop elsewhere)."""
    parts = binary(start)
    if parts is None or parts[1] != "+":
        return None
    left, _op, right = parts
    lane_side = [n for n in (left, right) if is_lane(n)]  # type: ignore[operator]
    if len(lane_side) != 1:
        return None
    lane = strip(lane_side[0])
    base = right if lane_side[0] is left else left
    why = _not_uniform(plan, base, item, set())
    if why is not None:
        raise Illegal(f"the lane loop starts at `{text(start)[:50]}`: `{text(why)[:40]}` may "
                      "differ between the lanes of an item (only offsets the item reads are "
                      "modelled)", why)
    cond = loop.child_by_field_name("condition")
    var, _d, _v = declared_name(loop.child_by_field_name("initializer") or loop)
    parts = binary(cond) if cond is not None else None
    if parts is None or parts[1] not in ("<", "<=") or text(strip(parts[0])) != var:
        raise Illegal(f"the segment loop's condition `{text(cond)[:40]}` is not `{var} < "
                      "bound`", cond or loop)
    why = _not_uniform(plan, parts[2], item, set())
    if why is not None:
        raise Illegal(f"the segment loop's bound `{text(parts[2])[:40]}`: `{text(why)[:40]}` "
                      "may differ between the lanes of an item", why)
    return lane


def _assigned(plan: Plan) -> set[str]:
    """Names the kernel body assigns or updates (a parameter among them is not uniform)."""
    return {text(t) for n in walk(plan.body)
            if (t := write_target(n)) is not None and t.type == "identifier"}


def _not_uniform(plan: Plan, node: Node, item: str | None, seen: set[str]) -> Node | None:
    """The first node of ``node`` not shown item-uniform, or None."""
    for n in walk(node):
        if n.is_named and n.type not in _UNIFORM_NODES and not _element_address(n):
            return n
        if n.type == "unary_expression" and not text(n).startswith(_SAFE_UNARY):
            return n  # a dereference or an address: not modelled
    for ident in identifiers(node):
        name = text(ident)
        if ident.parent is not None and ident.parent.type == "type_descriptor":
            continue
        if name == item or int_value(ident) is not None:
            continue
        if _is_param(plan, name):
            if name in _assigned(plan):
                return ident
            continue
        d = plan.facts.defs.get(name)
        if d is None or d.value is None or d.assigned or d.is_shared or name in seen:
            return ident
        if _not_uniform(plan, d.value, item, seen | {name}) is not None:
            return ident
    return None


def _element_address(node: Node) -> bool:
    """``&a[k]``: the address of an element, item-uniform where ``a`` and ``k`` are (a row
    pointer ``&values[offsets[seg]]``); a dereference ``*p`` is not."""
    arg = node.child_by_field_name("argument")
    return node.type == "pointer_expression" and arg is not None and \
        text(node.child_by_field_name("operator")) == "&" and \
        strip(arg).type == "subscript_expression"


def _is_param(plan: Plan, name: str) -> bool:
    try:
        plan.kernel.param(name)
    except KeyError:
        return False
    return name not in plan.facts.defs
