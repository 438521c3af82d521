"""Loads that cannot fault: an element of a file-scope ``__constant__`` / ``__device__``
array of constant size, at an index the analysis bounds inside the array.

BRANCHLESS (:mod:`.ifconv`) runs the side of an ``if`` its condition did not take, and
ITEMS_PER_THREAD (:mod:`.item_state`) runs an item's statements after the item is done; a
load there is legal when it is made unconditionally anyway, or when it is in bounds for
every value it can take. Bounds are interval arithmetic on the parse: integer literals and
macros, and the counters of the ``for`` loops around the load that have constant bounds
(``for (int s = A; s < B; ++s)``, the counter never assigned in the body), through ``+``,
``-`` and ``*``. The array is named directly (``table[3 * j + 2]``) or through a local
pointer declared once from it and never reassigned (``const float* e = &table[3 * j];``
or ``= table + 3 * j``; then ``e[2]``).
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from workbench.templater.analysis import binary, declared_name, int_value, strip, text
from workbench.templater.item_state import assigned_names, trip_count
from workbench.templater.plan import Plan

Interval = tuple[int, int]


def in_bounds(plan: Plan, load: Node) -> bool:
    """``load`` (a subscript) reads a file-scope device array at an index that is inside
    it for every value the loops around it give its counters."""
    load = strip(load)
    if load.type != "subscript_expression":
        return False
    argument = load.child_by_field_name("argument")
    index = load.child_by_field_name("indices")
    if index is None or argument is None or strip(argument).type != "identifier":
        return False
    array = strip(argument)
    index = strip(index.named_children[0]) if index.type == "subscript_argument_list" and \
        len(index.named_children) == 1 else index
    counters = _counters(load)
    at = interval(index, counters)
    name = text(array)
    size = _device_array_sizes(plan).get(name)
    if size is None:  # a local pointer into one: base + index
        based = _pointer_base(plan, name)
        if based is None:
            return False
        name, base = based
        size = _device_array_sizes(plan).get(name)
        offset = interval(base, counters)
        if offset is None or at is None:
            return False
        at = (at[0] + offset[0], at[1] + offset[1])
    return size is not None and at is not None and at[0] >= 0 and at[1] < size


def _device_array_sizes(plan: Plan) -> dict[str, int]:
    """File-scope ``__constant__`` / ``__device__`` one-dimensional arrays of constant size."""
    out: dict[str, int] = {}
    for decl in plan.source.tree.root_node.named_children:
        if decl.type != "declaration" or not any(
                text(c) in ("__constant__", "__device__") for c in decl.children):
            continue
        for each in decl.children_by_field_name("declarator"):
            d = each.child_by_field_name("declarator") if each.type == "init_declarator" \
                else each
            if d is None or d.type != "array_declarator":
                continue
            inner = d.child_by_field_name("declarator")
            size = interval(d.child_by_field_name("size"), {})
            if inner is not None and inner.type == "identifier" and size is not None and \
                    size[0] == size[1]:
                out[text(inner)] = size[0]
    return out


def _pointer_base(plan: Plan, name: str) -> tuple[str, Node] | None:
    """(array, offset) of a local pointer declared once as ``&A[off]`` or ``A + off`` and
    never reassigned."""
    local = plan.facts.defs.get(name)
    if local is None or local.assigned or not local.is_pointer:
        return None
    if local.value is None:
        return None
    value = strip(local.value)
    if value.type == "pointer_expression" and text(
            value.child_by_field_name("operator")) == "&":
        target = value.child_by_field_name("argument")
        inner = strip(target) if target is not None else value
        whole = inner.child_by_field_name("argument")
        if inner.type == "subscript_expression" and whole is not None:
            arr = strip(whole)
            idx = inner.child_by_field_name("indices")
            if idx is not None and idx.type == "subscript_argument_list" and \
                    len(idx.named_children) == 1:
                idx = idx.named_children[0]
            if arr.type == "identifier" and idx is not None:
                return text(arr), idx
        return None
    parts = binary(value)
    if parts is not None and parts[1] == "+":
        for arr, off in ((parts[0], parts[2]), (parts[2], parts[0])):
            if strip(arr).type == "identifier" and \
                    text(strip(arr)) in _device_array_sizes(plan):
                return text(strip(arr)), off
    return None


def _counters(node: Node) -> dict[str, Interval]:
    """The counters of the ``for`` loops around ``node`` with constant bounds, never
    assigned in their bodies -> the values they take."""
    out: dict[str, Interval] = {}
    up = node.parent
    while up is not None:
        if up.type == "for_statement" and (trips := trip_count(up)) is not None and trips > 0:
            init = up.child_by_field_name("initializer")
            body = up.child_by_field_name("body")
            var, start = "", None
            if init is not None and init.type == "declaration":
                var, _d, value = declared_name(init)
                start = int_value(value)
            if var and start is not None and body is not None and \
                    var not in assigned_names(body) and var not in out:
                out[var] = (start, start + trips - 1)
        up = up.parent
    return out


def interval(node: Node | None, counters: dict[str, Interval],
             value_of: Callable[[Node], int | None] = int_value) -> Interval | None:
    """The values ``node`` takes over ``counters`` (+ - * of literals and names), None when
    it is anything else. ``value_of`` reads a (sub)expression that is one number (literals;
    :func:`.const_lanes.const_eval` reads file constants too)."""
    if node is None:
        return None
    node = strip(node)
    value = value_of(node)
    if value is not None:
        return (value, value)
    if node.type == "identifier":
        return counters.get(text(node))
    parts = binary(node)
    if parts is None or parts[1] not in ("+", "-", "*"):
        return None
    left = interval(parts[0], counters, value_of)
    right = interval(parts[2], counters, value_of)
    if left is None or right is None:
        return None
    if parts[1] == "+":
        return (left[0] + right[0], left[1] + right[1])
    if parts[1] == "-":
        return (left[0] - right[1], left[1] - right[0])
    ends = [a * b for a in left for b in right]
    return (min(ends), max(ends))

