"""TABLE over an open-ended counter: a series loop (``do { ... ++k; } while (term > eps *
sum);``) whose per-step terms depend on a counter the loop steps, not on a counted ``for``.

:mod:`.table_emit` tabulates the terms of a counted ``for`` (its entries known before the
loop). A loop that runs until its data says stop has no length, but it may still count: a
local ``int`` set to a compile-time constant before the loop, stepped by one exactly once a
trip at the top level of the body (unconditionally: no ``continue`` can skip it), assigned
nowhere else in the kernel. Its value on trip ``t`` is then ``start + t`` for every thread,
whatever the exit, so a term of it alone is the same table entry in every thread.
:func:`open_counter` recognizes that counter; a loop of any form (``do``/``while``/``for``
without a counted header) that has one and is not tabulated gets a note naming its line and
form, so the miss shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    int_expr_value,
    strip,
    text,
    unparenthesized,
    walk,
    write_target,
)
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Rewriter
from workbench.templater.vector import Illegal

_FORMS = {"do_statement": "do-while", "while_statement": "while", "for_statement": "for"}
_INT_TYPES = ("int", "unsigned", "long", "unsigned int", "long long")
CAP = 128  # the table's last entry: a series past it divides as written
TABLE_BYTES = 8 * (CAP + 1)  # one double table


@dataclass(frozen=True)
class OpenCounter:
    """A loop's counter that is ``start + t`` on trip ``t`` (see the module doc)."""

    name: str
    start: int
    form: str  # do-while, while, for
    step: Node  # its ``++k``


def open_counter(plan: Plan, loop: Node) -> OpenCounter | None:
    """The counter ``loop`` steps once a trip unconditionally, set to a constant before it
    and assigned nowhere else; None when it has none (or not exactly one)."""
    body = loop.child_by_field_name("body")
    if loop.type not in _FORMS or body is None or body.type != "compound_statement" or \
            any(n.type == "continue_statement" for n in walk(body)):
        return None
    steps = [s.named_children[0] for s in body.named_children
             if s.type == "expression_statement" and s.named_children]
    update = loop.child_by_field_name("update") if loop.type == "for_statement" else None
    stepped = [(node, name) for node in [*steps, *([update] if update else [])]
               if (name := _stepped(node))]
    if len(stepped) != 1:
        return None
    step, name = stepped[0]
    found = plan.facts.defs.get(name)
    decl_type = text(found.decl.child_by_field_name("type")) if found is not None else ""
    start = int_expr_value(found.value) if found is not None else None
    if found is None or start is None or found.is_pointer or decl_type not in _INT_TYPES or \
            found.decl.start_byte > loop.start_byte or _assignments(plan.body, name) != 1:
        return None
    return OpenCounter(name, start, _FORMS[loop.type], step)


def _stepped(node: Node) -> str:
    """``k`` of ``++k``, ``k++``, ``k += 1``; "" for anything else."""
    node = strip(node)
    if node.type == "update_expression" and text(node.child_by_field_name("operator")) == "++":
        target = node.child_by_field_name("argument")
        return text(target) if target is not None and target.type == "identifier" else ""
    if node.type == "assignment_expression" and \
            text(node.child_by_field_name("operator")) == "+=":
        target, by = node.child_by_field_name("left"), node.child_by_field_name("right")
        return text(target) if target is not None and target.type == "identifier" and \
            int_expr_value(by) == 1 else ""
    return ""


def _assignments(body: Node, name: str) -> int:
    """How many assignments and updates in ``body`` write the local ``name``."""
    count = 0
    for n in walk(body):
        target = n.child_by_field_name("left") if n.type == "assignment_expression" else \
            n.child_by_field_name("argument") if n.type == "update_expression" else None
        count += target is not None and text(strip(target)) == name
    return count


