"""fp32 math calls behind FAST_MATH (:mod:`.ilp_fastmath`), and ``sinf``/``cosf`` of one
argument as one ``sincosf``.

FAST_MATH 1 replaces each call below by CUDA's hardware approximation (one or two
special-function instructions instead of a range reduction, a polynomial and a slow path
for large arguments, which also splits the code into branches the compiler cannot
interleave across items). Their errors are larger (``__sinf`` about 2^-21.4 absolute on
[-pi, pi], more outside; ``__expf``/``__powf`` 2 + a few ulp growing with the argument), so
whether a kernel keeps within its folder's tolerance is the space-wide gate's question, at
every config. ``exp2f`` is not listed: CUDA's ``exp2f`` is already the hardware ``ex2``.

SINCOS: ``sinf(x)`` and ``cosf(x)`` of the same ``x`` become one ``sincosf(x, &s, &c)``.
Applied unconditionally, not as a knob: CUDA's ``sincosf`` does one range reduction and
evaluates the same two polynomials (the same constants in its PTX as ``sinf`` and ``cosf``,
nvcc 13.0) so the results are bit-identical, and it is never more work (about 135 PTX
instructions against 227 for the two calls): a knob would only spend search budget. Legal
where the analysis shows both calls see the same value: ``x`` free of side effects and
nothing in it assigned in the statements from the first call to the second; both calls in
one full expression or in two adjacent statements of one block (so under ITEMS_PER_THREAD
they run in the same item's turn); neither on a side of ``?:``, ``&&`` or ``||`` (it would
run where it did not). The ``sincosf`` runs first in the first call's full expression
(``(sincosf(x, &s, &c), expr)``); ``s`` and ``c`` are declared at the top of the function.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import strip, text, walk
from workbench.templater.item_state import statements
from workbench.templater.plan import Plan
from workbench.templater.purity import side_effect_free
from workbench.templater.table_terms import assigned_in

#: written call -> its hardware approximation (FAST_MATH 1)
FAST = {"sinf": "__sinf", "cosf": "__cosf", "tanf": "__tanf", "expf": "__expf",
        "exp10f": "__exp10f", "logf": "__logf", "log2f": "__log2f", "log10f": "__log10f",
        "powf": "__powf", "sincosf": "__sincosf"}
SIN, COS = "wb_sin", "wb_cos"


def fast_macros(names: set[str]) -> str:
    """``WB_F_sinf`` etc.: the written call at FAST_MATH 0, the intrinsic at 1."""
    on = "\n".join(f"#define WB_F_{n} {FAST[n]}" for n in sorted(names))
    off = "\n".join(f"#define WB_F_{n} {n}" for n in sorted(names))
    return f"#if FAST_MATH\n{on}\n#else\n{off}\n#endif"


def fast_calls(plan: Plan, body: Node, skip: set[tuple[int, int]]) -> list[str]:
    """Route every listed call in ``body`` (not a ``powf`` in ``skip``) through its
    ``WB_F_`` macro; the name of each call routed (once per call)."""
    found: list[str] = []
    for n in walk(body):
        callee = n.child_by_field_name("function") if n.type == "call_expression" else None
        if callee is None or text(callee) not in FAST or (n.start_byte, n.end_byte) in skip:
            continue
        plan.rw.replace(callee, f"WB_F_{text(callee)}")
        found.append(text(callee))
    return found


@dataclass(frozen=True)
class _Call:
    node: Node
    arg: str
    full: Node  # the full expression it is evaluated in
    position: int  # its statement's position in the block


def pair_sincos(plan: Plan, body: Node, fast: bool, first: int = 0) -> set[tuple[int, int]]:
    """Rewrite each legal ``sinf(x)``/``cosf(x)`` pair in the function ``body`` (see the
    module doc) to one ``sincosf`` (its temporaries numbered from ``first``); the spans of
    the calls paired."""
    pairs = 0
    paired: set[tuple[int, int]] = set()
    for block in [n for n in walk(body) if n.type == "compound_statement"]:
        stmts = statements(block)
        calls = [c for k, s in enumerate(stmts) for c in _trig_calls(plan, s, k)]
        used: set[int] = set()
        for a in calls:
            if id(a) in used:
                continue
            b = next((c for c in calls if id(c) not in used and c is not a and
                      c.arg == a.arg and _other(a) == _name(c) and
                      (c.position, c.node.start_byte) > (a.position, a.node.start_byte) and
                      c.position - a.position <= 1 and
                      not _changed(stmts[a.position:c.position + 1], a)), None)
            if b is None:
                continue
            used |= {id(a), id(b)}
            paired |= {(c.node.start_byte, c.node.end_byte) for c in (a, b)}
            _rewrite(plan, a, b, first + pairs, fast)
            pairs += 1
    if pairs:
        names = ", ".join(f"{SIN}{k}, {COS}{k}" for k in range(first, first + pairs))
        plan.rw.insert(body.start_byte + 1, f"\n  float {names};  // sincosf pairs")
    return paired


def _name(call: _Call) -> str:
    return text(call.node.child_by_field_name("function"))


def _other(call: _Call) -> str:
    return "cosf" if _name(call) == "sinf" else "sinf"


def _trig_calls(plan: Plan, stmt: Node, position: int) -> list[_Call]:
    out = []
    for full in _full_expressions(stmt):
        for n in walk(full):
            callee = n.child_by_field_name("function") if n.type == "call_expression" \
                else None
            args = n.child_by_field_name("arguments")
            if callee is None or text(callee) not in ("sinf", "cosf") or args is None:
                continue
            given = [a for a in args.named_children if a.type != "comment"]
            if len(given) == 1 and side_effect_free(plan.source, given[0]) and not _chosen(n, full):
                out.append(_Call(n, text(strip(given[0])), full, position))
    return out


def _full_expressions(stmt: Node) -> list[Node]:
    """The expressions a statement evaluates in order, each whole (an initializer, the
    expression of an expression statement, a returned value)."""
    if stmt.type == "declaration":
        values = [d.child_by_field_name("value") for d in
                  stmt.children_by_field_name("declarator") if d.type == "init_declarator"]
        return [v for v in values if v is not None and v.type != "initializer_list"]
    if stmt.type in ("expression_statement", "return_statement"):
        return [c for c in stmt.named_children if c.type != "comment"][:1]
    return []


def _chosen(node: Node, full: Node) -> bool:
    """``node`` is on a side of ``?:``, ``&&`` or ``||`` within ``full``."""
    up = node.parent
    while up is not None and up != full.parent:
        if up.type == "conditional_expression" or (
                up.type == "binary_expression" and
                text(up.child_by_field_name("operator")) in ("&&", "||")):
            return True
        up = up.parent
    return False


def _changed(stmts: list[Node], call: _Call) -> bool:
    """A name in the argument is assigned in the statements from the first call to the
    second."""
    args = call.node.child_by_field_name("arguments")
    names = {text(n) for n in walk(args) if n.type == "identifier"} if args else set()
    return any(names & assigned_in(s) for s in stmts)


def _rewrite(plan: Plan, first: _Call, second: _Call, k: int, fast: bool) -> None:
    rw = plan.rw
    args = first.node.child_by_field_name("arguments")
    assert args is not None
    arg = next(a for a in args.named_children if a.type != "comment")
    sincos = "WB_F_sincosf" if fast else "sincosf"
    rw.replace_span(first.full.start_byte, first.full.start_byte,
                    make=lambda r: f"({sincos}({r.text(arg)}, &{SIN}{k}, &{COS}{k}), ")
    rw.insert(first.full.end_byte, ")")
    for call in (first, second):
        # two edits, neither the call's whole span: a full expression that is the call
        # alone (rendered by its span, which skips an edit of exactly that span) still
        # shows the sincosf inserted around it
        name = f"{SIN if _name(call) == 'sinf' else COS}{k}"
        rw.replace_span(call.node.start_byte, call.node.end_byte - 1, name)
        rw.replace_span(call.node.end_byte - 1, call.node.end_byte, "")
