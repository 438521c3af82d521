"""The integer type and the sign of an index expression, as far as the source tells them:
when one index may stand for another's address arithmetic (:mod:`.pointer_locals`).

``(base + off)[k]`` steps the pointer twice; ``base[off + k]`` adds the two integers first,
in their common type. The two are the same element wherever that sum is the true one: both
signed (an overflow there is one as written too), the sum as wide as a pointer (it wraps as
the address does), or both never negative (``threadIdx.x + dx`` with ``dx`` counting up from
0). An unsigned 32-bit sum with a term that may be negative is not: ``threadIdx.x + (-1)``
wraps to 4294967295. :class:`Kinds` reads the kinds (``("u", 32)``) from the declarations of
the kernel's parameters and locals, the literals' suffixes, casts and C's usual conversions;
anything it cannot type is None, and then only the never-negative rule can hold.
"""

from __future__ import annotations

from collections.abc import Mapping

from tree_sitter import Node

from workbench.templater.analysis import builtin, text, walk, writer

#: (signedness "s" / "u", or "?" where unknown, bits) of an integer expression
Kind = tuple[str, int]

_QUALIFIERS = {"const", "volatile", "static", "register", "__restrict__", "__restrict",
               "constexpr"}
_TYPES: dict[str, Kind] = {
    **{t: ("s", 32) for t in ("int", "signed", "signed int", "int32_t", "short", "short int",
                              "char", "signed char", "unsigned char", "unsigned short",
                              "unsigned short int", "uint8_t", "uint16_t", "int8_t",
                              "int16_t", "bool")},  # narrower types promote to int
    **{t: ("u", 32) for t in ("unsigned", "unsigned int", "uint32_t", "uint")},
    **{t: ("s", 64) for t in ("long", "long int", "long long", "long long int", "int64_t",
                              "ptrdiff_t", "intptr_t", "ssize_t")},
    **{t: ("u", 64) for t in ("unsigned long", "unsigned long int", "unsigned long long",
                              "unsigned long long int", "uint64_t", "size_t", "uintptr_t")},
}
_GEOMETRY = ("threadIdx", "blockIdx", "blockDim", "gridDim")
_ARITHMETIC = ("+", "-", "*", "/", "%", "&", "|", "^")


def bare(node: Node) -> Node:
    """``node`` under parentheses (casts kept: they are part of the arithmetic)."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def sum_terms(node: Node) -> list[tuple[int, Node]]:
    """The signed terms of an additive chain, left to right (``a + (size_t)b * c - d``:
    (1, a), (1, (size_t)b * c), (-1, d)), parentheses and casts kept on each term."""
    e = bare(node)
    op = text(e.child_by_field_name("operator")) if e.type == "binary_expression" else ""
    left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
    if op not in ("+", "-") or left is None or right is None:
        return [(1, node)]
    return [*sum_terms(left), *((s if op == "+" else -s, t) for s, t in sum_terms(right))]


def type_kind(type_text: str) -> Kind | None:
    """The kind of a declared type's text (``const size_t``: ("u", 64)), else None."""
    words = [w for w in type_text.replace("*", " ").split() if w not in _QUALIFIERS]
    return _TYPES.get(" ".join(words))


def common(a: Kind | None, b: Kind | None) -> Kind | None:
    """The type C's usual arithmetic conversions give ``a`` op ``b`` (None: unknown; an
    unknown integer beside a 64-bit one is 64 bits wide, of a sign ``"?"`` unknown)."""
    if a is None or b is None:
        known = a or b
        return None if known is None or known[1] < 64 else \
            ("u" if known[0] == "u" else "?", 64)
    if a[1] != b[1]:
        return a if a[1] > b[1] else b  # the wider holds every value of the narrower
    return ("u", a[1]) if "u" in (a[0], b[0]) else ("s", a[1])


