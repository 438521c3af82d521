"""Loops on an item's state that several items per thread (:mod:`.ilp`) can share, in any
common spelling, and why a loop that looks like one is refused.

A per-element solve (bisection, Newton, secant, an escape-time count) runs a loop whose
trip count depends on the item: ``while (C) {...}``, ``do {...} while (C);``,
``for (init; C; update) {...}`` with ``C`` on the item, ``for (;;)`` or ``while (true)``
left by ``break``. Each is read here as one shape, :class:`ItemLoop`: a test at the top of
each trip (``while``, ``for``) or at its end (``do``), none (``for (;;)``), a ``for``'s
initializer and update, and the exits ``if (C) break;`` / ``if (C) { A...; break; }``
directly in the body (the actions ``A`` are the item's last changes as it leaves: a
bisection that lands on the root sets both ends of its bracket, then stops).

The items then share one loop: each item runs its trips exactly as written (the same
statements in the same order), leaves by its own test or exit, and stops changing its state;
the loop ends once every item has left (:mod:`.ilp_exits` decides whether an item that left
is skipped by a branch or runs on and gets its state back by a select). A ``for`` of
item-independent length with its counter declared in its header keeps its header
(:func:`.item_state.escape_loops`), the others become a ``while (true)``.

Refused, naming the line (each item's loop then runs whole in its turn, or the kernel keeps
one item per thread): a ``continue`` of the loop (an item would need its own jump to the
test), a ``return`` or ``goto`` in it, a ``break`` other than the last statement of an exit
``if`` directly in the body, a test that changes something (``while (k++ < m)`` would count
on for an item that left) or that is not safe for an item in any state (a load at the
item's place), a body that is one statement, a counter declared in a ``for``'s header that
is not a plain scalar declared once in the kernel (each item gets its own copy of it).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import LOOPS, line, text, walk
from workbench.templater.item_state import (
    declarator_name,
    escape_if_of,
    local_type,
    mentions,
    safe_when_done,
    statements,
)
from workbench.templater.plan import Plan

_LEAVES = ("continue_statement", "return_statement", "goto_statement")
_TRUE = ("true", "1")


@dataclass(frozen=True)
class ItemLoop:
    """A loop the items share and leave one by one (see the module doc)."""

    loop: Node
    kind: str  # "while", "do" or "for"
    test: Node | None  # the condition whose falsity ends an item's loop (None: none)
    init: Node | None  # a `for`'s initializer, run once per item (a counter it declares: per item)
    update: Node | None  # a `for`'s update: run per item at the end of each trip
    exits: tuple[Node, ...]  # `if (C) { A...; break; }` directly in the body


@dataclass(frozen=True)
class LoopRefusal:
    """A loop on the item's state the items cannot share, and why (at ``node``)."""

    loop: Node
    node: Node
    reason: str

    def __str__(self) -> str:
        return f"line {line(self.node)}: {self.reason}"


def owner(brk: Node) -> Node | None:
    """The loop or ``switch`` a ``break``/``continue`` leaves."""
    up = brk.parent
    while up is not None and up.type not in (*LOOPS, "switch_statement"):
        up = up.parent
    return up


def own_exits(loop: Node) -> list[Node]:
    """The ``break`` statements that leave ``loop`` itself."""
    body = loop.child_by_field_name("body")
    return [n for n in walk(body) if n.type == "break_statement" and owner(n) == loop] \
        if body is not None else []


def candidate(loop: Node, items: set[str]) -> bool:
    """``loop`` runs a number of trips that depends on the item: its test reads the item's
    state, or it has a ``break`` under a test that does."""
    if loop.type not in LOOPS:
        return False
    cond = loop.child_by_field_name("condition")
    if cond is not None and mentions(cond, items):
        return True
    return any(_under_item_test(b, loop, items) for b in own_exits(loop))


def _under_item_test(node: Node, loop: Node, items: set[str]) -> bool:
    up = node.parent
    while up is not None and up != loop:
        cond = up.child_by_field_name("condition") if up.type in (
            "if_statement", "conditional_expression") else None
        if cond is not None and mentions(cond, items):
            return True
        up = up.parent
    return False


def read_loop(plan: Plan, loop: Node, items: set[str]) -> ItemLoop | LoopRefusal:
    """``loop`` (a :func:`candidate`) as an :class:`ItemLoop`, or why it is refused."""
    body = loop.child_by_field_name("body")
    if body is None or body.type != "compound_statement":
        return LoopRefusal(loop, loop, "the loop's body is one statement, not a block")
    for n in walk(body):
        if n.type in _LEAVES and (n.type != "continue_statement" or owner(n) == loop):
            return LoopRefusal(loop, n, f"`{text(n)}` inside a loop on the item's state: only "
                               "`if (C) { ...; break; }` directly in the loop body is read "
                               "as an item's exit")
    exits: list[Node] = []
    for brk in own_exits(loop):
        found = escape_if_of(brk)
        if found is None or found.parent != body or \
                not mentions(found.child_by_field_name("condition") or found, items):
            return LoopRefusal(loop, brk, "a `break` other than the last statement of an "
                               "`if (C) { ...; break; }` directly in the loop body, C on the "
                               "item")
        exits.append(found)
    kind, test, init, update = _header(loop)
    if init is not None and init.type == "declaration":
        # the counter is the item's own (one per item, before the shared loop): a plain
        # scalar, its name declared nowhere else in the kernel (every use is this one)
        for d in init.children_by_field_name("declarator"):
            name = declarator_name(d)
            if local_type(plan.body, name) is None:
                return LoopRefusal(loop, init, f"the counter `{name}` declared in the header "
                                   "is not a plain scalar declared once in the kernel (each "
                                   "item needs its own copy of it)")
    for part in (test, update):
        if part is not None and part.type == "declaration":
            return LoopRefusal(loop, part, "a declaration in the loop's test or update")
    if test is not None:
        if any(n.type in ("assignment_expression", "update_expression") for n in walk(test)):
            return LoopRefusal(loop, test, f"the loop's test `{text(test)[:50]}` changes the "
                               "item's state: items that left would run it on")
        if not safe_when_done(test, items, plan):
            return LoopRefusal(loop, test, f"the loop's test `{text(test)[:50]}` is not safe "
                               "for an item that has left (a load at the item's place, or a "
                               "call not proved pure)")
    return ItemLoop(loop, kind, test, init, update, tuple(exits))


def _header(loop: Node) -> tuple[str, Node | None, Node | None, Node | None]:
    """(kind, test, init, update); a test that is always true (``while (true)``) is none."""
    cond = loop.child_by_field_name("condition")
    if cond is not None and text(cond).replace(" ", "").strip("()") in _TRUE:
        cond = None
    if loop.type == "do_statement":
        return "do", cond, None, None
    if loop.type == "while_statement":
        return "while", cond, None, None
    return "for", cond, loop.child_by_field_name("initializer"), \
        loop.child_by_field_name("update")


def body_statements(loop: ItemLoop) -> list[Node]:
    body = loop.loop.child_by_field_name("body")
    return statements(body) if body is not None else []
