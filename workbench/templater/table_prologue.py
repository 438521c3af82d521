"""A table the block stages in ``__shared__`` memory before the items (issue 28, set 20's
crspline_rotmean: 64 spline knots copied from global memory by the block, then a barrier).

Items with independent state (:mod:`.ilp`) give a thread several items after the statement
that places its item; the statements before it run once a thread, as written. A block that
first fills a ``__shared__`` table (``for (j = threadIdx.x; j < 64; j += blockDim.x)
knots[j] = table[j];``) and meets at ``__syncthreads();`` does that once a thread too, before
any item: the items only read the table afterwards, so they may share it whatever their
count, and every thread still reaches the one barrier once.

Read so where (else :func:`staged_tables` gives None and the items refuse the shared memory):
every ``__syncthreads();`` of the kernel is a top-level statement before the item's place
(no other barrier); every write to a ``__shared__`` array is in a statement before the last
of them; after it each ``__shared__`` name is only read, as ``name[..]``, or names the whole
value of a pointer local declared once and never assigned (``const float* k = knots;``, a
helper's parameter once written into its call), itself only read so, or is an argument of a
call of a function the file defines once whose parameter there its body only reads as
``p[..]`` (no pointer to it escapes otherwise).
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.core.cuda_source import function_definitions
from workbench.templater.analysis import calls, is_barrier, strip, text, tree_root, walk
from workbench.templater.inline_bind import callee_name, declarator_name
from workbench.templater.item_state import write_target
from workbench.templater.plan import Plan

_BARRIER = "__syncthreads"


def staged_tables(plan: Plan, before: list[Node], after: list[Node]) -> frozenset[str] | None:
    """The ``__shared__`` arrays the statements ``before`` the item's place stage for the
    statements ``after`` it to read (see the module doc); None where there are none or the
    kernel shares memory otherwise."""
    shared = frozenset(d.name for d in plan.facts.defs.values() if d.is_shared)
    barriers = [k for k, s in enumerate(before) if is_barrier(s)]
    if not shared or not barriers:
        return None
    every = [n for n in walk(plan.body) if n.type == "call_expression" and
             text(n.child_by_field_name("function")).startswith(_BARRIER)]
    if len(every) != len(barriers) or any(c.startswith(_BARRIER) and c != _BARRIER
                                          for c in calls(plan.body)):
        return None  # a barrier inside a statement, after the place, or another kind
    last = barriers[-1]
    tables = set(shared)  # and the pointer locals bound to them (declared before any use)
    for stmt in [*before[last + 1:], *after]:
        for n in walk(stmt):
            if n.type in ("assignment_expression", "update_expression") and \
                    _root(write_target(n)) in tables:
                return None
            if n.type == "identifier" and text(n) in tables and not _read_element(n) and \
                    not _read_by_callee(plan, n):
                alias = _alias(plan, n)
                if alias is None:
                    return None
                tables.add(alias)
    return shared


def _read_by_callee(plan: Plan, name: Node) -> bool:
    """``name`` is an argument of a call of a function the file defines once whose pointer
    parameter there its body only reads as ``p[..]`` (``spline_at(knots, t)`` of
    ``float spline_at(const float* k, float t) { .. k[seg] .. }``)."""
    args = name.parent
    call = args.parent if args is not None and args.type == "argument_list" else None
    if args is None or call is None or call.type != "call_expression":
        return False
    callee = callee_name(call)
    found = [fn for f, fn in function_definitions(tree_root(call)) if f == callee]
    if len(found) != 1:
        return False
    declarator = next((d for d in walk(found[0]) if d.type == "function_declarator"), None)
    plist = declarator.child_by_field_name("parameters") if declarator is not None else None
    params = [c for c in plist.named_children if c.type != "comment"] if plist else []
    values = [c for c in args.named_children if c.type != "comment"]
    k = next((i for i, a in enumerate(values) if a == name), None)
    d = params[k].child_by_field_name("declarator") if k is not None and \
        len(values) == len(params) else None
    param = declarator_name(d) if d is not None and d.type == "pointer_declarator" else None
    body = found[0].child_by_field_name("body")
    if param is None or body is None:
        return False
    for n in walk(body):
        if n.type in ("assignment_expression", "update_expression") and \
                _root(write_target(n)) == text(param):
            return False
        if n.type == "identifier" and text(n) == text(param) and not _read_element(n):
            return False
    return True


def _alias(plan: Plan, name: Node) -> str | None:
    """The pointer local whose declaration's whole value is ``name`` (``T* p = name;``),
    declared once and never assigned; None otherwise."""
    init = name.parent
    while init is not None and init.type == "parenthesized_expression":
        init = init.parent
    value = init.child_by_field_name("value") if init is not None and \
        init.type == "init_declarator" else None
    declarator = init.child_by_field_name("declarator") if init is not None and \
        value is not None and strip(value) == name else None
    found = declarator_name(declarator) if declarator is not None and \
        declarator.type == "pointer_declarator" else None
    alias = text(found) if found is not None else None
    d = plan.facts.defs.get(alias) if alias is not None else None
    return alias if d is not None and d.is_pointer and not d.assigned and not d.is_shared \
        else None


def prologue_write(stmt: Node, write: Node, staged: frozenset[str] | None) -> bool:
    """Whether ``write`` (an assignment or update in the statement ``stmt`` before the
    item's place) fills a staged table or changes a local ``stmt`` itself declares (the
    fill loop's counter)."""
    if not staged:
        return False
    root = _root(write_target(write))
    own = {text(d) for n in walk(stmt) if n.type == "init_declarator"
           and (d := n.child_by_field_name("declarator")) is not None
           and d.type == "identifier"}
    return root is not None and (root in staged or root in own)


def _root(target: Node | None) -> str | None:
    while target is not None and target.type in ("subscript_expression",
                                                 "parenthesized_expression",
                                                 "field_expression"):
        target = target.named_children[0] if target.named_children else None
    return text(target) if target is not None and target.type == "identifier" else None


def _read_element(name: Node) -> bool:
    """``name`` is the array of an element read (``knots[c]``, not ``&knots[c]``)."""
    parent = name.parent
    if parent is None or parent.type != "subscript_expression" or \
            parent.child_by_field_name("argument") != name:
        return False
    up = parent.parent
    return up is None or not (up.type == "pointer_expression" and
                              text(up.child_by_field_name("operator")) == "&")
