"""DIV_FOLD: a double quotient whose divisor holds a quotient, ``p / (q + r / s)``, as one
division, ``(p * s) / (q * s + r)``: a knob of compute-bound per-element kernels (set 25's
colebrook_newton_f64, whose Newton step ``g / (1 + 2 b / (arg ln 10))`` the expert's FAST
takes with one division).

A double division is a long software sequence on the GPU (a reciprocal seed, refinement
steps, a test branching to a slow path); a Newton or Halley step whose slope is a sum with a
quotient in it (``g' = 1 + c / u``, Halley's ``f' - f f'' / (2 f')``) pays two of them a step.
Multiplying both sides of the outer quotient by ``s`` leaves one, and two multiplies.

Which divisions: a ``/`` in a loop of the kernel's body or of a ``__device__`` helper it
calls (or in a helper called in a loop: :func:`.ilp_fastdiv._called_in_loops`; the helpers
are :func:`.helper_scope`'s, a helper another kernel reaches is refused there), whose
divisor is, under parentheses, a sum or difference of two terms one of which is a quotient
``r / s`` (``q + r / s``, ``q - r / s``, ``r / s + q``, ``r / s - q``), or a ``double`` local
holding such a sum: written once (its declaration's value or one assignment), read only in
that division, the write a statement of the block the division is in, the division after it
with no loop between them (the two run in one pass, in order), nothing written to a name
``s`` reads and no name of ``s`` declared again between them. Both quotients must be double
(:func:`.ilp_fastdiv._double_leaf`: the outer one, the inner one and ``s`` itself: ``p * s``
and ``q * s`` are double products, never integer ones) and ``s`` free of side effects
(:func:`.purity.side_effect_free`): it is read twice. A division an earlier family owns
(TABLE's whole rewrite, RCP's division by a loop counter's function) is left to it; DIV_RCP
(:mod:`.ilp_div_rcp`, after this) leaves the inner quotient to this one
(:func:`.ilp_rcp_counter._owned`) and may take the outer: at both knobs one reciprocal a step.

How far the result moves: both forms are the same quotient, each a few roundings of double
(2^-52 relative each); a cancellation in the divisor is the same in both (``q + r / s``
cancels where ``q s + r`` does), so each quotient is within a few ulp of double of the one
as written, and the rule applies only where every store of the kernel is to a ``float``
array (:func:`.table_open._check_float_stores`, a rounding 2^28 times coarser). Operands the
rule does not bound are accepted, the gate checking the folder's tolerance at
``DIV_FOLD = 1`` on the GPU: ``s = 0`` gives the same ``±0`` (``r`` not zero: ``p / ±inf``
as written, ``0 / r`` folded) or NaN (``r = 0``: ``0 / 0`` both) either way; an infinite
``s``, or ``p s`` or ``q s`` past the double range (1.8e308) where ``r / s`` was finite, gives
NaN or infinity folded where the written quotient is finite. ``DIV_FOLD = 0`` is the kernel
as written (the macros expand to its own operations in its order).

Not a knob: ``log10(x)`` as ``log(x) * (1 / ln 10)``. CUDA's double ``log10`` is its ``log``
with the result scaled (96 PTX instructions against 94 for ``log`` and a multiply on sm_90,
the same registers): nothing to tune.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    LOOPS,
    inside_loop,
    line,
    text,
    unparenthesized,
    walk,
    writer,
)
from workbench.templater.ilp_fastdiv import _called_in_loops, _double_leaf, _types
from workbench.templater.ilp_fastmath_helpers import helper_scope
from workbench.templater.ilp_rcp_counter import _counter_division, _owned
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls, side_effect_free
from workbench.templater.rewrite import Edit, Rewriter
from workbench.templater.table_open import _check_float_stores
from workbench.templater.vector import Illegal

NAME = "DIV_FOLD"
_MACRO = (f"#if {NAME}  // p / (q op r / s) as (p * s) / (q * s op r)\n"
          "#define WB_DFOLD_MUL(s) * (s)\n"
          "#define WB_DFOLD_DEN(q, op, r, s) ((q) * (s) op (r))\n"
          "#define WB_DFOLD_DEN_L(r, s, op, q) ((r) op (q) * (s))\n#else\n"
          "#define WB_DFOLD_MUL(s)\n"
          "#define WB_DFOLD_DEN(q, op, r, s) ((q) op (r) / (s))\n"
          "#define WB_DFOLD_DEN_L(r, s, op, q) ((r) / (s) op (q))\n#endif")


@dataclass(frozen=True)
class Fold:
    """One ``p / den`` to fold: ``sum`` is ``q op r / s`` (``quotient_left``: ``r / s op
    q``), the divisor itself (under parentheses) or the value of the local it reads."""

    division: Node
    dividend: Node
    sum: Node
    other: Node  # q
    op: str
    inner: Node  # r / s
    quotient_left: bool

    @property
    def s(self) -> Node:
        node = self.inner.child_by_field_name("right")
        assert node is not None
        return node


def apply_div_fold(plan: Plan) -> bool:
    """Fold every double ``p / (q ± r / s)`` of the kernel's repeated work (see the module
    doc) behind ``DIV_FOLD``; True when one was."""
    if NAME in plan.params:
        return False
    scope = helper_scope(plan).functions  # (a pure helper no loop calls has no loop)
    looped = _called_in_loops(plan.body, scope)
    top = _types(plan.source.tree.root_node, top_only=True)
    folds: list[Fold] = []
    for name, body in scope.items():
        fn = body.parent or body
        types = {**top, **_types(fn, top_only=False)}
        for div in walk(body):
            if div.type == "binary_expression" and \
                    text(div.child_by_field_name("operator")) == "/" and \
                    (name in looped or inside_loop(div, body)):
                found = _fold(plan, div, fn, types)
                if isinstance(found, Fold):
                    folds.append(found)
                elif found:
                    plan.note(NAME, False, f"`{text(div)[:60]}`: {found}", div)
    if not folds:
        return False
    try:
        _check_float_stores(plan)
    except Illegal as e:
        plan.note(NAME, False, f"a double quotient of a divisor holding a quotient as one "
                  f"division: {e}", e.node if isinstance(e.node, Node) else folds[0].division)
        return False
    for fold in folds:
        _rewrite(plan.rw, fold)
    plan.helper(_MACRO)
    plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": f"1: the {len(folds)} double quotient(s) p / (q + r "
                                         "/ s) as (p * s) / (q * s + r), one division for two "
                                         "(a few ulp of double a quotient; the gate checks "
                                         "the tolerance); 0: as written"},
                   f"{line(folds[0].division)}: {text(folds[0].division)[:60]}")
    plan.note(NAME, True, f"{len(folds)} double quotient(s) whose divisor holds a quotient "
              "folded into one division behind the knob (every store a float; the gate "
              "checks the tolerance): " + ", ".join(
                  f"`{text(f.division)[:40]}`" + (f" (line {line(f.division)})" if k else "")
                  for k, f in enumerate(folds)),
              folds[0].division)
    return True


def _fold(plan: Plan, div: Node, fn: Node, types: dict[str, str]) -> Fold | str:
    """The fold of ``div``, or why it has none ("" where its divisor holds no quotient:
    nothing to say)."""
    left, right = div.child_by_field_name("left"), div.child_by_field_name("right")
    if left is None or right is None:
        return ""
    den = unparenthesized(right)
    local: Node | None = None
    if den.type == "identifier":
        local = _definition(den, fn)
        if local is None:
            return ""
        den = unparenthesized(local)
    shape = _sum_of_quotient(den)
    if shape is None:
        return ""
    other, op, inner, quotient_left = shape
    fold = Fold(div, left, den, other, op, inner, quotient_left)
    s = fold.s
    if not (_double_leaf(div, types) and _double_leaf(inner, types) and
            _double_leaf(s, types)):
        return "not a double quotient of a double `s` (an integer product or an fp32 " \
            "division would round otherwise)"
    if _owned(plan, div) or _owned(plan, inner) or _counter_division(div, fn) is not None \
            or _counter_division(inner, fn) is not None:
        return ""  # TABLE's or RCP's: a reciprocal of the loop's counter
    if not side_effect_free(plan.source, s):
        return f"`{text(s)[:40]}` is read twice folded: it must be free of side effects"
    if local is not None:
        why = _local_legal(plan, right, local, s, types)
        if why:
            return why
    return fold


def _sum_of_quotient(den: Node) -> tuple[Node, str, Node, bool] | None:
    """``(q, op, r / s, quotient_left)`` of ``q op r / s`` or ``r / s op q`` (``op`` + or
    -), the right term taken where both are quotients; None for any other divisor."""
    if den.type != "binary_expression":
        return None
    op = text(den.child_by_field_name("operator"))
    a, b = den.child_by_field_name("left"), den.child_by_field_name("right")
    if op not in ("+", "-") or a is None or b is None:
        return None
    for other, term, left in ((a, b, False), (b, a, True)):
        quotient = unparenthesized(term)
        if quotient.type == "binary_expression" and \
                text(quotient.child_by_field_name("operator")) == "/" and \
                quotient.child_by_field_name("right") is not None:
            return other, op, quotient, left
    return None


def _definition(name: Node, fn: Node) -> Node | None:
    """The value written to the local ``name`` reads, where it is written exactly once
    (its declaration's value or one ``=``), read only at ``name`` and its address never
    taken; None otherwise."""
    ident = text(name)
    values: list[Node] = []
    reads = 0
    for n in walk(fn):
        if n.type == "init_declarator" and text(n.child_by_field_name("declarator")) == ident:
            value = n.child_by_field_name("value")
            if value is not None:
                values.append(value)
        elif n.type == "identifier" and text(n) == ident:
            write = writer(n, address=True)
            if write is None:
                reads += not _declarator(n)
            elif write.type == "assignment_expression" and \
                    text(write.child_by_field_name("operator")) == "=" and \
                    (value := write.child_by_field_name("right")) is not None:
                values.append(value)
            else:
                return None  # a compound assignment, a step, an address taken
    return values[0] if len(values) == 1 and reads == 1 else None


def _declarator(ident: Node) -> bool:
    """``ident`` names the variable a declaration (or a parameter's) declares."""
    up = ident.parent
    return up is not None and up.type in ("init_declarator", "declaration",
                                          "parameter_declaration") and \
        up.child_by_field_name("declarator") == ident


def _local_legal(plan: Plan, use: Node, value: Node, s: Node,
                 types: dict[str, str]) -> str:
    """Why the local ``use`` reads (its one write ``value``) cannot be folded; "" where it
    can: a ``double`` local, written by a statement of the block the division is in, the
    division after it with no loop between, no name of ``s`` written (or passed to a call
    that might write it through a reference) or declared again between them."""
    ident = text(unparenthesized(use))
    if "double" not in types.get(ident, "").split():
        return f"`{ident}` is not declared double (its rounding is part of the quotient)"
    stmt = value
    while stmt.parent is not None and stmt.parent.type != "compound_statement":
        stmt = stmt.parent
    block = stmt.parent
    if block is None or not (block.start_byte <= use.start_byte < block.end_byte) or \
            use.start_byte < stmt.end_byte:
        return f"`{ident}` is written outside the block of the division, or after it"
    up = use.parent
    while up is not None and up != block:
        if up.type in LOOPS or up.type == "lambda_expression":
            return f"a loop lies between `{ident}`'s write (line {line(stmt)}) and its " \
                "division"
        up = up.parent
    names = {text(n) for n in walk(s) if n.type == "identifier"}
    pure = pure_calls(plan.source)
    for n in walk(block):
        if not (stmt.end_byte <= n.start_byte < use.start_byte):
            continue
        written = n.child_by_field_name("left") if n.type == "assignment_expression" else \
            n.child_by_field_name("argument") if n.type == "update_expression" else \
            n.child_by_field_name("declarator") if n.type == "init_declarator" else None
        if written is not None and text(unparenthesized(written)) in names:
            return f"`{text(written)}`, which `{text(s)[:40]}` reads, is written or " \
                f"declared again between `{ident}`'s write and its division (line {line(n)})"
        if n.type == "call_expression" and \
                text(n.child_by_field_name("function")) not in pure and \
                any(c.type == "identifier" and text(c) in names
                    for c in (n.child_by_field_name("arguments") or n).named_children):
            return f"`{text(n)[:40]}` may write a name `{text(s)[:40]}` reads (line {line(n)})"
    return ""


def _rewrite(rw: Rewriter, fold: Fold) -> None:
    """``p`` -> ``p WB_DFOLD_MUL(s)`` (lazily: ``s`` renders with the names a transform
    before gave it, an item's own; ``p``, the left operand of ``/``, binds tighter than
    the ``*`` the macro pastes, or is parenthesized) and the sum -> ``WB_DFOLD_DEN(q, op, r,
    s)``."""
    p, s, inner, other, total = fold.dividend, fold.s, fold.inner, fold.other, fold.sum
    r = inner.child_by_field_name("left")
    assert r is not None

    # the spans between the operands go, with any parentheses around the quotient
    if fold.quotient_left:  # r / s op q
        spans = [(total.start_byte, r.start_byte, "WB_DFOLD_DEN_L("),
                 (r.end_byte, s.start_byte, ", "),
                 (s.end_byte, other.start_byte, f", {fold.op}, "),
                 (other.end_byte, total.end_byte, ")")]
    else:  # q op r / s
        spans = [(total.start_byte, other.start_byte, "WB_DFOLD_DEN("),
                 (other.end_byte, r.start_byte, f", {fold.op}, "),
                 (r.end_byte, s.start_byte, ", "),
                 (s.end_byte, total.end_byte, ")")]
    own = [Edit(start, end, words) for start, end, words in spans]

    def factor(w: Rewriter) -> str:
        with w.keeping(lambda e: e not in own):  # s without the macro's ")" at its end
            return f" WB_DFOLD_MUL({w.text(s)})"

    rw.replace_span(p.end_byte, p.end_byte, make=factor)  # p * (s) / den: p binds first
    for start, end, words in spans:
        rw.replace_span(start, end, words)
