"""CTZ: a loop that strips factors of two one bit a round, as one shift by the trailing zeros.

Integer kernels (Stein's binary gcd, a binary extended Euclid, a bit scan) strip the low zero
bits of a value one round at a time::

    while ((u & 1u) == 0) u >>= 1;
    while (((u | v) & 1) == 0) { u >>= 1; v >>= 1; ++shift; }
    while (x % 2 == 0) { x /= 2; steps++; }

Each round is a test, a shift and a branch; the number of rounds is the count of trailing
zeros of the tested value, which the GPU computes in two instructions (a bit reverse and a
leading-zero count). With ``CTZ = 1`` such a loop becomes::

    { const int wb_tz0 = WB_CTZ32(u | v); u >>= wb_tz0; v >>= wb_tz0; shift += wb_tz0; }

``CTZ = 0`` is the loop as written (kept under ``#else``).

A loop is read (``while`` or a ``for`` with no initializer) when its condition tests the low
bit of one variable or of an OR of variables (``(x & 1) == 0``, ``(x & 1u) == 0u``, ``!(x &
1)``, ``x % 2 == 0``, ``!(x % 2)``, the zero on either side; after or before ``x != 0 &&``),
and its body (with a ``for``'s step) only halves variables (``x >>= 1``, ``x = x >> 1``,
``x /= 2``, ``x = x / 2``), each once, every tested variable among them, and steps counters
by one (``++c``, ``c++``, ``c += 1``, ``c = c + 1``). Each halved variable is an unsigned
integer local or parameter of the function, or a signed local :mod:`.bitloops_types` proves
never negative (else refused with the line: halving a negative value by a shift and by ``/
2`` differ), no narrower than the tested value (a 32-bit value shifted by a 64-bit count
could shift past its width); the counters are integers; a reference among several variables
is refused (two references to one object would step it twice a round). Then the loop runs
exactly ``ctz(tested)`` rounds when it ends: the shifts by that count and the counters'
steps by it compute what it does. A zero tested value never ends the loop as written
(unless guarded by ``x != 0 &&``, which ends it at once); the count is then 0
(``__clz(__brev(0)) = 32``, masked to 0): nothing is shifted or counted, so the replacement
shifts no value by its width or more (no undefined behaviour), and the guarded loop's
result is matched exactly.

The loops are read in the kernel's body and in the ``__device__`` helpers it calls
(:mod:`.ilp_fastmath_helpers`' scope). Every loop whose condition tests a low bit and which
is not rewritten gets a ``CTZ: not applied: reason (line N)`` note.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import int_value, line, text, unparenthesized, walk, write_target
from workbench.templater.bitloops_types import int_type, never_negative
from workbench.templater.ilp_fastmath_helpers import helper_scope
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Rewriter
from workbench.templater.vector_access import Illegal

NAME = "CTZ"
#: The counts: trailing zeros of a 32- and a 64-bit value, 0 for a zero value (the bit
#: reverse's leading zeros are the width there, masked to 0: a shift by 0, never by the width).
_MACROS = {32: "#define WB_CTZ32(x) (__clz(__brev((unsigned)(x))) & 31)",
           64: "#define WB_CTZ64(x) (__clzll(__brevll((unsigned long long)(x))) & 63)"}


@dataclass(frozen=True)
class BitLoop:
    """A loop stripping the low zero bits of ``tested`` (their OR) a round: the variables it
    halves (every tested one among them) and the counters it steps by one, as nodes naming
    them (render the current name), and the width of the count."""

    loop: Node
    tested: tuple[Node, ...]
    halved: tuple[Node, ...]
    counters: tuple[Node, ...]
    bits: int


def apply_bitloops(plan: Plan) -> bool:
    """Give every bit-a-round loop (see the module doc) a CTZ form; True when one did."""
    if NAME in plan.params:
        return False
    scope = helper_scope(plan)
    found: list[BitLoop] = []
    for body in scope.functions.values():
        for loop in walk(body):
            tested = _tested(loop)
            if tested is None:
                continue
            try:
                found.append(_bit_loop(loop, tested))
            except Illegal as exc:
                plan.note(NAME, False, exc.reason, exc.node or loop)
    for name, why, fn in scope.refused:
        for loop in walk(fn):
            if _tested(loop) is not None:
                plan.note(NAME, False, f"the loop in `{name}`: {why}", loop)
    if not found:
        return False
    for k, bits in enumerate(found):
        _rewrite(plan.rw, bits, k)
    for width in sorted({b.bits for b in found}):
        plan.helper(f"#if {NAME}\n{_MACROS[width]}\n#endif")
    first = found[0].loop
    plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: each loop stripping factors of two a bit a "
                                         "round as one shift by the count of trailing zeros "
                                         "(as written: 0)"},
                   f"{line(first)}: {text(first).splitlines()[0][:60]}")
    for b in found:
        plan.note(NAME, True, f"`{' | '.join(text(t) for t in b.tested)}`'s trailing zeros "
                  f"({b.bits}-bit) in one shift of {', '.join(text(h) for h in b.halved)}"
                  + (f", counted in {', '.join(text(c) for c in b.counters)}"
                     if b.counters else ""), b.loop)
    return True


def _tested(loop: Node) -> list[Node] | None:
    """The variables whose OR's low bit ``loop``'s condition tests for zero (a ``while``, or
    a ``for``), else None: not a loop of the family."""
    if loop.type == "while_statement":
        clause = loop.child_by_field_name("condition")
        values = [c for c in clause.named_children if c.type != "comment"] if clause else []
        cond = values[0] if len(values) == 1 else None
    elif loop.type == "for_statement":
        cond = loop.child_by_field_name("condition")
    else:
        return None
    if cond is None or cond.type in ("declaration", "init_statement"):
        return None
    return _zero_bit_test(cond)


def _zero_bit_test(cond: Node) -> list[Node] | None:
    """:func:`_tested`'s reading of a condition; ``v != 0 && (v & 1) == 0`` (``v`` the
    tested value, either order) too: a zero ``v`` then ends the loop at once, as the count
    0 does."""
    e = unparenthesized(cond)
    if e.type == "binary_expression" and text(e.child_by_field_name("operator")) == "&&":
        sides = [e.child_by_field_name("left"), e.child_by_field_name("right")]
        for test, guard in (sides, sides[::-1]):
            tested = _zero_bit_test(test) if test is not None else None
            if tested is not None and guard is not None and \
                    _nonzero_of(guard) == sorted(text(t) for t in tested):
                return tested
        return None
    if e.type == "unary_expression" and text(e.child_by_field_name("operator")) == "!":
        arg = e.child_by_field_name("argument")
        return None if arg is None else _low_bit(arg)
    if e.type == "binary_expression" and text(e.child_by_field_name("operator")) == "==":
        left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
        if int_value(right) == 0 and left is not None:
            return _low_bit(left)
        if int_value(left) == 0 and right is not None:
            return _low_bit(right)
    return None


def _nonzero_of(node: Node) -> list[str] | None:
    """The variables (sorted) of ``v != 0``, ``0 != v`` or ``v`` (``v`` a variable or an OR
    of variables), else None."""
    e = unparenthesized(node)
    if e.type == "binary_expression" and text(e.child_by_field_name("operator")) == "!=":
        left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
        e = left if int_value(right) == 0 and left is not None else \
            right if int_value(left) == 0 and right is not None else e
    names = _ored(e)
    return None if names is None else sorted(text(n) for n in names)


def _low_bit(node: Node) -> list[Node] | None:
    """The variables of ``x & 1``, ``1 & x``, ``x % 2`` (``x`` a variable or an OR of
    variables), else None."""
    e = unparenthesized(node)
    if e.type != "binary_expression":
        return None
    op = text(e.child_by_field_name("operator"))
    left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
    if left is None or right is None:
        return None
    if op == "&" and int_value(left) == 1:
        left, right = right, left
    if not ((op == "&" and int_value(right) == 1) or (op == "%" and int_value(right) == 2)):
        return None
    return _ored(left)


def _ored(node: Node) -> list[Node] | None:
    e = unparenthesized(node)
    if e.type == "identifier":
        return [e]
    if e.type == "binary_expression" and text(e.child_by_field_name("operator")) == "|":
        left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
        parts = [_ored(p) for p in (left, right) if p is not None]
        if len(parts) == 2 and parts[0] is not None and parts[1] is not None:
            return parts[0] + parts[1]
    return None


def _bit_loop(loop: Node, tested: list[Node]) -> BitLoop:
    """The loop read as a :class:`BitLoop`, or Illegal naming what does not fit."""
    steps = _steps(loop)
    halved: dict[str, Node] = {}
    counters: dict[str, Node] = {}
    for step in steps:
        kind, target = _step(step)
        name = text(target)
        if name in halved or name in counters:
            raise Illegal(f"`{name}` is stepped twice a round", step)
        (halved if kind == "half" else counters)[name] = target
    names = [text(t) for t in tested]
    for t in tested:
        if text(t) not in halved:
            raise Illegal(f"the loop tests `{text(t)}`'s low bit but never halves it", t)
        if text(t) in counters:
            raise Illegal(f"the loop tests `{text(t)}` and counts in it", t)
    fn = _function(loop)
    types = {name: int_type(fn, name, node) for name, node in {**halved, **counters}.items()}
    bits = max(max(32, types[n].bits) for n in names)  # narrower values count as int
    shared = [n for n, t in types.items() if t.reference]
    if shared and len(types) > 1:  # f(unsigned& u, unsigned& v) called as f(x, x)
        raise Illegal(f"`{shared[0]}` is a reference: it may name the object another "
                      "variable of the round names (each round would step it twice)",
                      {**halved, **counters}[shared[0]])
    for name, node in halved.items():
        typed = types[name]
        if not typed.unsigned:
            never_negative(fn, name, typed, node)
        if max(32, typed.bits) < bits:
            raise Illegal(f"`{name}` is {typed.bits}-bit while the count of `"
                          f"{' | '.join(names)}` reaches {bits - 1}: one shift could pass "
                          "its width", node)
    return BitLoop(loop, tuple(tested), tuple(halved.values()), tuple(counters.values()),
                   bits)


def _steps(loop: Node) -> list[Node]:
    """The expressions a round runs: the body's expression statements (and a ``for``'s
    update), or Illegal for anything else."""
    body = loop.child_by_field_name("body")
    out: list[Node] = []
    if loop.type == "for_statement":
        if loop.child_by_field_name("initializer") is not None:
            raise Illegal("the `for` declares or sets variables before its rounds", loop)
        update = loop.child_by_field_name("update")
        if update is not None:
            out += _commas(update)
    statements = [body] if body is not None and body.type != "compound_statement" else \
        [c for c in (body.named_children if body is not None else []) if c.type != "comment"]
    for s in statements:
        if s.type != "expression_statement":
            raise Illegal(f"a round runs `{text(s).splitlines()[0][:50]}`, not only halvings "
                          "and counter steps", s)
        if s.named_child_count:
            out += _commas(s.named_children[0])
    return out


def _commas(node: Node) -> list[Node]:
    e = unparenthesized(node)
    if e.type == "comma_expression":
        left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
        return [*(_commas(left) if left else []), *(_commas(right) if right else [])]
    return [e]


def _step(expr: Node) -> tuple[str, Node]:
    """("half", x) for a halving of ``x``, ("count", c) for a step of ``c`` by one; else
    Illegal."""
    target = write_target(expr)
    if target is None or target.type != "identifier":
        raise Illegal(f"a round runs `{text(expr)[:50]}`, not only halvings of variables and "
                      "counter steps", expr)
    name = text(target)
    if expr.type == "update_expression":
        if text(expr).strip().startswith("++") or text(expr).strip().endswith("++"):
            return "count", target
        raise Illegal(f"`{text(expr)}` steps down", expr)
    op = text(expr.child_by_field_name("operator"))
    right = expr.child_by_field_name("right")
    if (op == ">>=" and int_value(right) == 1) or (op == "/=" and int_value(right) == 2):
        return "half", target
    if op == "+=" and int_value(right) == 1:
        return "count", target
    value = unparenthesized(right) if right is not None else None
    if op == "=" and value is not None and value.type == "binary_expression":
        vop = text(value.child_by_field_name("operator"))
        left, other = value.child_by_field_name("left"), value.child_by_field_name("right")
        named = text(unparenthesized(left)) if left is not None else ""
        if named == name and ((vop == ">>" and int_value(other) == 1) or
                              (vop == "/" and int_value(other) == 2)):
            return "half", target
        if vop == "+" and {int_value(left), int_value(other)} >= {1} and \
                name in (text(unparenthesized(left)) if left else "",
                         text(unparenthesized(other)) if other else ""):
            return "count", target
    raise Illegal(f"a round runs `{text(expr)[:50]}`, not a halving or a step by one", expr)


def _function(node: Node) -> Node:
    up = node
    while up.parent is not None and up.type != "function_definition":
        up = up.parent
    return up


def _rewrite(rw: Rewriter, bits: BitLoop, k: int) -> None:
    """``#if CTZ`` (one shift by the count) ``#else`` (the loop) ``#endif``: lazy, so the
    names other transforms give the variables (ITEMS_PER_THREAD's per-item ones) appear in
    both forms."""
    def make(rw: Rewriter) -> str:
        count = f"wb_tz{k}"
        value = " | ".join(rw.text(t) for t in bits.tested)
        pad = " " * bits.loop.start_point.column
        out = [f"\n#if {NAME}\n{pad}{{  // a zero `{value}` (no end as written) strips "
               f"nothing\n{pad}    const int {count} = WB_CTZ{bits.bits}({value});\n"]
        out += [f"{pad}    {rw.text(h)} >>= {count};\n" for h in bits.halved]
        out += [f"{pad}    {rw.text(c)} += {count};\n" for c in bits.counters]
        out.append(f"{pad}}}\n#else\n{pad}")
        return "".join(out)

    rw.replace_span(bits.loop.start_byte, bits.loop.start_byte, make=make)
    rw.insert(bits.loop.end_byte, f"\n#endif  // {NAME}\n")
