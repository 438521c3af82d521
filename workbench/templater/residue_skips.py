"""A tap loop that skips the trips a divisibility test on its counter fails, stepped by the
divisor from its first passing trip (issue 28: the gather spelling of set 21's upconv4x4_s2).

A stride-2 transposed convolution is also written over every tap, the taps of the other
parity skipped: ``for (int ky = 0; ky < 4; ++ky) { if ((oy + 1 - ky) % 2) continue; ..}``
(or ``int d = oy + 1 - ky; if (d & 1) continue;``, or the work under ``if ((..) % 2 == 0)``).
The trips that pass are those of ``ky ≡ t (mod 2)``, ``t`` fixed by the pixel: every other
trip only runs the test. ``for (int ky = 0 + ((t - 0) & 1); ky < 4; ky += 2)`` runs
the passing trips alone, in the same order: the same program where the trips it leaves out
did nothing but the test (and declarations that read no memory and call nothing). Its start
is then a run-time residue, and :mod:`.residue_taps` unrolls it whole.

The rule, on the parse: a ``for`` of constant trips stepping its counter ``k`` by one,
``k`` not assigned in its body; the body's first statements are declarations that call
nothing, read no memory and assign nothing, then the test: ``if (C) continue;`` with ``C``
true where ``s`` does not divide ``E`` (``E % s``, ``E % s != 0``, ``E & m`` or ``(E & m) !=
0`` with ``m + 1 = s`` a power of two), or, as the body's last statement, ``if (C) {..}``
with ``C`` true where it does (``E % s == 0``, ``!(E % s)``, ``(E & m) == 0``). ``E`` is
``±k + R`` (terms added and subtracted; one of those declarations naming such a value is read
through), ``R`` naming neither ``k`` nor anything the loop assigns, reading no memory and
calling nothing (a loop invariant: evaluated once, before the first trip). At ``TAP_UNROLL
= 1`` the loop starts at its first passing trip, steps by ``s`` and the test always passes
(``TAP_UNROLL || ..``, folded by the compiler); 0 is the kernel as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    int_expr_value,
    mentions,
    strip,
    terms,
    text,
    walk,
)
from workbench.templater.inline_bind import written
from workbench.templater.item_state import trip_count

_ASSIGN = ("assignment_expression", "update_expression")


@dataclass(frozen=True)
class SkipLoop:
    """A constant-trip ``for`` whose trips a divisibility test on its counter skips."""

    loop: Node
    var: str
    stride: int
    test: Node  # the condition of the ``if``
    skips: bool  # ``if (C) continue;`` (C: skip) rather than ``if (C) {..}`` (C: run)
    first: str  # the C text of the first passing trip, for the loop's initializer


def skip_loop(loop: Node) -> SkipLoop | None:
    """``loop`` as a tap loop whose trips a divisibility test skips (module doc), or None."""
    if loop.type != "for_statement" or trip_count(loop) is None:
        return None
    init = loop.child_by_field_name("initializer")
    body = loop.child_by_field_name("body")
    if init is None or init.type != "declaration" or body is None or \
            body.type != "compound_statement":
        return None
    d = init.child_by_field_name("declarator")
    start = d.child_by_field_name("value") if d is not None else None
    name = d.child_by_field_name("declarator") if d is not None else None
    if start is None or name is None or name.type != "identifier":
        return None
    var = text(name)
    stmts = [c for c in body.named_children if c.type != "comment"]
    lead = 0
    while lead < len(stmts) and stmts[lead].type == "declaration" and _inert(stmts[lead]):
        lead += 1
    if lead == len(stmts) or stmts[lead].type != "if_statement" or \
            stmts[lead].child_by_field_name("alternative") is not None:
        return None
    branch = stmts[lead]
    cond = branch.child_by_field_name("condition")
    if cond is not None and cond.type == "condition_clause":  # if (C): C itself
        cond = cond.child_by_field_name("value")
    then = branch.child_by_field_name("consequence")
    if cond is None or then is None:
        return None
    if then.type == "compound_statement" and then.named_child_count == 1:
        then = then.named_children[0]
    skips = then.type == "continue_statement"
    if not skips and branch != stmts[-1]:
        return None
    test = _divisibility(strip(cond), not skips)
    if test is None or _assigns(body, {var}):
        return None
    expr, stride = test
    locals_ = {_declared(s): s for s in stmts[:lead]}
    expr = _through_locals(expr, locals_)
    rest = _rest(expr, var, body)
    if rest is None:
        return None
    sign, r = rest
    target = f"-({r})" if sign > 0 else f"({r})"  # k = -sign * R (mod s)
    gap = f"({target}) - ({text(start)})"
    # the least non-negative residue: a mask where s is a power of two (two's complement;
    # nvcc then bounds the start, and the trips), else C's remainder made non-negative
    first = f"({text(start)}) + (({gap}) & {stride - 1})" if stride & (stride - 1) == 0 else \
        f"({text(start)}) + ((({gap}) % {stride} + {stride}) % {stride})"
    return SkipLoop(loop, var, stride, cond, skips, first)


def _divisibility(cond: Node, divides: bool) -> tuple[Node, int] | None:
    """(E, s) where ``cond`` is true exactly where s divides E (``divides``), or exactly where
    it does not (not ``divides``)."""
    if cond.type == "unary_expression" and text(cond).startswith("!"):
        inner = cond.child_by_field_name("argument")
        return _divisibility(strip(inner), not divides) if inner is not None else None
    parts = binary(cond)
    if parts is not None and parts[1] in ("==", "!=") and int_expr_value(parts[2]) == 0:
        return _divisibility(strip(parts[0]), divides if parts[1] == "!=" else not divides)
    if parts is None or divides:  # a remainder alone is true where s does not divide E
        return None
    left, op, right = parts
    k = int_expr_value(right)
    if op == "%" and k is not None and k >= 2:
        return strip(left), k
    if op == "&" and k is not None and k >= 1 and (k + 1) & k == 0:
        return strip(left), k + 1
    return None


def _rest(expr: Node, var: str, body: Node) -> tuple[int, str] | None:
    """(the counter's sign, R as C text) of ``expr`` = ``±var + R``; R a loop invariant that
    reads no memory and calls nothing."""
    parts = terms(expr)
    hits = [(s, t) for s, t in parts if t.type == "identifier" and text(t) == var]
    if len(hits) != 1 or any(t.type != "identifier" and mentions(t, {var}) for _s, t in parts):
        return None
    others = [(s, t) for s, t in parts if t is not hits[0][1]]
    inner = {_declared(d) for d in walk(body) if d.type == "declaration"}
    if not all(_inert(t) and not _assigns(body, _names(t)) and not _names(t) & inner
               for _s, t in others):
        return None  # R changes in the loop, or names a local of its body (out of scope)
    r = " ".join(f"{'+' if s > 0 else '-'} ({text(t)})" for s, t in others).removeprefix("+ ")
    return hits[0][0], r or "0"


def _through_locals(expr: Node, locals_: dict[str | None, Node]) -> Node:
    """``expr``, a name of one of the leading declarations read as the value it declares."""
    if expr.type == "identifier" and text(expr) in locals_:
        d = locals_[text(expr)].child_by_field_name("declarator")
        value = d.child_by_field_name("value") if d is not None else None
        if value is not None:
            return strip(value)
    return expr


def _declared(decl: Node) -> str | None:
    d = decl.child_by_field_name("declarator")
    name = d.child_by_field_name("declarator") if d is not None and \
        d.type == "init_declarator" else None
    return text(name) if name is not None and name.type == "identifier" else None


def _inert(n: Node) -> bool:
    """Calls nothing, reads no memory, assigns nothing (a one-name declaration, or a value)."""
    if n.type == "declaration" and (n.named_child_count != 2 or _declared(n) is None):
        return False
    return not any(m.type in ("call_expression", "subscript_expression", *_ASSIGN) or
                   (m.type == "pointer_expression" and text(m).startswith("*"))
                   for m in walk(n))


def _names(n: Node) -> set[str]:
    return {text(m) for m in walk(n) if m.type == "identifier"}


def _assigns(body: Node, names: set[str]) -> bool:
    """Whether ``body`` assigns, steps or takes the address of one of ``names``."""
    return any(written(body, name) for name in names)
