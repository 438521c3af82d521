"""RCP: a double division by a function of a loop's counter as a multiply by its reciprocal,
and TERM_UNROLL, the unroll factor of that loop, knobs of a series kernel.

A double division is a long software sequence on the GPU (a reciprocal seed, Newton steps,
a test branching to a slow path); ``a * (1.0 / d)`` is one multiply where ``1.0 / d`` is a
constant, and one reciprocal a trip where it is not. A series' divisors (``term / (2 * k +
1)``, ``term *= -x2 / k``) read nothing but the counter of the loop summing it, so with the
loop unrolled whole (``TERM_UNROLL`` = its trip count) every ``1.0 / d`` folds to a constant
at compile time, and unrolled in part it is computed once a trip, the same for every thread.

The rule reads the semantics, not a spelling: a ``/`` in the kernel or in a ``__device__``
function it reaches (:func:`.helper_scope`), inside a loop, whose value is ``double`` (an
operand a ``double`` local or parameter, a cast to ``double``, an unsuffixed floating
literal, or arithmetic on such), whose divisor reads no name but the loop's counter
(integer literals and macros besides): the counter of a ``for`` header, or of a
``while``/``do`` loop stepping it by one once a trip at the top level of its body
(``++k``, ``k++``, ``k += 1``). ``RCP = 0`` is the kernel as written.

How far the result moves: ``1.0 / d`` and the product are two roundings where ``a / d`` is
one, so each quotient is within 1 ulp of double (2^-52 relative) of the quotient as written;
the series as written already rounds every term at least twice (the division, the product
or the sum), so the computation's rounding error grows by at most a factor of about two
over the kernel's own, and it is allowed only where every store of the kernel is to a
``float`` array (a rounding of 2^-24, 2^28 times coarser than the change). A zero divisor
gives the same infinity or NaN either way. The gate checks the folder's tolerance at
``RCP = 1`` on the GPU; the host tests check it against the kernel as written.

TERM_UNROLL is ``#pragma unroll`` on the loop whose counter the divisions read, where its
trips are known (a ``for``, or a ``while (k < N)`` whose counter starts at a constant and is
assigned nowhere but its step): any factor is correct, 0 is the compiler's choice, as
written, and the whole loop is one value where it has at most MAX_FULL_UNROLL trips.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    LOOPS,
    binary,
    declared_name,
    int_expr_value,
    int_value,
    line,
    strip,
    text,
    walk,
)
from workbench.templater.ilp_fastmath_helpers import helper_scope
from workbench.templater.item_state import MAX_FULL_UNROLL, trip_count
from workbench.templater.plan import Plan
from workbench.templater.table_open import _assignments, _check_float_stores
from workbench.templater.vector import Illegal

NAME = "RCP"
UNROLL = "TERM_UNROLL"
_MACRO = (f"#if {NAME}\n#define WB_RCP(a, d) ((a) * (1.0 / (d)))\n#else\n"
          "#define WB_RCP(a, d) ((a) / (d))\n#endif")

@dataclass(frozen=True)
class CounterLoop:
    """A loop and the counter it steps by one a trip; ``trips`` where they are known."""

    loop: Node
    counter: str
    trips: int | None


def apply_rcp(plan: Plan) -> bool:
    """Route every double division by a function of its loop's counter (see the module
    doc) through ``WB_RCP``, and give that loop TERM_UNROLL; True when one was."""
    if NAME in plan.params:
        return False
    sites: list[tuple[Node, CounterLoop, Node]] = []  # division, its loop, its function
    for body in helper_scope(plan).functions.values():
        fn = body.parent if body.parent is not None else body
        for n in walk(body):
            if n.type == "binary_expression" and text(n.child_by_field_name("operator")) == "/":
                found = _counter_division(n, fn)
                if found is not None and not _owned(plan, n):
                    sites.append((n, found, fn))
    if not sites:
        return False
    try:
        _check_float_stores(plan)
    except Illegal as exc:
        plan.note(NAME, False, f"`{text(sites[0][0])[:40]}` as a reciprocal multiply: "
                  f"{exc.reason}", exc.node or sites[0][0])
        return False
    plan.helper(_MACRO)
    for div, _loop, _fn in sites:
        _rewrite(plan, div)
    plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": f"1: the {len(sites)} double division(s) by a loop "
                                         "counter's function as a multiply by its "
                                         "reciprocal (1 ulp a quotient); 0: as written"},
                   f"{line(sites[0][0])}: {text(sites[0][0])[:60]}")
    plan.note(NAME, True, f"{len(sites)} double division(s) by a function of a loop counter "
              f"({'; '.join(f'`{text(d)[:30]}` by `{c.counter}`' for d, c, _ in sites)}) as "
              "a multiply by the reciprocal, a constant where the loop is unrolled whole",
              sites[0][0])
    loops = {c.loop.start_byte: c for _d, c, _f in sites}
    if len(loops) == 1:
        _unroll(plan, next(iter(loops.values())))
    return True


def _owned(plan: Plan, div: Node) -> bool:
    """An earlier family rewrote ``div`` whole (TABLE's reciprocal table of an open
    counter: its table entry is already the reciprocal), or its operator (DIV_FOLD's inner
    quotient, an argument of its macros: :mod:`.ilp_div_fold`)."""
    left, right = div.child_by_field_name("left"), div.child_by_field_name("right")
    gap = (left.end_byte, right.start_byte) if left is not None and right is not None else None
    return any((e.start, e.end) in ((div.start_byte, div.end_byte), gap)
               for e in plan.rw.edits)


def _counter_division(div: Node, fn: Node) -> CounterLoop | None:
    """The loop whose counter alone ``div``'s divisor reads, where ``div`` is a double
    division; None otherwise."""
    left, right = div.child_by_field_name("left"), div.child_by_field_name("right")
    if left is None or right is None or not (_double(left, fn) or _double(right, fn)):
        return None
    names = {text(n) for n in walk(right) if n.type == "identifier"}
    if any(n.type in ("call_expression", "subscript_expression", "field_expression")
           for n in walk(right)):
        return None
    node = div.parent
    while node is not None and node != fn:
        if node.type in LOOPS:
            found = _counter_loop(node, fn)
            if found is not None and found.counter in names and \
                    all(n == found.counter or int_expr_value(_ident(right, n)) is not None
                        for n in names):
                return found
        node = node.parent
    return None


def _ident(root: Node, name: str) -> Node:
    return next(n for n in walk(root) if n.type == "identifier" and text(n) == name)


def _counter_loop(loop: Node, fn: Node) -> CounterLoop | None:
    """``loop``'s counter: a ``for`` header's, or a ``while``/``do`` body's unconditional
    step by one (the only assignment of it in ``fn`` after its constant start)."""
    if loop.type == "for_statement":
        init = loop.child_by_field_name("initializer")
        counter = declared_name(init)[0] if init is not None and \
            init.type == "declaration" else ""
        trips = trip_count(loop)
        return CounterLoop(loop, counter, trips) if counter and trips is not None else None
    body = loop.child_by_field_name("body")
    if body is None or body.type != "compound_statement" or \
            any(n.type == "continue_statement" for n in walk(body)):
        return None
    steps = [name for s in body.named_children if s.type == "expression_statement" and
             s.named_children and (name := _stepped(s.named_children[0]))]
    if len(steps) != 1 or _assignments(fn, steps[0]) != 1:
        return None
    counter = steps[0]
    start = _start(fn, counter, loop)
    cond = loop.child_by_field_name("condition")
    if cond is not None and cond.type == "condition_clause":  # while (..): its expression
        cond = cond.child_by_field_name("value")
    parts = binary(cond) if cond is not None else None
    end = int_expr_value(parts[2]) if parts is not None and parts[1] == "<" and \
        text(strip(parts[0])) == counter else None
    trips = end - start if loop.type == "while_statement" and start is not None and \
        end is not None and end > start else None
    return CounterLoop(loop, counter, trips)


def _stepped(node: Node) -> str:
    """``k`` of ``++k``, ``k++``, ``k += 1``; "" otherwise."""
    node = strip(node)
    if node.type == "update_expression" and "++" in text(node):
        target = node.child_by_field_name("argument")
        return text(target) if target is not None and target.type == "identifier" else ""
    if node.type == "assignment_expression" and \
            text(node.child_by_field_name("operator")) == "+=" and \
            int_value(node.child_by_field_name("right")) == 1:
        target = node.child_by_field_name("left")
        return text(target) if target is not None and target.type == "identifier" else ""
    return ""


def _start(fn: Node, name: str, loop: Node) -> int | None:
    """The constant ``name`` is declared with before ``loop`` in ``fn``, else None."""
    for n in walk(fn):
        if n.type == "declaration" and n.start_byte < loop.start_byte:
            found, _d, value = declared_name(n)
            if found == name:
                return int_expr_value(value)
    return None


def _double(node: Node, fn: Node) -> bool:
    """``node``'s value is a ``double`` by C's conversions (see the module doc)."""
    node = strip(node)
    if node.type == "cast_expression":
        return "double" in text(node.child_by_field_name("type")).split()
    if node.type == "unary_expression":
        arg = node.child_by_field_name("argument")
        return arg is not None and text(node.child_by_field_name("operator")) in "-+" and \
            _double(arg, fn)
    if node.type == "identifier":
        return _declared(fn, text(node)) == "double"
    if node.type == "number_literal":
        raw = text(node).lower()
        return not raw.startswith("0x") and not raw.endswith("f") and any(c in raw for c in ".e")
    parts = binary(node)
    return parts is not None and parts[1] in ("+", "-", "*", "/") and \
        (_double(parts[0], fn) or _double(parts[2], fn))


def _declared(fn: Node, name: str) -> str:
    """``double`` where ``fn`` declares ``name`` (a parameter or a local) only as a double
    scalar, else ""."""
    types = set()
    for n in walk(fn):
        if n.type in ("declaration", "parameter_declaration"):
            for d in n.children_by_field_name("declarator"):
                inner = d.child_by_field_name("declarator") if d.type == "init_declarator" \
                    else d
                if inner is not None and inner.type == "identifier" and text(inner) == name:
                    types.add("double" if "double" in text(n.child_by_field_name("type"))
                              .split() else "other")
    return "double" if types == {"double"} else ""


def _rewrite(plan: Plan, div: Node, macro: str = "WB_RCP") -> None:
    """``a / d`` -> ``macro(a, d)`` (``WB_RCP`` here, ilp_div_rcp's ``WB_DRCP``)."""
    left, right = div.child_by_field_name("left"), div.child_by_field_name("right")
    assert left is not None and right is not None
    plan.rw.insert(div.start_byte, f"{macro}(")
    plan.rw.replace_span(left.end_byte, right.start_byte, ", ")
    plan.rw.insert(div.end_byte, ")")


def _unroll(plan: Plan, found: CounterLoop) -> None:
    """TERM_UNROLL on the loop the divisions share, where its trips are known and it has
    no pragma of its own."""
    loop = found.loop
    prev = loop.prev_sibling
    owned = [p.name for p in plan.params.values() if "UNROLL" in p.name and
             re.match(rf"(.*:)?{line(loop)}: ", p.origin)]  # an ILP knob on the same loop
    if found.trips is None or UNROLL in plan.params or owned or (
            prev is not None and prev.type in ("preproc_call", "comment") and
            "unroll" in text(prev)):
        plan.note(UNROLL, False, "the loop's trips are not known, or it has its own #pragma "
                  f"unroll{' (' + owned[0] + ')' if owned else ''}", loop)
        return
    plan.helper(f"constexpr int wb_term_unroll = {UNROLL};  // #pragma unroll reads a "
                "constant, not a macro")
    plan.rw.insert(loop.start_byte, f"\n#if {UNROLL} > 0\n#pragma unroll (wb_term_unroll)\n"
                   "#endif\n")
    values = [0, 1, 2, 4, 8]
    if 8 < found.trips <= MAX_FULL_UNROLL:
        values.append(found.trips)
    plan.add_param(UNROLL, {"kind": "choice", "values": values, "default": 0,
                            "description": "unroll factor of the loop the reciprocals' "
                                           "counter steps (0: the compiler's choice, as "
                                           f"written; {found.trips}: the whole loop)"},
                   f"{line(loop)}: {text(loop).splitlines()[0][:60]}")
    plan.note(UNROLL, True, f"unroll factor of the {found.trips}-trip loop of `{found.counter}` "
              "(any value is correct; unrolled whole, each reciprocal is a constant)", loop)
