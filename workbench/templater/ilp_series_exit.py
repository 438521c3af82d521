"""CHECK_EVERY: a series loop the items share (:mod:`.ilp`) tests its convergence once every
``CHECK_EVERY`` trips, not every trip (issue 28, set 13's bessel_i0_series: the expert's
CHECK, 184 us at 1 against 127 us at 4 on the H100).

A loop on the item's state ends each trip in every item's test and the all-left test, a
branch the FP64 chains of the items cannot cross: each item leaves on its own, so the items'
chains do not run together (why ITEMS_PER_THREAD alone did not pay on first contact). With
the body repeated ``CHECK_EVERY`` times between tests (an unrolled ``for`` around the trip),
the chains of a group are one block of straight code; an item runs up to
``CHECK_EVERY - 1`` trips past the one where, as written, it would have left.

That is legal only where those extra trips move the result by less than its rounding. The
rule, read on the parse (each refusal names the line):

* the loop is a series: :func:`.table_open.open_table` reads it as a chain ``t *= a / d(k)``
  (a double chain started at a literal >= 0, ``k`` an open counter from a start >= 0, ``d``
  of the counter, literals, ``+`` and ``*`` only, so positive and non-decreasing in ``k``),
  summed by ``s += t`` only, every store a float; the dividend ``a`` >= 0 reads only names
  the loop does not assign (no call, subscript or field), so the ratio ``a / d(k)`` never
  grows from one trip to the next;
* the loop's only exit is one convergence test at the end of a trip (a ``do``'s or
  ``while``'s condition, a ``for``'s, or a last ``if (C) break;`` with nothing else in
  its braces): it goes on while ``t > E * s`` (``>=``, either side, ``fabs`` of either, or
  ``t / s > E``), ``s`` the one sum of the chain, ``E`` a literal (or a macro of the
  file that is one) with ``0 < E <= 1e-10``, the chain's start ``t0`` >= the sum's ``s0``;
* a bound of the counter joined to the test (``t > E * s && k < K``, ``K`` a value nothing
  assigns) where the items share the counter: tested before each extra trip, so the loop
  ends by it on the trip it did as written;
* the body only steps the chain, its sum and the counter (declarations of per-trip locals
  besides); the counter is read nowhere after the loop and the sum only in stores, through
  casts, ``*`` and ``/`` (no cancellation after the loop).

Then where the test first fails (``t <= E s``), the next ratio is at most 1: were it above 1,
so would every ratio before it be (they never grow), the terms would rise from ``t0`` and
``s`` hold at most ``s0 + (j + 1) t`` after ``j`` trips (``j < 2^31``, an int counter), so
``t <= E s`` would need ``t (1 - E (j + 1)) <= E s0``, ``t0 <= 1.3 E s0``, against ``t0 >= s0``
(a chain started at 0 stays 0 and adds nothing). So every extra term is at most ``E s``, the
extra trips add at most ``7 E s <= 7e-10 s``, below the float result's rounding (2^-24):
within one float rounding of the kernel as written. ``CHECK_EVERY = 1`` is the kernel as
written. A bound of a counter each item keeps (read after the loop) is refused: its guard
would be per item.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import LOOPS, binary, line, strip, text, walk, write_target
from workbench.templater.ilp_exits import SharedExit
from workbench.templater.ilp_guarded_trips import guarded_trips
from workbench.templater.item_state import assigned_in_body, exit_actions, span, statements
from workbench.templater.plan import Plan
from workbench.templater.table_open import open_counter, open_table
from workbench.templater.vector import Illegal

NAME = "CHECK_EVERY"
GROUP = "wb_chk"
MAX_EPS = 1e-10  # 7 extra terms of at most E * s: 7e-10 of the sum, below float's 6e-8
_MORE = {">": True, ">=": True, "<": False, "<=": False}  # left side the larger (goes on)
_ABS = ("fabs", "abs", "fabsf", "std::abs", "std::fabs")


@dataclass(frozen=True)
class SeriesExit:
    """A series loop whose convergence test may run once every CHECK_EVERY trips (or, with
    no chain, sum or E, a loop whose trips group exactly: :mod:`.ilp_guarded_trips`)."""

    loop: Node
    exit_if: Node | None  # a last ``if (C) break;`` moved to the group's end (None: the test)
    chain: str
    total: str
    eps: float
    # a bound of the items' shared counter joined to the test (``&& k < K``), tested before
    # each extra trip of a group, so the loop ends by it on the trip it did as written
    bound: Node | None = None
    bound_goes_on: bool = True  # the loop goes on while the bound holds (else: leaves)
    # every trip of a group tests each item's exits and header (:mod:`.ilp_guarded_trips`)
    exact: bool = False


def group_series_exits(plan: Plan, exits: list[SharedExit],
                       escape_ifs: set[tuple[int, int]]) -> dict[tuple[int, int], SeriesExit]:
    """The shared item loops whose test may run every CHECK_EVERY trips (by loop span), with
    the knob and a note for each; a note naming the line for each series loop refused.
    Where no loop is a series, the one loop :mod:`.ilp_guarded_trips` groups exactly."""
    grouped: dict[tuple[int, int], SeriesExit] = {}
    refused: list[tuple[SharedExit, Illegal]] = []
    for found in exits:
        if found.kind == "escape":
            continue
        try:
            grouped[span(found.loop)] = series_exit(plan, found, escape_ifs)
        except Illegal as why:
            refused.append((found, why))
    if not grouped:  # no series: a loop whose every trip tests its exits per item
        return _guarded_groups(plan, refused)
    for found, cause in refused:
        plan.note(NAME, False, f"the exit test once every few trips: {cause.reason}",
                  cause.node or found.loop)
    if len(grouped) != 1:  # one knob for one loop: two series would each want their own
        return {}
    series = next(iter(grouped.values()))
    plan.add_param(NAME, {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                          "description": "trips of the series loop between its convergence "
                                         "tests, the items' chains straight between them "
                                         "(as written: 1)"},
                   f"{line(series.loop)}: {text(series.loop).splitlines()[0][:60]}")
    plan.note(NAME, True, f"the convergence test `{series.chain} > {series.eps:g} * "
              f"{series.total}` once every {NAME} trips of the series loop (up to "
              f"{NAME} - 1 extra terms, each at most {series.eps:g} of the sum: within one "
              "float rounding of the result)" + (
                  "" if series.bound is None else f"; its counter's bound "
                  f"`{text(series.bound)}` before every trip (the loop ends by it as written)"),
              series.loop)
    return grouped


def _guarded_groups(plan: Plan, refused: list[tuple[SharedExit, Illegal]]
                    ) -> dict[tuple[int, int], SeriesExit]:
    """The one loop of ``refused`` (each with why it is no series) whose trips group exactly
    (:mod:`.ilp_guarded_trips`: its tests stay in every trip), with the knob and a note; for
    each loop neither reading takes, one note naming the series refusal's line, both
    reasons."""
    grouped: dict[tuple[int, int], SeriesExit] = {}
    for found, cause in refused:
        try:
            guarded_trips(found, shared_counters(plan, [found.loop]))
        except Illegal as guarded:
            at = line(guarded.node or found.loop)
            plan.note(NAME, False, f"the exit test once every few trips: {cause.reason}; "
                      f"guarded trips between exit checks (line {at}): {guarded.reason}",
                      cause.node or found.loop)
            continue
        grouped[span(found.loop)] = SeriesExit(found.loop, None, "", "", 0.0, exact=True)
    if len(grouped) != 1:
        return {}
    loop = next(iter(grouped.values())).loop
    plan.add_param(NAME, {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                          "description": "trips of the loop between its checks that every "
                                         "item has left, each trip's exits still tested per "
                                         "item (as written: 1)"},
                   f"{line(loop)}: {text(loop).splitlines()[0][:60]}")
    plan.note(NAME, True, f"{NAME} trips of the loop between its checks that every item has "
              "left; each item's exits are tested in every trip and an item that left keeps "
              "its state, so no extra trip changes a result", loop)
    return grouped


def shared_counters(plan: Plan, loops: list[Node]) -> set[str]:
    """The open counters (:func:`.table_open.open_counter`) of ``loops`` (loops the items
    share and leave one by one) that stay one per thread: each is ``start + t`` on trip
    ``t`` of every item still in its loop, and the items run their trips together, so one
    counter stepped once a shared trip is every live item's. Only where the step is a
    statement of the body (a ``for``'s update runs per item), the loop and the counter's
    declaration are in no loop, and nothing outside the loop reads the counter (an item that
    left would see it run on). The table's entry and its fallback test are then one per
    trip, not one per item."""
    out = set()
    for loop in loops:
        counter = open_counter(plan, loop)
        if counter is None or counter.step == loop.child_by_field_name("update"):
            continue
        found = plan.facts.defs.get(counter.name)
        if found is None or _in_loop(loop) or _in_loop(found.decl):
            continue
        if not any(n.type == "identifier" and text(n) == counter.name and _read(n) and
                   not loop.start_byte <= n.start_byte < loop.end_byte
                   for n in walk(plan.body)):
            out.add(counter.name)
    return out


def _in_loop(node: Node) -> bool:
    up = node.parent
    while up is not None:
        if up.type in LOOPS:
            return True
        up = up.parent
    return False


def series_exit(plan: Plan, found: SharedExit, escape_ifs: set[tuple[int, int]]
                ) -> SeriesExit:
    """``found``'s loop as a :class:`SeriesExit`, or Illegal naming the line (module doc)."""
    loop = found.loop
    body = loop.child_by_field_name("body")
    assert body is not None
    stmts = statements(body)
    exits = [s for s in stmts if span(s) in escape_ifs]
    exit_if: Node | None = None
    if found.header_exit is not None and not exits:
        goes_on, test = True, found.header_exit
    elif found.header_exit is None and len(exits) == 1 and exits[0] == stmts[-1] and \
            not exit_actions(exits[0]):
        exit_if = exits[0]
        cond = exit_if.child_by_field_name("condition")
        assert cond is not None
        goes_on, test = False, cond
    else:
        raise Illegal("the loop's exit is not one test at the end of a trip (a condition, "
                      "or a last `if (C) break;`)", exits[0] if exits else loop)
    table = open_table(plan, loop)  # Illegal: its reason, naming the line
    if table is None:
        raise Illegal("no series chain `t *= a / d(k)` of an open counter in the loop", loop)
    chain, counter = table.chain, table.counter.name
    assigned = assigned_in_body(loop, frozenset())
    for n in walk(table.left):
        if n.type in ("call_expression", "subscript_expression", "field_expression",
                      "pointer_expression") or (n.type == "identifier" and text(n) in assigned):
            raise Illegal(f"the dividend `{text(table.left)[:40]}` may change from trip to "
                          f"trip (`{text(n)[:30]}`): the ratio might grow past the exit",
                          table.left)
    shared = counter in shared_counters(plan, [loop])
    total, eps, bound, bound_goes_on = _convergence(plan, test, goes_on, chain,
                                                    counter if shared else None)
    sums = {text(n.child_by_field_name("left")) for n in walk(body)
            if n.type == "assignment_expression"
            and text(n.child_by_field_name("operator")) == "+="
            and text(strip(n.child_by_field_name("right") or n)) == chain}
    if sums != {total}:
        raise Illegal(f"the test's sum `{total}` is not the one sum of the chain `{chain}` "
                      f"(sums: {', '.join(sorted(sums)) or 'none'})", test)
    t0, s0 = _start(plan, chain), _start(plan, total)
    if t0 is None or s0 is None or (t0 != 0 and s0 > t0):
        raise Illegal(f"the chain `{chain}` does not start at a literal >= the sum's start "
                      f"(`{total}`)", test)
    for stmt in stmts:
        if stmt == exit_if or stmt.type == "declaration":
            continue
        changed = assigned_in_body_of(stmt)
        if stmt.type != "expression_statement" or not changed <= {chain, total, counter}:
            raise Illegal(f"`{text(stmt)[:40]}` does more than step the chain, its sum or "
                          "the counter: an extra trip would change it", stmt)
    _check_after(plan, loop, counter, total)
    return SeriesExit(loop, exit_if, chain, total, eps, bound, bound_goes_on)


def assigned_in_body_of(stmt: Node) -> set[str]:
    """The names ``stmt`` assigns or updates (a store through memory by its root's text)."""
    out = set()
    for n in walk(stmt):
        target = write_target(n)
        if target is not None:
            out.add(text(target))
    return out


def _convergence(plan: Plan, test: Node, goes_on: bool, chain: str, counter: str | None
                 ) -> tuple[str, float, Node | None, bool]:
    """(the sum, E, a bound of ``counter`` joined to it or None, whether the loop goes on
    while that bound holds) of a convergence test on ``chain`` (``goes_on``: the loop
    continues while ``test`` holds, else it leaves when it does), or Illegal. ``counter``:
    the items' shared counter (None where it is each item's own: no bound is read)."""
    node = strip(test)
    if node.type == "condition_clause":  # `while (C)`, `if (C)`: C
        node = strip(node.child_by_field_name("value") or node.named_children[-1])
    while node.type == "unary_expression" and text(node.child_by_field_name("operator")) == "!":
        inner = node.child_by_field_name("argument")
        assert inner is not None
        node, goes_on = strip(inner), not goes_on
    parts = binary(node)
    bound, bound_goes_on = None, goes_on
    if parts is not None and parts[1] in ("&&", "||"):
        sides = [strip(parts[0]), strip(parts[2])]
        # the loop goes on while both hold (&&), or leaves when either does (||)
        found = [n for n in sides if _counter_bound(plan, n, counter)] \
            if parts[1] == ("&&" if goes_on else "||") else []
        if len(found) != 1:
            raise Illegal(f"`{text(test)[:50]}` joins the convergence test with another that "
                          "is not one bound of a counter the items share (each extra trip "
                          "would need its own guard)", test)
        bound = found[0]
        node = next(n for n in sides if n != bound)
        parts = binary(node)
    if parts is None or parts[1] not in _MORE:
        raise Illegal(f"`{text(test)[:50]}` is not a comparison of a term with a fraction of "
                      "the sum", test)
    left, op, right = parts
    # the loop goes on while `big > small` (strictly or not): which side is the term's
    big, small = (left, right) if _MORE[op] == goes_on else (right, left)
    term = _unabs(big)
    ratio = binary(term)
    if ratio is not None and ratio[1] == "/" and text(_unabs(ratio[0])) == chain:
        total, eps = _unabs(ratio[2]), small  # t / s > E
    else:
        product = binary(small)
        if text(term) != chain or product is None or product[1] != "*":
            raise Illegal(f"`{text(test)[:50]}` does not go on while the term `{chain}` is "
                          "above a fraction E of the sum (`t > E * s`)", test)
        first, second = product[0], product[2]
        eps, total = (first, _unabs(second)) if _constant(plan, first) is not None \
            else (second, _unabs(first))
    value = _constant(plan, eps)
    if total.type != "identifier" or value is None or not 0 < value <= MAX_EPS:
        raise Illegal(f"`{text(test)[:50]}`: E is not a literal in (0, {MAX_EPS:g}] times a "
                      "sum", test)
    return text(total), value, bound, bound_goes_on


def _counter_bound(plan: Plan, node: Node, counter: str | None) -> bool:
    """``node`` compares ``counter`` with a value no local changes (literals, macros, the
    kernel's parameters, locals never assigned), and reads nothing else."""
    parts = binary(node)
    if counter is None or parts is None or parts[1] not in ("<", "<=", ">", ">=", "!="):
        return False
    sides = [strip(parts[0]), strip(parts[2])]
    if [text(n) for n in sides].count(counter) != 1:
        return False
    other = next(n for n in sides if text(n) != counter)
    for n in walk(other):
        if n.type in ("call_expression", "subscript_expression", "field_expression",
                      "pointer_expression", "assignment_expression", "update_expression"):
            return False
        found = plan.facts.defs.get(text(n)) if n.type == "identifier" else None
        if found is not None and (found.assigned or text(n) == counter):
            return False
    return True


def _unabs(node: Node) -> Node:
    node = strip(node)
    if node.type == "call_expression" and text(node.child_by_field_name("function")) in _ABS:
        args = node.child_by_field_name("arguments")
        if args is not None and args.named_child_count == 1:
            return strip(args.named_children[0])
    return node


def _constant(plan: Plan, node: Node) -> float | None:
    """A floating literal's value, directly or through an object-like macro of the file
    defined once as one."""
    node = strip(node)
    raw = text(node)
    if node.type == "identifier":
        root = plan.body
        while root.parent is not None:
            root = root.parent
        bodies = {text(v).strip().strip("()").strip() for n in walk(root)
                  if n.type == "preproc_def" and (m := n.child_by_field_name("name")) is not None
                  and text(m) == raw and (v := n.child_by_field_name("value")) is not None}
        if len(bodies) != 1:
            return None
        raw = next(iter(bodies))
    elif node.type != "number_literal":
        return None
    try:
        return float(raw.lower().rstrip("fl"))
    except ValueError:
        return None


def _start(plan: Plan, name: str) -> float | None:
    found = plan.facts.defs.get(name)
    return _constant(plan, found.value) if found is not None and found.value is not None \
        else None


def _check_after(plan: Plan, loop: Node, counter: str, total: str) -> None:
    """The counter is read only in the loop; the sum outside it only in stores, through
    casts, parentheses, ``*`` and ``/``."""
    for n in walk(plan.body):
        if n.type != "identifier" or loop.start_byte <= n.start_byte < loop.end_byte:
            continue
        if text(n) == counter and _read(n):
            raise Illegal(f"the counter `{counter}` is read after the loop: extra trips "
                          "would change it", n)
        if text(n) == total and _read(n) and not _stored(n):
            raise Illegal(f"`{text(_statement(n))[:50]}` reads the sum `{total}` other than "
                          "into a store through casts, `*` and `/`", n)


def _read(n: Node) -> bool:
    """The identifier ``n`` is read: not a declarator's name nor a plain assignment's
    target (``int s = k;`` reads ``k``)."""
    parent = n.parent
    if parent is None or parent.type == "declaration":
        return False
    if parent.type == "init_declarator":
        return parent.child_by_field_name("value") == n
    return not (parent.type == "assignment_expression" and
                parent.child_by_field_name("left") == n and
                text(parent.child_by_field_name("operator")) == "=")


def _stored(n: Node) -> bool:
    up: Node = n
    while up.parent is not None and (up.parent.type in ("cast_expression",
                                                        "parenthesized_expression") or (
            up.parent.type == "binary_expression" and
            text(up.parent.child_by_field_name("operator")) in ("*", "/"))):
        up = up.parent
    parent = up.parent
    if parent is None or parent.type != "assignment_expression" or \
            text(parent.child_by_field_name("operator")) != "=" or \
            parent.child_by_field_name("right") != up:
        return False
    target = parent.child_by_field_name("left")
    return target is not None and strip(target).type in ("subscript_expression",
                                                         "pointer_expression")


def _statement(n: Node) -> Node:
    up = n
    while up.parent is not None and up.type not in ("expression_statement", "declaration"):
        up = up.parent
    return up
