"""Helpers of the position that are safe at any position: each read clamps its coordinates
into the array first (issue 28, set 14's median3x3_clamp).

A window gather's helper ``F(.., Y, .., X, ..)`` (:mod:`.gather_stage`) is *total* when it
reads its array inside the array for every integer ``Y`` and ``X``: ``y = y < 0 ? 0 : (y >=
h_ ? h_ - 1 : y); return data_[(size_t)y * w_ + x];``, ``src[clampi(r, 0, rows - 1) * cols
+ clampi(c, 0, cols - 1)]``, ``min(max(r, 0), h - 1)``. Then a tile of ``F`` needs no load
test: every position of it may be read, whether or not an output of the block uses it.

The proof is interval arithmetic over the helper's body with symbolic ends (integer
polynomials over the kernel's names): the coordinates start unbounded, the other arguments
are bound through the call (and, for a method, through the object's constructor: its
member initializers of its parameters, the declaration's arguments) to the kernel's values;
``c ? a : b`` narrows the compared name on each side (``v < e``, ``v >= e``, their mirrors)
and joins both; ``min``/``max``, ``+``, ``-``, a product by a kernel scalar, casts, and calls
of the file's helpers (inlined) follow. Ends are compared where their difference is a
constant, or a sum of kernel scalars (each taken as at least 1: the guard the caller emits)
plus a constant. Every read ``p[i]`` must be of a kernel pointer at ``0 <= i <= R * C - 1``,
``R`` and ``C`` the extents the kernel's bounds check puts on the point's row and column
(the kernel reads its own position at every output, so the array holds ``R * C``
elements). Any other statement, read or call: not proven, and the stage keeps its test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.core.errors import WorkbenchError
from workbench.templater.analysis import binary, text, walk
from workbench.templater.plan import Plan
from workbench.templater.stencil import Poly, poly_of

#: Helper calls inlined inside one another at most.
_DEPTH = 4


@dataclass(frozen=True)
class _Span:
    """An integer between ``lo`` and ``hi`` (None: unbounded on that side)."""
    lo: Poly | None
    hi: Poly | None


_ANY = _Span(None, None)


@dataclass(frozen=True)
class _Ptr:
    name: str  # the kernel pointer it is


@dataclass
class _Proof:
    """What the walk needs and found: the kernel's scalars (taken as >= 1 where used), the
    array's last element, and the scalars the proof took as >= 1."""
    plan: Plan
    scalars: frozenset[str]
    last: Poly
    used: set[str] = field(default_factory=set)


class _NotTotal(WorkbenchError):
    """The helper's reads are not proven inside the array (internal: caught in
    total_helper, which answers None)."""

    def __init__(self) -> None:
        super().__init__("a read of the helper is not proven inside the array")


def total_helper(plan: Plan, call: Node, row: Node, col: Node, values: dict[str, Node],
                 obj_decl: Node | None, extents: tuple[Poly, Poly]) -> tuple[str, ...] | None:
    """The kernel scalars to check ``>= 1`` ahead of reading ``call`` at any position (its
    ``row`` and ``col`` arguments free; ``values``: the kernel's single-assignment locals;
    ``obj_decl``: the object's declaration for a method call), or None where the helper is
    not proven to read inside the ``extents[0] x extents[1]`` array everywhere."""
    scalars = frozenset(p.name for p in plan.kernel.params if not p.is_pointer and
                        (p.dtype or "")[:1] in ("i", "u"))
    last = _plus(_times(extents[0], extents[1]), {(): -1})
    proof = _Proof(plan, scalars, last)
    fn = call.child_by_field_name("function")
    try:
        env: dict[str, _Span | _Ptr] = {}
        if fn is not None and fn.type == "field_expression":
            if obj_decl is None:
                return None
            name = text(fn.child_by_field_name("field"))
            env = _members(proof, obj_decl, values)
        else:
            name = text(fn)
        args = [_outer(proof, a, values) if a not in (row, col) else _ANY
                for a in _args(call)]
        _inline(proof, name, args, env, 0)
    except _NotTotal:
        return None
    return tuple(sorted(proof.used))


def _args(call: Node) -> list[Node]:
    node = call.child_by_field_name("arguments")
    return [] if node is None else [a for a in node.named_children if a.type != "comment"]