def note_open(plan: Plan, loop: Node, family: str) -> None:
    """The refusal of a loop that is not a counted ``for`` but has an open counter its body
    reads besides stepping it (a loop that only counts its trips has no terms of it)."""
    counter = open_counter(plan, loop)
    body = loop.child_by_field_name("body")
    if counter is not None and body is not None and any(
            n.type == "identifier" and text(n) == counter.name and not (
                counter.step.start_byte <= n.start_byte < counter.step.end_byte)
            for n in walk(body)):  # a term of it besides its step
        plan.note(family, False, f"per-entry terms in a per-block table: the {counter.form} "
                  f"loop counts `{counter.name}` from {counter.start} with no length (not a "
                  "counted `for`): its terms of the counter stay per step", loop)


@dataclass(frozen=True)
class OpenTable:
    """A division ``left / divisor`` of an open loop, the divisor a function of its counter
    alone, read as ``left * (1 / divisor)`` from a table of ``1 / divisor`` up to CAP."""

    loop: Node
    counter: OpenCounter
    division: Node
    left: Node
    divisor: Node
    chain: str  # ``t`` of ``t *= a / d``


def open_table(plan: Plan, loop: Node) -> OpenTable | None:
    """The reciprocal table of ``loop``'s division by a function of its open counter; None
    where the loop has no open counter or no such division; Illegal (naming the line) where
    ``a * (1 / d)`` may leave the folder's tolerance. The rule: ``1 / d`` and the product
    are two roundings where ``a / d`` is one (about 2 ulp of double a term, 2^-45 relative
    over CAP terms), so only a ``double`` series whose every term is >= 0 (the divisor
    positive, the dividend a square or a product of such, the chain it multiplies started
    at a literal >= 0 and multiplied by nothing else), summed by ``+=`` only (no
    cancellation: the sum's relative error is the terms'), and stored only as ``float``
    (2^-24 a rounding, 2^21 times coarser) is allowed."""
    counter = open_counter(plan, loop)
    body = loop.child_by_field_name("body")
    if counter is None or body is None:
        return None
    found = [n for n in walk(body) if n.type == "binary_expression" and
             text(n.child_by_field_name("operator")) == "/" and
             _of_counter(n.child_by_field_name("right"), counter.name)]
    if not found:
        return None
    if len(found) > 1:
        raise Illegal(f"{len(found)} divisions by the counter `{counter.name}` (one is "
                      "tabulated)", found[1])
    div = found[0]
    left, right = div.child_by_field_name("left"), div.child_by_field_name("right")
    assert left is not None and right is not None
    if not (_double(plan, left) or _double(plan, right)):
        raise Illegal(f"`{text(div)[:40]}` is not a double division (the rule covers a "
                      "double series stored as float)", div)
    if _sign(right, counter) != 2:
        raise Illegal(f"the divisor `{text(right)[:40]}` is not provably > 0 (the counter "
                      f"from {counter.start}, literals, + and * only)", right)
    chain = _chain(div)
    if chain is None:
        raise Illegal(f"`{text(div)[:40]}` is not a factor of `term *= ...` (a product "
                      "chain of terms >= 0)", div)
    if not _nonnegative(plan, left, set()):
        raise Illegal(f"the dividend `{text(left)[:40]}` is not provably >= 0 (a square, a "
                      "literal >= 0, or a product of such): the terms might cancel", left)
    _check_chain(plan, chain, div)
    _check_float_stores(plan)
    return OpenTable(loop, counter, div, left, right, chain)


def _of_counter(node: Node | None, counter: str) -> bool:
    """``node`` reads the counter and nothing else but literals."""
    names = {text(n) for n in walk(node) if n.type == "identifier"} if node is not None \
        else set()
    return names == {counter}


