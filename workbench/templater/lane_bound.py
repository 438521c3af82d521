"""A counted loop's bound under loop-invariant guards: ``for (j = s; live && j < n; j += k)``.

A loop condition that is a conjunction (``&&``, either order, any nesting of parentheses)
of exactly one ``j < n`` (``j`` the counter the header declares) and other conjuncts that
the loop cannot change is the loop ``j < n`` run only where those guards hold: the guards
are evaluated afresh each step, but each step sees the same value, so the loop either runs
as ``j < n`` would or not at all. A guard is loop-invariant here when it names neither the
counter nor any local the loop assigns (:func:`.item_state.assigned_names` over the body
and the header's update), names only kernel parameters and the thread's own locals (not a
``__shared__`` or file-scope variable another thread may store to), reads no memory (no
subscript, no dereference, no ``->``: the body could store to it) and has no side effect
(:func:`.purity.side_effect_free`). A
per-item ``const bool live = row < rows;`` is the usual one: a row past the end still walks
the shuffle tree with its lanes, but loads nothing.

A ``do`` over chunks whose first test is not known (``int c0 = 0; do { .. c0 += 32; } while
(c0 < cols);``) reaches the analysis as ``for (int c0 = 0; c0 == 0 || (c0 < cols); c0 +=
32)`` (:mod:`.loop_forms_open`): the first pass runs whatever the bound. :func:`first_pass_bound`
reads that test, ``v == S || (T)``, as the bound and guards of ``T`` after a first pass: ``S``
the initializer's constant value and the update a constant step above zero that the body does
not repeat (``v += 32``), so ``v`` holds ``S`` on the first pass only and ``v < n`` along the
growing counter turns false once, at most, and stays false. A family that runs the steps in
groups (the loads ahead, :mod:`.warp_ahead`) then tests each step with ``v == S || (T)``: the
first step runs, the others as ``T``.

Families that walk such a loop with their own loops (the warp family's vector lanes,
:mod:`.vector`) keep the guards in their loop's condition; one that cannot (a row kept in
registers, :mod:`.warp_regs`) refuses with the guard named.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    chain,
    declared_name,
    int_expr_value,
    strip,
    text,
    walk,
)
from workbench.templater.item_state import assigned_names
from workbench.templater.plan import Plan
from workbench.templater.purity import side_effect_free
from workbench.templater.warp_global import step_of

#: Expressions that may read memory: a guard holding one may change with the body's stores.
_MEMORY = ("subscript_expression", "pointer_expression", "call_expression")


@dataclass(frozen=True)
class LaneBound:
    """A counted loop's counter, its bound ``n`` of ``var < n`` and the invariant guards
    conjoined with it (empty where the condition is ``var < n`` alone); ``first``: the start
    ``S`` of a test ``var == S || (..)`` whose first pass runs whatever the bound
    (:func:`first_pass_bound`), None for a plain test."""

    var: str
    bound: Node
    guards: tuple[Node, ...]
    first: Node | None = None


def lane_bound(plan: Plan, loop: Node) -> LaneBound | None:
    """The bound and guards of ``loop``'s condition (above), or None where the condition is
    not ``var < n`` conjoined with invariant guards."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    body = loop.child_by_field_name("body")
    if init is None or cond is None or body is None or init.type != "declaration":
        return None
    return _conjunction(plan, loop, declared_name(init)[0], cond)


def first_pass_bound(plan: Plan, loop: Node) -> LaneBound | None:
    """``loop``'s test ``var == S || (T)`` (the first pass of a ``do``, above) as ``T``'s
    bound and guards with ``first`` ``S``; None where the test is not of that form, ``S`` is
    not the initializer's constant value, or the update is not a constant step above zero
    (``var += 32``) that the body does not repeat."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    body, update = loop.child_by_field_name("body"), loop.child_by_field_name("update")
    if init is None or cond is None or body is None or update is None or \
            init.type != "declaration":
        return None
    var, _d, start = declared_name(init)
    either = binary(cond)
    first = binary(either[0]) if either is not None and either[1] == "||" else None
    step = step_of(update, var)
    if either is None or first is None or first[1] != "==" or \
            text(strip(first[0])) != var or start is None or \
            int_expr_value(first[2]) is None or \
            int_expr_value(first[2]) != int_expr_value(start) or \
            step is None or not (int_expr_value(step) or 0) > 0 or var in assigned_names(body):
        return None
    found = _conjunction(plan, loop, var, either[2])
    return None if found is None else LaneBound(var, found.bound, found.guards, strip(first[2]))


def _conjunction(plan: Plan, loop: Node, var: str, cond: Node) -> LaneBound | None:
    """``cond`` as one ``var < n`` conjoined with guards invariant in ``loop``, else None."""
    body, update = loop.child_by_field_name("body"), loop.child_by_field_name("update")
    assert body is not None
    bounds, guards = [], []
    for part in chain(cond, "&&"):
        parts = binary(part)
        if parts is not None and parts[1] == "<" and text(strip(parts[0])) == var:
            bounds.append(strip(parts[2]))
        else:
            guards.append(part)
    if len(bounds) != 1:
        return None
    written = assigned_names(body) | {var}
    if update is not None:
        written |= assigned_names(update)
    if any(not _invariant(plan, g, written) for g in guards):
        return None
    return LaneBound(var, bounds[0], tuple(guards))


def _invariant(plan: Plan, node: Node, written: set[str]) -> bool:
    """``node`` names only kernel parameters and locals that are not ``__shared__`` (another
    thread may store to a shared or file-scope variable while the loop runs), none in
    ``written``, reads no memory (a call may: refused too) and has no side effect."""
    for n in walk(node):
        if n.type == "identifier" and (text(n) in written or not _own_value(plan, text(n))):
            return False
        if n.type in _MEMORY and not (n.type == "pointer_expression" and
                                      text(n).startswith("&")):
            return False
        if n.type == "field_expression" and "->" in text(n):
            return False
    return side_effect_free(plan.source, node)


def _own_value(plan: Plan, name: str) -> bool:
    """``name`` is a kernel parameter or a thread's own (not ``__shared__``) local."""
    d = plan.facts.defs.get(name)
    if d is not None:
        return not d.is_shared
    return any(p.name == name for p in plan.kernel.params)