def _outer(proof: _Proof, arg: Node, values: dict[str, Node]) -> _Span | _Ptr:
    """A kernel-level argument: a kernel pointer, or an integer polynomial of the kernel's
    names (its single-assignment locals expanded)."""
    if proof.plan.pointer(text(arg)):
        return _Ptr(text(arg))
    p = poly_of(arg, values)
    return _Span(p, p)


def _members(proof: _Proof, decl: Node, values: dict[str, Node]) -> dict[str, _Span | _Ptr]:
    """The object's members from its constructor's initializers of the declaration's
    arguments (``const C img(in, h, w);`` and ``C(const float* d, int h, int w) : data_(d),
    h_(h), w_(w) {}``)."""
    ctype = text(decl.child_by_field_name("type"))
    d = decl.child_by_field_name("declarator")
    params = d.child_by_field_name("parameters") if d is not None else None
    args = [] if params is None else [a for a in params.named_children if a.type != "comment"]
    ctor = _definition(proof, ctype)
    names = _params(ctor)
    if len(names) != len(args):
        raise _NotTotal
    env: dict[str, _Span | _Ptr] = {n: _outer(proof, a.named_children[0], values)
                                    for n, a in zip(names, args, strict=True)}
    members: dict[str, _Span | _Ptr] = {}
    for init in (n for n in walk(ctor) if n.type == "field_initializer"):
        parts = [c for c in init.named_children if c.type != "comment"]
        inits = [a for a in parts[-1].named_children if a.type != "comment"] \
            if len(parts) == 2 and parts[-1].type == "argument_list" else []
        if len(inits) != 1:
            raise _NotTotal
        members[text(parts[0])] = _value(proof, inits[0], env, 0)
    return members


def _definition(proof: _Proof, name: str) -> Node:
    fn = proof.plan.source.function_definitions().get(name)
    if fn is None:
        raise _NotTotal
    return fn


def _params(fn: Node) -> list[str]:
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    params = d.child_by_field_name("parameters") if d is not None else None
    out = []
    for p in [] if params is None else params.named_children:
        if p.type != "parameter_declaration":
            raise _NotTotal
        inner = p.child_by_field_name("declarator")
        while inner is not None and inner.type in ("pointer_declarator", "reference_declarator"):
            inner = inner.child_by_field_name("declarator") or \
                next((c for c in inner.named_children if c.type == "identifier"), None)
        if inner is None or inner.type != "identifier":
            raise _NotTotal
        out.append(text(inner))
    return out


def _inline(proof: _Proof, name: str, args: list[_Span | _Ptr],
            members: dict[str, _Span | _Ptr], depth: int) -> _Span | _Ptr:
    """The value ``name``'s body returns at ``args``, its reads checked on the way."""
    if depth > _DEPTH:
        raise _NotTotal
    fn = _definition(proof, name)
    names = _params(fn)
    if len(names) != len(args):
        raise _NotTotal
    env = {**members, **dict(zip(names, args, strict=True))}
    body = fn.child_by_field_name("body")
    for stmt in [] if body is None else body.named_children:
        if stmt.type == "comment":
            continue
        if stmt.type == "return_statement":
            value = next((c for c in stmt.named_children if c.type != "comment"), None)
            if value is None:
                raise _NotTotal
            return _value(proof, value, env, depth)
        if stmt.type == "declaration":
            for d in stmt.children_by_field_name("declarator"):
                if d.type != "init_declarator":
                    raise _NotTotal
                init = d.child_by_field_name("value")
                env[text(d.child_by_field_name("declarator"))] = \
                    _value(proof, init, env, depth) if init is not None else _ANY
            continue
        parts = stmt.named_children[0] if stmt.type == "expression_statement" and \
            stmt.named_children else None
        if parts is None or parts.type != "assignment_expression" or \
                text(parts.child_by_field_name("operator")) != "=" or \
                parts.child_by_field_name("left").type != "identifier":  # type: ignore[union-attr]
            raise _NotTotal
        env[text(parts.child_by_field_name("left"))] = \
            _value(proof, parts.child_by_field_name("right"), env, depth)  # type: ignore[arg-type]
    raise _NotTotal  # no return: no value