def _sign(node: Node, counter: OpenCounter) -> int:
    """2 where ``node`` > 0, 1 where >= 0, 0 where unknown, for the counter >= its start:
    the counter, literals, casts, + and * only."""
    node = unparenthesized(node)
    if node.type == "cast_expression":  # to an integer: a positive fraction may become 0
        value = node.child_by_field_name("value")
        sign = _sign(value, counter) if value is not None else 0
        return sign if _floating(text(node.child_by_field_name("type"))) or not any(
            n.type == "number_literal" and not _integer(text(n)) for n in walk(node)) \
            else min(sign, 1)
    if node.type == "identifier":
        return 0 if text(node) != counter.name or counter.start < 0 else \
            2 if counter.start > 0 else 1
    if node.type == "number_literal":
        raw = text(node).lower().rstrip("fu").rstrip("l")
        try:
            number = float.fromhex(raw) if raw.startswith("0x") else float(raw)
        except ValueError:
            return 0
        return 2 if number > 0 else 1 if number == 0 else 0
    parts = binary(node)
    if parts is None or parts[1] not in ("+", "*"):
        return 0
    left, right = _sign(parts[0], counter), _sign(parts[2], counter)
    if not left or not right:
        return 0
    return max(left, right) if parts[1] == "+" else min(left, right)


def _double(plan: Plan, node: Node) -> bool:
    """``node``'s value is a ``double`` (C's conversions: a cast to it, a local declared
    so, an unsuffixed floating literal, arithmetic with one such operand)."""
    node = unparenthesized(node)
    if node.type == "cast_expression":
        return "double" in text(node.child_by_field_name("type")).split()
    if node.type == "identifier":
        return _declared(plan, text(node)) == "double"
    if node.type == "number_literal":
        raw = text(node).lower()
        return not raw.startswith("0x") and not raw.endswith("f") and \
            any(c in raw for c in ".e")
    parts = binary(node)
    return parts is not None and parts[1] in ("+", "-", "*", "/") and \
        (_double(plan, parts[0]) or _double(plan, parts[2]))


def _floating(typ: str) -> bool:
    return bool({"float", "double"} & set(typ.split()))


def _integer(raw: str) -> bool:
    raw = raw.lower()
    return raw.startswith("0x") or not any(c in raw for c in ".e")


def _declared(plan: Plan, name: str) -> str:
    """The declared type of the local ``name`` ("" when not a local)."""
    found = plan.facts.defs.get(name)
    return text(found.decl.child_by_field_name("type")) if found is not None else ""


def _nonnegative(plan: Plan, node: Node, seen: set[str]) -> bool:
    """``node`` >= 0: a literal >= 0, ``x * x`` (one operand twice), a product or sum of
    such, a cast of one, a local never assigned whose value is one."""
    node = strip(node)
    if node.type == "cast_expression":
        value = node.child_by_field_name("value")
        return value is not None and _nonnegative(plan, value, seen)
    if node.type == "number_literal":
        return not text(node).startswith("-")
    if node.type == "identifier":
        found = plan.facts.defs.get(text(node))
        if found is None or found.assigned or found.value is None or text(node) in seen:
            return False
        return _nonnegative(plan, found.value, seen | {text(node)})
    parts = binary(node)
    if parts is None or parts[1] not in ("+", "*"):
        return False
    if parts[1] == "*" and text(strip(parts[0])) == text(strip(parts[2])):
        return True  # a square
    return _nonnegative(plan, parts[0], seen) and _nonnegative(plan, parts[2], seen)


def _chain(div: Node) -> str | None:
    """``t`` of ``t *= a / d`` (or ``t *= (a / d)``); None for any other use of it."""
    node = div
    while node.parent is not None and node.parent.type == "parenthesized_expression":
        node = node.parent
    parent = node.parent
    if parent is None or parent.type != "assignment_expression" or \
            text(parent.child_by_field_name("operator")) != "*=" or \
            parent.child_by_field_name("right") != node:
        return None
    target = parent.child_by_field_name("left")
    return text(target) if target is not None and target.type == "identifier" else None