class Kinds:
    """The kinds and signs of a kernel's integer expressions: ``declared`` maps each name
    declared once to its type's text (a name declared twice with different types is left
    out), ``macros`` the integer macros' values, ``counters`` the names that never go
    negative (locals set once from a never-negative value, loop counters counting up from
    one)."""

    def __init__(self, body: Node, declared: Mapping[str, str], macros: Mapping[str, int]
                 ) -> None:
        self.declared = dict(declared)
        self.macros = dict(macros)
        self.counters: set[str] = set()
        _never_negative(body, self)

    def kind(self, node: Node) -> Kind | None:
        """The integer type of ``node``, else None."""
        t = node.type
        if t == "parenthesized_expression" and node.named_child_count == 1:
            return self.kind(node.named_children[0])
        if t == "number_literal":
            return _literal_kind(text(node))
        if t == "identifier":
            name = text(node)
            if name in self.macros:
                return ("s", 32)
            return type_kind(self.declared[name]) if name in self.declared else None
        if t == "field_expression":
            arg = node.child_by_field_name("argument")
            return ("u", 32) if arg is not None and text(arg) in _GEOMETRY else None
        if t == "cast_expression":
            ty = node.child_by_field_name("type")
            return type_kind(text(ty)) if ty is not None else None
        if t == "unary_expression":
            arg = node.child_by_field_name("argument")
            op = text(node.child_by_field_name("operator"))
            return None if arg is None or op == "!" else common(self.kind(arg), ("s", 32))
        if t == "conditional_expression":
            a, b = (node.child_by_field_name(f) for f in ("consequence", "alternative"))
            return None if a is None or b is None else common(self.kind(a), self.kind(b))
        if t == "binary_expression":
            a, b = node.child_by_field_name("left"), node.child_by_field_name("right")
            op = text(node.child_by_field_name("operator"))
            if a is None or b is None:
                return None
            if op in ("<<", ">>"):
                return common(self.kind(a), ("s", 32))  # the left operand, promoted
            return common(self.kind(a), self.kind(b)) if op in _ARITHMETIC else \
                ("s", 32)  # a comparison or a logical operator: an int
        if t == "call_expression" and text(node.child_by_field_name("function")) in \
                ("min", "max"):
            args = node.child_by_field_name("arguments")
            ks = [self.kind(a) for a in args.named_children] if args is not None else []
            return common(ks[0], ks[1]) if len(ks) == 2 else None
        return None

    def never_negative(self, node: Node) -> bool:
        """Whether ``node``'s value is never negative (as the source shows it)."""
        t = node.type
        kind = self.kind(node)
        if kind is not None and kind[0] == "u":
            return True
        if t == "parenthesized_expression" and node.named_child_count == 1:
            return self.never_negative(node.named_children[0])
        if t == "number_literal":
            return not text(node).startswith("-")
        if t == "identifier":
            name = text(node)
            return self.macros[name] >= 0 if name in self.macros else name in self.counters
        if t == "field_expression":
            return builtin(node, text(node.child_by_field_name("argument"))) is not None
        if t == "cast_expression":
            value = node.child_by_field_name("value")
            return value is not None and kind is not None and self.never_negative(value)
        if t == "binary_expression":
            a, b = node.child_by_field_name("left"), node.child_by_field_name("right")
            op = text(node.child_by_field_name("operator"))
            if a is None or b is None:
                return False
            if op == "&":
                return self.never_negative(a) or self.never_negative(b)
            return op in ("+", "*", "/", "%", ">>", "|", "^") and \
                self.never_negative(a) and self.never_negative(b)
        if t == "conditional_expression":
            a, b = (node.child_by_field_name(f) for f in ("consequence", "alternative"))
            return a is not None and b is not None and self.never_negative(a) and \
                self.never_negative(b)
        if t == "call_expression":
            fn = text(node.child_by_field_name("function"))
            args = node.child_by_field_name("arguments")
            signs = [self.never_negative(a) for a in args.named_children] \
                if args is not None else []
            return len(signs) == 2 and (all(signs) if fn == "min" else
                                        any(signs) if fn == "max" else False)
        return False

    def sum_exact(self, terms: list[tuple[int, Node]]) -> bool:
        """Whether adding ``terms`` (sign, expression) left to right in C gives the true sum
        wherever stepping a pointer by each in turn reaches a real element: each partial sum
        signed, as wide as a pointer, or never negative (see the module doc)."""
        acc: Kind | None = None
        positive = True
        for k, (sign, node) in enumerate(terms):
            kind, nonneg = self.kind(node), self.never_negative(node)
            if k == 0:
                acc, positive = kind, nonneg and sign > 0
                if sign < 0 and (kind is None or kind[0] != "s"):
                    return False
                continue
            total = common(acc, kind)
            signed = acc is not None and kind is not None and acc[0] == kind[0] == "s"
            wide = total is not None and total[1] == 64
            if not (signed or wide or (sign > 0 and positive and nonneg)):
                return False
            acc, positive = total, positive and nonneg and sign > 0
        return True


def _literal_kind(literal: str) -> Kind | None:
    raw = literal.lower()
    if any(c in raw for c in ".ep") and not raw.startswith("0x"):
        return None  # a float
    suffix = raw[len(raw.rstrip("ul")):]
    digits = raw[:len(raw) - len(suffix)]
    try:
        value = int(digits, 0)
    except ValueError:
        return None
    bits = 64 if "l" in suffix or value > 0xFFFFFFFF else 32
    unsigned = "u" in suffix or (bits == 32 and value > 0x7FFFFFFF and digits.startswith("0x"))
    if bits == 32 and value > 0x7FFFFFFF and not unsigned:
        bits = 64
    return ("u" if unsigned else "s", bits)


def _never_negative(body: Node, kinds: Kinds) -> None:
    """Add to ``kinds.counters`` the names whose every value is never negative: a local declared once with a
    never-negative value and never written after, or a ``for`` counter set so and only
    stepped up (``++v``, ``v += s`` with ``s`` never negative) by its loop's update."""
    decls: dict[str, list[Node]] = {}
    for d in walk(body):
        declarator = d.child_by_field_name("declarator") if d.type == "init_declarator" \
            else None
        if declarator is not None and declarator.type == "identifier":
            decls.setdefault(text(declarator), []).append(d)
    writes: dict[str, list[Node]] = {}
    for n in walk(body):
        if n.type == "identifier":
            w = writer(n, address=True)
            if w is not None:
                writes.setdefault(text(n), []).append(w)
    found = kinds.counters
    changed = True
    while changed:  # a local's value may read a counter found on an earlier pass
        changed = False
        for local, ds in decls.items():
            if local in found or len(ds) != 1:
                continue
            value = ds[0].child_by_field_name("value")
            if value is None or not kinds.never_negative(value):
                continue
            steps = writes.get(local, [])
            loop = ds[0].parent.parent if ds[0].parent is not None else None
            update = loop.child_by_field_name("update") \
                if loop is not None and loop.type == "for_statement" else None
            if all(update is not None and _steps_up(w, kinds) and
                   update.start_byte <= w.start_byte < update.end_byte for w in steps):
                found.add(local)
                changed = True


def _steps_up(step: Node, kinds: Kinds) -> bool:
    if step.type == "update_expression":
        return text(step.child_by_field_name("operator")) == "++"
    right = step.child_by_field_name("right")
    return step.type == "assignment_expression" and right is not None and \
        text(step.child_by_field_name("operator")) == "+=" and kinds.never_negative(right)