def _value(proof: _Proof, node: Node, env: dict[str, _Span | _Ptr], depth: int
           ) -> _Span | _Ptr:
    t = node.type
    if t == "parenthesized_expression" and node.named_child_count == 1:
        return _value(proof, node.named_children[0], env, depth)
    if t == "number_literal":
        try:
            v = int(text(node).rstrip("uUlL"), 0)
        except ValueError as exc:
            raise _NotTotal from exc
        return _Span({(): v} if v else {}, {(): v} if v else {})
    if t == "identifier" or (t == "field_expression" and
                             text(node.child_by_field_name("argument")) == "this"):
        name = text(node) if t == "identifier" else text(node.child_by_field_name("field"))
        if name not in env:
            raise _NotTotal
        return env[name]
    if t == "cast_expression":
        inner = _value(proof, node.child_by_field_name("value"), env, depth)  # type: ignore[arg-type]
        ctype = text(node.child_by_field_name("type"))
        if ("unsigned" in ctype or "size_t" in ctype) and \
                (not isinstance(inner, _Span) or not _le(proof, {}, inner.lo)):
            raise _NotTotal  # a value that may be negative cast to unsigned: not followed
        return inner
    if t == "unary_expression" and text(node.child_by_field_name("operator")) == "-":
        inner = _value(proof, node.child_by_field_name("argument"), env, depth)  # type: ignore[arg-type]
        if not isinstance(inner, _Span):
            raise _NotTotal
        return _Span(_neg(inner.hi), _neg(inner.lo))
    if t == "conditional_expression":
        return _select(proof, node, env, depth)
    if t == "subscript_expression":
        return _read(proof, node, env, depth)
    if t == "call_expression":
        fn = text(node.child_by_field_name("function")).removeprefix("std::").lstrip(":")
        args = [_value(proof, a, env, depth) for a in _args(node)]
        if fn in ("min", "max") and len(args) == 2:
            a, b = _span(args[0]), _span(args[1])
            if fn == "min":  # at most either's upper end
                return _Span(_lower(proof, a.lo, b.lo), _either(proof, a.hi, b.hi, _lower))
            return _Span(_either(proof, a.lo, b.lo, _upper), _upper(proof, a.hi, b.hi))
        return _inline(proof, fn, args, {}, depth + 1)
    parts = binary(node) if t == "binary_expression" else None
    if parts is not None and parts[1] in ("+", "-", "*"):
        a = _span(_value(proof, parts[0], env, depth))
        b = _span(_value(proof, parts[2], env, depth))
        if parts[1] == "+":
            return _Span(_add(a.lo, b.lo), _add(a.hi, b.hi))
        if parts[1] == "-":
            return _Span(_add(a.lo, _neg(b.hi)), _add(a.hi, _neg(b.lo)))
        return _product(proof, a, b)
    raise _NotTotal


def _span(v: _Span | _Ptr) -> _Span:
    if not isinstance(v, _Span):
        raise _NotTotal
    return v


def _read(proof: _Proof, node: Node, env: dict[str, _Span | _Ptr], depth: int) -> _Span:
    """A read ``p[i]``: ``p`` a kernel pointer, ``i`` inside its ``R * C`` elements."""
    base = _value(proof, node.child_by_field_name("argument"), env, depth)  # type: ignore[arg-type]
    index = node.child_by_field_name("indices")
    inner = [c for c in index.named_children if c.type != "comment"] if index is not None \
        else []
    if not isinstance(base, _Ptr) or len(inner) != 1:
        raise _NotTotal
    at = _span(_value(proof, inner[0], env, depth))
    if at.lo is None or at.hi is None or not _le(proof, {}, at.lo) or \
            not _le(proof, at.hi, proof.last):
        raise _NotTotal
    return _ANY


def _select(proof: _Proof, node: Node, env: dict[str, _Span | _Ptr], depth: int) -> _Span:
    """``c ? a : b``: each side with the compared name narrowed by ``c`` (or its negation)."""
    cond = node.child_by_field_name("condition")
    yes, no = node.child_by_field_name("consequence"), node.child_by_field_name("alternative")
    if cond is None or yes is None or no is None:
        raise _NotTotal
    if any(n.type in ("subscript_expression", "call_expression", "pointer_expression")
           for n in walk(cond)):
        raise _NotTotal  # a read or a call in the condition: not followed
    while cond.type == "parenthesized_expression" and cond.named_child_count == 1:
        cond = cond.named_children[0]
    narrowed = _narrow(proof, cond, env, depth)
    a = _span(_value(proof, yes, {**env, **narrowed[0]}, depth))
    b = _span(_value(proof, no, {**env, **narrowed[1]}, depth))
    return _Span(_lower(proof, a.lo, b.lo), _upper(proof, a.hi, b.hi))


