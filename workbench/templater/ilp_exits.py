"""Loops the items of :mod:`.ilp` leave one by one, and how they share them.

Two shapes of per-item exit, each found on the parse:

- an escape-time ``for`` (:func:`.item_state.escape_loops`): a loop of item-independent
  length whose body holds ``if (C) break;`` (or ``if (C) { A...; break; }``) statements on
  the item's state; it keeps its header;
- a loop on the item's state (:mod:`.ilp_loops`): ``while (C)``, ``do ... while (C)``,
  ``for (init; C; update)`` with ``C`` on the item, ``for (;;)``, each with such exits or
  none. The items share a ``while (true)`` loop: each leaves when its own ``C`` is false or
  an exit is taken, the loop ends once every item has left (each item's loop ended as
  written, so the shared one does too).

An exit with actions ``if (C) { A...; break; }`` tests ``C`` for every item (it must be safe
for any state), runs ``A`` only for an item leaving there (under that test: the actions
need not be safe), then keeps the state it left with.

Each item keeps a ``done`` flag. How an item that left skips the rest of the loop:

- *guarded*: its statements run under ``if (!done)``. Always correct, but each item's body
  is then a branch of its own, so the compiler cannot interleave the items' chains (the
  point of several items per thread): on a Newton iteration the items run one after another.
- *straight*: every statement of the body is safe for an item whatever its state
  (:func:`.item_state.safe_when_done`: arithmetic, pure calls, shared loads; no memory write,
  no load at the item's place, no loop on the item's state), and all of them run per item,
  as one block. Then every item runs them unguarded and an item that has left gets its state
  back by a select: ``keep = X`` at the top of the trip, ``keep = done ? keep : X`` at each
  exit test (the state the item left with), ``X = done ? keep : X`` at the end. An item
  that has not left runs exactly the statements it ran as written, in the same order
  (bit-identical results); one that has left computes values that are thrown away. The
  items' statements are then straight-line code the compiler interleaves.

The state kept is every item local declared before the loop and assigned in it (the locals
declared in the body are per trip); each must be a plain scalar (an array or pointer local
keeps the guarded form).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import walk
from workbench.templater.ilp_loops import ItemLoop
from workbench.templater.item_state import (
    assigned_in_body,
    declarator_name,
    is_item_stmt,
    local_type,
    mentions,
    safe_when_done,
    span,
    statements,
)
from workbench.templater.plan import Plan

KEEP = "wb_keep_"


@dataclass(frozen=True)
class SharedExit:
    """How the items share one loop they leave one by one (see the module doc)."""

    loop: Node
    header_exit: Node | None  # the test whose falsity ends an item (:mod:`.ilp_loops`)
    straight: bool
    state: tuple[str, ...]  # kept for the select (straight only), in declaration order
    # "escape": a `for` of item-independent length keeping its header; "while", "do",
    # "for": a loop on the item's state, made one `while (true)` the items share
    kind: str = "escape"
    init: Node | None = None  # a `for`'s initializer, run once per item before the loop
    update: Node | None = None  # a `for`'s update, run per item at the end of each trip


def shared_exit(plan: Plan, loop: Node, items: set[str], arrays: set[str],
                escape_ifs: set[tuple[int, int]], header_exit: Node | None,
                shape: ItemLoop | None = None) -> SharedExit:
    """The straight form where the body allows it (see the module doc), else guarded. An
    exit's actions run under its own test, so they need not be safe for an item that left;
    its test must be."""
    body = loop.child_by_field_name("body")
    state = _state(plan, loop, items, arrays)
    straight = body is not None and state is not None and \
        (header_exit is None or safe_when_done(header_exit, items, plan))
    for stmt in statements(body) if body is not None else []:
        if not straight:
            break
        if span(stmt) in escape_ifs:
            # (kept before the test: a test that changes the state would leave it changed)
            cond = stmt.child_by_field_name("condition")
            straight = cond is not None and not _writes(cond) and \
                safe_when_done(cond, items, plan)
        elif stmt.type == "expression_statement" and not mentions(stmt, items):
            continue  # the step of a counter the items share: once a trip, per thread
        else:
            straight = is_item_stmt(stmt, items) and stmt.type not in (
                "preproc_if", "preproc_ifdef") and safe_when_done(stmt, items, plan)
    kind = shape.kind if shape is not None else "escape"
    return SharedExit(loop, header_exit, straight, state if straight and state else (), kind,
                      shape.init if shape is not None else None,
                      shape.update if shape is not None else None)


def _writes(node: Node) -> bool:
    """``node`` assigns or updates something."""
    return any(n.type in ("assignment_expression", "update_expression") for n in walk(node))


def _state(plan: Plan, loop: Node, items: set[str], arrays: set[str]
           ) -> tuple[str, ...] | None:
    """The item locals declared before ``loop`` that its body assigns, or None when one of
    them is not a plain scalar item local (a counter the items share, one per thread, is
    not an item's: :func:`.ilp_series_exit.shared_counters`)."""
    body = loop.child_by_field_name("body")
    inside = {declarator_name(d) for n in walk(body) if n.type == "declaration"
              for d in n.children_by_field_name("declarator")} if body is not None else set()
    names = sorted((assigned_in_body(loop, frozenset()) - inside) & items)
    if any(name not in arrays or local_type(plan.body, name) is None for name in names):
        return None
    return tuple(names)


def keep_init(state: tuple[str, ...], it: str) -> list[str]:
    """``const``-free copies of the state at the top of the trip."""
    return [f"auto {KEEP}{name} = {name}[{it}];" for name in state]


def keep_at_exit(state: tuple[str, ...], done: str, it: str) -> list[str]:
    """At an exit test, before ``done`` takes it: the state an item leaving here keeps."""
    return [f"{KEEP}{name} = {done}[{it}] ? {KEEP}{name} : {name}[{it}];" for name in state]


def restore(state: tuple[str, ...], done: str, it: str) -> list[str]:
    """At the end of the trip: an item that has left gets the state it left with."""
    return [f"{name}[{it}] = {done}[{it}] ? {KEEP}{name} : {name}[{it}];" for name in state]