def _check_chain(plan: Plan, chain: str, div: Node) -> None:
    """The chain starts at a literal >= 0, is multiplied by the division only, and flows
    on only into sums ``s += chain`` that start at a literal >= 0 and only add it."""
    _check_start(plan, chain)
    sums: set[str] = set()
    for n in walk(plan.body):
        if n.type != "assignment_expression":
            continue
        target, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        op = text(n.child_by_field_name("operator"))
        if target is None or right is None:
            continue
        reads = any(c.type == "identifier" and text(c) == chain for c in walk(right))
        if text(target) == chain and not (op == "*=" and strip(right) == strip(div)):
            raise Illegal(f"`{text(n)[:40]}` assigns the chain `{chain}` otherwise", n)
        if reads and text(target) != chain:
            if op != "+=" or text(strip(right)) != chain or target.type != "identifier":
                raise Illegal(f"`{text(n)[:40]}` uses the chain `{chain}` other than by a "
                              "sum `s += term`: its terms might cancel", n)
            sums.add(text(target))
    for name in sums:
        _check_start(plan, name)
        for n in walk(plan.body):
            if n.type in ("assignment_expression", "update_expression"):
                target = write_target(n)
                right = n.child_by_field_name("right")
                if target is not None and text(target) == name and not (
                        right is not None and text(strip(right)) == chain and
                        text(n.child_by_field_name("operator")) == "+="):
                    raise Illegal(f"`{text(n)[:40]}` changes the sum `{name}` by other than "
                                  f"`+= {chain}`", n)


def _check_start(plan: Plan, name: str) -> None:
    found = plan.facts.defs.get(name)
    value = found.value if found is not None else None
    if value is None or strip(value).type != "number_literal" or text(value).startswith("-"):
        raise Illegal(f"`{name}` does not start at a literal >= 0",
                      found.decl if found is not None else None)


def _check_float_stores(plan: Plan) -> None:
    """Every store of the kernel is to a ``float`` array (the series is stored rounded)."""
    for n in walk(plan.body):
        if n.type != "assignment_expression":
            continue
        target = strip(n.child_by_field_name("left") or n)
        if target.type == "identifier":
            continue
        root = target
        while root.type == "subscript_expression" and \
                (inner := root.child_by_field_name("argument")) is not None:
            root = strip(inner)
        param = next((p for p in plan.kernel.params if p.name == text(root)), None)
        if param is None or param.base_type != "float":
            raise Illegal(f"`{text(n)[:40]}` stores other than a float (the rule covers a "
                          "double series rounded to float)", n)


def open_fill(table: OpenTable, slot: str, tid: str, nthreads: str) -> str:
    """The fill of ``slot`` (``1 / d`` of entries start..CAP) at the kernel's top."""
    k = table.counter.name
    return (f"  __shared__ double {slot}[{CAP + 1}];  // 1 / ({text(table.divisor)}) of the "
            f"{table.counter.form} loop's counter `{k}`\n"
            f"  for (int {k} = {table.counter.start} + {tid}; {k} <= {CAP}; {k} += "
            f"{nthreads}) {slot}[{k}] = 1.0 / ({text(table.divisor)});\n")


def rewrite_open(rw: Rewriter, table: OpenTable, slot: str) -> None:
    """``a / d`` -> ``WB_TABLE((a) * (k <= CAP ? slot[k] : 1.0 / (d)), a / d)``, lazily:
    the counter and the dividend render with the names a transform before gave them (an
    item's own ``k[wb_it]``). Past the table the reciprocal is computed as the table's
    entries are (the same two roundings): the factor is then one of the counter alone, which
    the compiler computes once a trip where the items share the counter, with no branch
    around an item's division (at 4 items it spilled; 64 registers, no spill, this way)."""
    div, left = table.division, table.left
    counter = next(n for n in walk(table.divisor)
                   if n.type == "identifier" and text(n) == table.counter.name)

    def make(r: Rewriter) -> str:
        whole, k = r.render(div.start_byte, div.end_byte), r.text(counter)
        return (f"WB_TABLE(({r.text(left)}) * ({k} <= {CAP} ? {slot}[{k}] : 1.0 / "
                f"({r.text(table.divisor)})), {whole})")
    rw.replace_span(div.start_byte, div.end_byte, make=make)