#: ``v OP e`` -> (upper-bound shift where true, lower-bound shift where false) and mirrors.
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _narrow(proof: _Proof, cond: Node, env: dict[str, _Span | _Ptr], depth: int
            ) -> tuple[dict[str, _Span], dict[str, _Span]]:
    """The name ``cond`` compares, narrowed where it holds and where it does not."""
    parts = binary(cond)
    if parts is None or parts[1] not in _FLIP:
        return {}, {}
    left, op, right = parts
    found = _narrowable(proof, left, right, env, depth)
    if found is None:
        left, op, right = right, _FLIP[op], left
        found = _narrowable(proof, left, right, env, depth)
    if found is None:
        return {}, {}
    name, current, e = text(left), found[0], found[1]
    # v < e: hi e - 1 | lo e;  v <= e: hi e | lo e + 1;  v > e: lo e + 1 | hi e;  v >= e ...
    below = {"<": _add(e, {(): -1}), "<=": e}
    above = {">": _add(e, {(): 1}), ">=": e}
    if op in below:
        return ({name: _Span(current.lo, below[op])},
                {name: _Span(_add(below[op], {(): 1}), current.hi)})
    return ({name: _Span(above[op], current.hi)},
            {name: _Span(current.lo, _add(above[op], {(): -1}))})


def _narrowable(proof: _Proof, name: Node, bound: Node, env: dict[str, _Span | _Ptr],
                depth: int) -> tuple[_Span, Poly] | None:
    """``name``'s span and ``bound``'s one value where ``name`` is a local of a range that
    one value would narrow (not itself one value)."""
    current = env.get(text(name))
    if name.type != "identifier" or not isinstance(current, _Span) or \
            (current.lo is not None and current.lo == current.hi):
        return None
    value = _span(_value(proof, bound, env, depth))
    return (current, value.lo) if value.lo is not None and value.lo == value.hi else None


def _product(proof: _Proof, a: _Span, b: _Span) -> _Span:
    """``a * b`` where one side is one value at least 0 and the other is bounded."""
    for fixed, other in ((a, b), (b, a)):
        if fixed.lo is not None and fixed.lo == fixed.hi and _le(proof, {}, fixed.lo) and \
                other.lo is not None and other.hi is not None:
            return _Span(_mul(other.lo, fixed.lo), _mul(other.hi, fixed.lo))
    raise _NotTotal


def _le(proof: _Proof, p: Poly | None, q: Poly | None) -> bool:
    """``p <= q`` for every value of the kernel scalars at least 1 (those used recorded)."""
    if p is None or q is None:
        return False
    d = _plus(q, {m: -c for m, c in p.items()})
    rest = {m: c for m, c in d.items() if m}
    if any(len(m) != 1 or m[0] not in proof.scalars or c < 0 for m, c in rest.items()):
        return False
    if sum(rest.values()) + d.get((), 0) < 0:
        return False
    proof.used.update(m[0] for m in rest)
    return True


def _lower(proof: _Proof, p: Poly | None, q: Poly | None) -> Poly | None:
    return p if _le(proof, p, q) else q if _le(proof, q, p) else None


def _upper(proof: _Proof, p: Poly | None, q: Poly | None) -> Poly | None:
    return q if _le(proof, p, q) else p if _le(proof, q, p) else None


def _either(proof: _Proof, p: Poly | None, q: Poly | None,
            tighter: Callable[[_Proof, Poly | None, Poly | None], Poly | None]
            ) -> Poly | None:
    """An end both ``p`` and ``q`` bound (a min's upper end, a max's lower one): the
    ``tighter`` where they compare, else whichever is known."""
    best = tighter(proof, p, q)
    return best if best is not None else p if p is not None else q


def _add(p: Poly | None, q: Poly | None) -> Poly | None:
    return None if p is None or q is None else _plus(p, q)


def _plus(p: Poly, q: Poly) -> Poly:
    out = dict(p)
    for m, c in q.items():
        out[m] = out.get(m, 0) + c
    return {m: c for m, c in out.items() if c}


def _neg(p: Poly | None) -> Poly | None:
    return None if p is None else {m: -c for m, c in p.items()}


def _mul(p: Poly | None, q: Poly | None) -> Poly | None:
    return None if p is None or q is None else _times(p, q)


def _times(p: Poly, q: Poly) -> Poly:
    out: Poly = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            m = tuple(sorted(m1 + m2))
            out[m] = out.get(m, 0) + c1 * c2
    return {m: c for m, c in out.items() if c}
