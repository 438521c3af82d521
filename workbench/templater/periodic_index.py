"""Wrapped indices without integer division: ``E % N`` and ``E / N`` by a runtime ``N`` where
the analysis bounds ``E`` to ``[0, 3N)``, as compares and selects (issue 28, set 11 first
contact: jacobi9_torus).

A periodic stencil wraps its neighbours around the field: ``(r - 1 + H) % H``, ``(c + 1) %
W``, through a helper ``wrap(i, n)``, a lambda or an index class (:mod:`.functor_calls`).
An integer division by a value known only at run time is a reciprocal, multiplies and fix-ups:
about twenty instructions on the GPU, eighteen of them for a 9-point stencil's neighbours,
where the memory-bound kernel has a handful of instructions to spend per load. Where the
dividend is at most a few periods away from ``[0, N)``, one compare and one select a period
compute the same value: with ``E`` in ``[0, 3N)``, ``E % N`` is ``E - q N`` and ``E / N`` is
``q`` for the ``q`` in ``{0, 1, 2}`` that ``E >= N`` and ``E >= 2N`` pick. Written so the
compiler sees the neighbour: ``E = x + N`` (``N`` one term of the sum) compares ``x`` with
``0`` and ``N`` and yields ``x``, ``x + N`` or ``x - N``; a bound the analysis proves drops
its compare (``(r + 1 + H) % H`` with ``r < H`` is ``(r + 1 >= H ? r + 1 - H : r + 1)``,
``(r + H) % H`` is ``r``).

The range analysis: linear bounds over the kernel's unchanging integers (its ``int``
parameters and locals declared once and never written: symbols), through ``+``, ``-``,
unary ``-`` and ``*`` by an integer literal. A local declared once and never written takes
its initialiser's bounds; one built from the launch's built-ins alone (``blockIdx.y *
blockDim.y + threadIdx.y``) is at least 0. Upper and lower bounds come from the guards
around a use: an enclosing ``if (r < H && ..)`` (or ``H > r``, ``r <= H - 1``), an earlier
``if (r >= H || ..) return;`` (or ``continue`` / ``break`` in the same loop body), and a
``for`` loop's counter (``i < n``, stepping up by a non-negative amount from a bounded
start, never written in the body). A guard makes its range non-empty, which bounds the
symbols below (``0 <= r <= H - 1`` gives ``H >= 1``); a proof substitutes each symbol's
lower bound where its coefficient is positive and needs no other. Every leaf must be an
``int`` (a ``size_t`` or ``unsigned`` value wraps negative sums: left as written).

Considered where ``E`` is a sum or difference (a neighbour's offset: ``i / w`` and ``i % w``
of a lone name split a flat index, no wrap, and are left alone). Rewritten only where ``N >=
1`` and ``0 <= E <= 3N - 1`` are proved; a ``%`` by a runtime ``int`` that is not is left as
written with a note naming the line and the bound that is missing (a ``/`` the same, once
its leaves are integers). Exact for every value the index
can take: the result is the one the kernel as written computes, so every config computes
it too.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from tree_sitter import Node

from workbench.templater.analysis import line, text, walk
from workbench.templater.inline_bind import Refused, declared, declared_types, written
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import entry_body
from workbench.templater.records import Finding

TRANSFORM = "WRAP_INDEX"
_BUILTINS = frozenset({"blockIdx", "threadIdx", "blockDim", "gridDim"})

#: A linear form over symbols: name -> coefficient, "" the constant.
Lin = dict[str, int]


@dataclass(frozen=True)
class Range:
    """Bounds of an integer expression (None: unbounded on that side)."""

    lo: Lin | None
    hi: Lin | None


def reduce_periodic(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each ``%`` / ``/`` by a runtime ``int`` whose dividend is bounded to
    three periods written as compares and selects (see the module doc); unchanged where
    there is none."""
    body = entry_body(current, entry)
    if body is None or body.parent is None:
        return current
    ctx = _Context(body, body.parent)
    edits: list[tuple[int, int, str]] = []
    done: list[int] = []
    notes: list[Finding] = []
    for node in walk(body):
        op = text(node.child_by_field_name("operator")) if node.type == "binary_expression" \
            else ""
        if op not in ("%", "/") or any(a <= node.start_byte < b for a, b, _ in edits):
            continue
        divisor = _bare(_side(node, "right"))
        if divisor.type != "identifier" or ctx.types.get(text(divisor)) != "int" or \
                not ctx.symbol(text(divisor)):
            continue
        left = _side(node, "left")
        if (op == "/" and not ctx.integers(left)) or len(list(_terms(left, 1))) < 2:
            continue  # a float division; a lone name split by N (a flat index), no wrap
        try:
            new = _rewrite(ctx, node, op, left, text(divisor))
        except Refused as refused:
            notes.append(Finding(TRANSFORM, False, f"`{_flat(node)}` stays a division: "
                                 f"{refused.reason}", current.baseline_line(refused.line)))
            continue
        edits.append((node.start_byte, node.end_byte, new))
        done.append(current.baseline_line(line(node)))
    if done:
        lines = ", ".join(str(n) for n in sorted(set(done)))
        notes.insert(0, Finding(TRANSFORM, True, f"{len(done)} wrapped indices (lines {lines}) "
                                "as compares and selects: each dividend is proved within three "
                                "periods of its divisor, so the value is the one the modulo or "
                                "division computes", done[0]))
    if not notes:
        return current
    data = current.text.encode()
    for start, end, new in sorted(edits, reverse=True):
        data = data[:start] + new.encode() + data[end:]
    return replace(current, text=data.decode(), findings=(*current.findings, *notes))


def below(body: Node, at: Node, name: str, bound: str) -> bool:
    """``name <= bound - 1`` at ``at`` is proved by the range analysis (the guards around
    ``at`` in the kernel whose body is ``body``; ``name`` and ``bound`` unchanging ints)."""
    if body.parent is None:
        return False
    facts = _Facts(_Context(body, body.parent), at)
    try:
        hi = facts.range_of(name).hi
    except Refused:
        return False
    return hi is not None and facts.proves(_sub(_sub({bound: 1}, {"": 1}), hi))


def _bare(node: Node) -> Node:
    """The expression under parentheses (a condition's clause opened; casts kept: a cast
    changes the value)."""
    while node.type in ("parenthesized_expression", "condition_clause"):
        inner = node.child_by_field_name("value") if node.type == "condition_clause" else \
            node.named_children[0] if node.named_child_count == 1 else None
        if inner is None:
            return node
        node = inner
    return node


def _side(node: Node, field: str) -> Node:
    """``node``'s ``field`` child (Refused where the parse has none)."""
    child = node.child_by_field_name(field)
    if child is None:
        raise Refused(f"`{_flat(node)}` has no {field}", node)
    return child


def _flat(node: Node) -> str:
    return _one_line(node)[:80]


def _one_line(node: Node) -> str:
    return " ".join(text(node).split())


class _Context:
    """The kernel's names: declarations, types and which are never written."""

    def __init__(self, body: Node, kernel: Node) -> None:
        self.body = body
        self.names = declared(kernel)
        self.types = declared_types(kernel)
        self._written = {n: written(body, n) for n in self.names}

    def symbol(self, name: str) -> bool:
        """An ``int`` declared once and never written: one value wherever it is read."""
        return len(self.names.get(name, [])) == 1 and not self._written.get(name, True) and \
            self.types.get(name) == "int"

    def integers(self, node: Node) -> bool:
        """Every leaf of ``node`` an ``int`` name or a plain integer literal."""
        for n in walk(node):
            if n.type == "identifier" and self.types.get(text(n)) != "int":
                return False
            if n.type == "number_literal" and not text(n).isdigit():
                return False
            if n.type not in ("identifier", "number_literal", "binary_expression",
                              "parenthesized_expression", "unary_expression", "(", ")", "+",
                              "-", "*", "/", "%"):
                return False
        return True

    def init(self, name: str) -> Node | None:
        """The value a name declared once is initialised with."""
        decl = self.names.get(name, [None])[0]
        init = decl.parent if decl is not None else None
        return init.child_by_field_name("value") if init is not None and \
            init.type == "init_declarator" else None


def _rewrite(ctx: _Context, node: Node, op: str, left: Node, n: str) -> str:
    """The select chain for ``left op n`` at ``node`` (Refused: a bound not proved)."""
    if not ctx.integers(left):
        raise Refused(f"`{_flat(left)}` has a leaf that is no int (an unsigned or wider "
                      "value wraps a negative sum)", node)
    facts = _Facts(ctx, node)
    r = facts.range(left)
    nl: Lin = {n: 1}
    if r.lo is None or r.hi is None:
        raise Refused(f"`{_flat(left)}` is not bounded {'below' if r.lo is None else 'above'}"
                      " by the guards around it", node)
    if not facts.proves(_sub(nl, {"": 1})):
        raise Refused(f"{n} >= 1 is not proved", node)
    if not facts.proves(r.lo):
        raise Refused(f"`{_flat(left)}` may be negative (its lower bound {_show(r.lo)})", node)
    if not facts.proves(_sub(_scale(nl, 3), _add(r.hi, {"": 1}))):
        raise Refused(f"`{_flat(left)}` may reach 3 * {n} (its upper bound {_show(r.hi)})",
                      node)
    q_lo = 2 if facts.proves(_sub(r.lo, _scale(nl, 2))) else \
        1 if facts.proves(_sub(r.lo, nl)) else 0
    q_hi = 0 if facts.proves(_sub(nl, _add(r.hi, {"": 1}))) else \
        1 if facts.proves(_sub(_scale(nl, 2), _add(r.hi, {"": 1}))) else 2
    spell = _Spelling(left, n)
    out = spell.value(q_lo, op)
    for q in range(q_lo + 1, q_hi + 1):
        out = f"({spell.at_least(q)} ? {spell.value(q, op)} : {out})"
    return out if q_hi > q_lo else f"({out})"  # it stands where the division stood


class _Spelling:
    """``E`` as ``x + N`` where ``N`` is one of its terms (else ``E`` itself)."""

    def __init__(self, left: Node, n: str) -> None:
        terms = list(_terms(left, 1))
        at = next((i for i, (s, t) in enumerate(terms) if s > 0 and text(_bare(t)) == n), None)
        self.e = _one_line(left)
        self.n = n
        self.x: str | None = None
        if at is not None and len(terms) > 1:
            rest = terms[:at] + terms[at + 1:]
            head = ("-" if rest[0][0] < 0 else "") + _one_line(rest[0][1])
            self.x = "(" + head + "".join(f" {'+' if s > 0 else '-'} {_one_line(t)}"
                                          for s, t in rest[1:]) + ")"

    def value(self, q: int, op: str) -> str:
        if op == "/":
            return str(q)
        if self.x is not None:
            return {0: f"{self.x} + {self.n}", 1: self.x, 2: f"{self.x} - {self.n}"}[q]
        return {0: self.e, 1: f"{self.e} - {self.n}", 2: f"{self.e} - 2 * {self.n}"}[q]

    def at_least(self, q: int) -> str:
        """The test ``E >= q N``."""
        if self.x is not None:
            return f"{self.x} >= {'0' if q == 1 else self.n}"
        return f"{self.e} >= {self.n if q == 1 else '2 * ' + self.n}"


def _terms(node: Node, sign: int) -> Iterator[tuple[int, Node]]:
    """The signed terms of a sum (parentheses opened)."""
    node = _bare(node)
    op = text(node.child_by_field_name("operator")) if node.type == "binary_expression" else ""
    if op in ("+", "-"):
        yield from _terms(_side(node, "left"), sign)
        yield from _terms(_side(node, "right"), sign if op == "+" else -sign)
    else:
        yield sign, node


class _Facts:
    """Bounds at one use: its guards, loops and the kernel's declarations."""

    def __init__(self, ctx: _Context, at: Node) -> None:
        self.ctx = ctx
        self.at = at
        self.floors: dict[str, int] = {}  # symbol -> a proved lower bound
        self._seen: set[str] = set()

    def range(self, node: Node) -> Range:
        node = _bare(node)
        if node.type == "number_literal" and text(node).isdigit():
            return Range({"": int(text(node))}, {"": int(text(node))})
        if node.type == "identifier":
            return self._name(text(node))
        if node.type == "unary_expression" and text(node.child_by_field_name("operator")) == "-":
            r = self.range(_side(node, "argument"))
            return Range(_neg(r.hi), _neg(r.lo))
        op = text(node.child_by_field_name("operator")) if node.type == "binary_expression" \
            else ""
        if op in ("+", "-"):
            a = self.range(_side(node, "left"))
            b = self.range(_side(node, "right"))
            if op == "-":
                b = Range(_neg(b.hi), _neg(b.lo))
            return Range(_add(a.lo, b.lo), _add(a.hi, b.hi))
        if op == "*":
            left, right = _side(node, "left"), _side(node, "right")
            for one, other in ((left, right), (right, left)):
                k = _bare(one)
                if k.type == "number_literal" and text(k).isdigit():
                    r = self.range(other)
                    return Range(_scale(r.lo, int(text(k))), _scale(r.hi, int(text(k))))
        raise Refused(f"`{_flat(node)}` is not followed by the range analysis (sums, "
                      "differences and products by a literal of unchanging ints)", node)

    def range_of(self, name: str) -> Range:
        """The bounds of the name ``name`` at the use."""
        return self._name(name)

    def _name(self, name: str) -> Range:
        lo: Lin | None = {name: 1}
        hi: Lin | None = {name: 1}
        if not self.ctx.symbol(name):
            if not self._counter(name):
                raise Refused(f"{name} is written in the kernel or declared more than once: "
                              "its value here is not followed", self.at)
            lo = hi = None  # a loop's counter: its loop bounds it
        elif (init := self.ctx.init(name)) is not None and name not in self._seen:
            self._seen.add(name)
            if _launch_only(init):
                lo, hi = {"": 0}, None
            else:
                try:
                    r = self.range(init)
                    lo = r.lo if r.lo is not None else lo
                    hi = r.hi if r.hi is not None else hi
                except Refused:
                    pass  # the name stays a symbol
            self._seen.discard(name)
        for low, high in self._guards(name):
            lo = low if lo is None else lo  # a side the name's value leaves open
            hi = high if hi is None else hi
        if lo is not None and hi is not None:
            self._floor(_sub(hi, lo))  # the name exists here: its range is not empty
        return Range(lo, hi)

    def _counter(self, name: str) -> bool:
        """``name`` is the ``int`` counter of a ``for`` loop around the use, declared once and
        written only by the loop's step."""
        if len(self.ctx.names.get(name, [])) != 1 or self.ctx.types.get(name) != "int":
            return False
        node = self.at
        while node.parent is not None and node != self.ctx.body:
            loop = node.parent
            init = loop.child_by_field_name("initializer") if loop.type == "for_statement" \
                else None
            if init is not None and node == loop.child_by_field_name("body") and any(
                    n == self.ctx.names[name][0] for n in walk(init)):
                return not written(node, name)
            node = loop
        return False

    def _guards(self, name: str) -> Iterator[tuple[Lin | None, Lin | None]]:
        """The bounds on ``name`` the statements around the use give."""
        node = self.at
        while node.parent is not None and node != self.ctx.body:
            parent = node.parent
            if parent.type == "if_statement" and node == parent.child_by_field_name(
                    "consequence"):
                yield from self._tests(parent.child_by_field_name("condition"), name, True)
            if parent.type == "compound_statement":
                for s in parent.named_children:
                    if s.start_byte >= node.start_byte:
                        break
                    if s.type == "if_statement" and _leaves(s):
                        yield from self._tests(s.child_by_field_name("condition"), name, False)
            if parent.type == "for_statement" and node == parent.child_by_field_name("body"):
                yield from self._loop(parent, name)
            node = parent

    def _tests(self, cond: Node | None, name: str, holds: bool) -> Iterator[
            tuple[Lin | None, Lin | None]]:
        """Bounds from ``cond`` being ``holds``: the ``&&`` terms of a true test, the ``||``
        terms of a false one."""
        if cond is None:
            return
        cond = _bare(cond)
        op = text(cond.child_by_field_name("operator")) if cond.type == "binary_expression" \
            else ""
        if op == ("&&" if holds else "||"):
            yield from self._tests(cond.child_by_field_name("left"), name, holds)
            yield from self._tests(cond.child_by_field_name("right"), name, holds)
            return
        if op not in ("<", "<=", ">", ">="):
            return
        left, right = _bare(_side(cond, "left")), \
            _bare(_side(cond, "right"))
        if right.type == "identifier" and text(right) == name:
            left, right = right, left
            op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
        if left.type != "identifier" or text(left) != name:
            return
        if not holds:
            op = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}[op]
        try:
            bound = self._exact(right)
        except Refused:
            return
        if op == "<":
            yield None, _sub(bound, {"": 1})
        elif op == "<=":
            yield None, bound
        elif op == ">":
            yield _add(bound, {"": 1}), None
        else:
            yield bound, None

    def _exact(self, node: Node) -> Lin:
        """``node``'s value as a linear form of symbols (Refused where it is no such form)."""
        if not all(self.ctx.symbol(text(n)) for n in walk(node) if n.type == "identifier"):
            raise Refused(f"`{_flat(node)}` reads a name that changes", node)
        form = _form(node)
        if form is None:
            raise Refused(f"`{_flat(node)}` is no sum of names and literals", node)
        return form

    def _loop(self, loop: Node, name: str) -> Iterator[tuple[Lin | None, Lin | None]]:
        """A counter ``name`` of ``for (int name = A; name < B; name += s)``."""
        init = loop.child_by_field_name("initializer")
        step = loop.child_by_field_name("update")
        body = loop.child_by_field_name("body")
        if init is None or step is None or body is None or written(body, name):
            return
        decl = next((d for d in init.children_by_field_name("declarator")), None) \
            if init.type == "declaration" else None
        value = decl.child_by_field_name("value") if decl is not None and \
            decl.type == "init_declarator" else None
        target = decl.child_by_field_name("declarator") if decl is not None else None
        if value is None or target is None or text(target) != name or not _rising(step, name):
            return
        start = self._start(value)
        for _low, high in self._tests(loop.child_by_field_name("condition"), name, True):
            yield start, high
        if start is not None:
            yield start, None

    def _start(self, value: Node) -> Lin | None:
        if _launch_only(value):
            return {"": 0}
        try:
            return self.range(value).lo
        except Refused:
            return None

    def _floor(self, fact: Lin | None) -> None:
        """Record ``fact >= 0`` where it bounds one symbol below."""
        if fact is None:
            return
        symbols = [s for s in fact if s and fact[s]]
        if len(symbols) == 1 and fact[symbols[0]] > 0:
            s = symbols[0]
            floor = -(fact.get("", 0) // fact[s])  # ceil(-c / a)
            self.floors[s] = max(self.floors.get(s, floor), floor)

    def proves(self, form: Lin | None) -> bool:
        """``form >= 0`` from the symbols' floors."""
        if form is None:
            return False
        total = form.get("", 0)
        for s, k in form.items():
            if not s or not k:
                continue
            if k < 0 or s not in self.floors:
                return False
            total += k * self.floors[s]
        return total >= 0


def _form(node: Node) -> Lin | None:
    """A sum of names and literals (products by a literal) as a linear form, each name read
    as itself; None where it is another expression."""
    node = _bare(node)
    if node.type == "identifier":
        return {text(node): 1}
    if node.type == "number_literal" and text(node).isdigit():
        return {"": int(text(node))}
    op = text(node.child_by_field_name("operator")) if node.type == "binary_expression" else ""
    a = _form(_side(node, "left")) if op else None
    b = _form(_side(node, "right")) if op else None
    if op == "+":
        return _add(a, b)
    if op == "-":
        return _sub(a, b)
    if op == "*" and a is not None and b is not None and (set(a) == {""} or set(b) == {""}):
        return _scale(a, b[""]) if set(b) == {""} else _scale(b, a[""])
    return None


def _leaves(stmt: Node) -> bool:
    """An ``if`` whose consequence only leaves (``return;``, ``continue;``, ``break;``) and
    which has no else."""
    if stmt.child_by_field_name("alternative") is not None:
        return False
    then = stmt.child_by_field_name("consequence")
    if then is not None and then.type == "compound_statement":
        inner = [c for c in then.named_children if c.type != "comment"]
        then = inner[0] if len(inner) == 1 else None
    return then is not None and then.type in ("return_statement", "continue_statement",
                                              "break_statement")


def _launch_only(node: Node) -> bool:
    """A sum of products of the launch's built-ins and non-negative literals (>= 0)."""
    node = _bare(node)
    if node.type == "field_expression":
        arg = node.child_by_field_name("argument")
        return arg is not None and text(arg) in _BUILTINS
    if node.type == "number_literal":
        return text(node).isdigit()
    op = text(node.child_by_field_name("operator")) if node.type == "binary_expression" else ""
    return op in ("+", "*") and _launch_only(_side(node, "left")) and \
        _launch_only(_side(node, "right"))


def _rising(step: Node, name: str) -> bool:
    """``++name``, ``name++``, ``name += s`` with ``s`` launch-only or a literal."""
    step = _bare(step)
    if step.type == "update_expression":
        return "++" in text(step) and text(step.child_by_field_name("argument")) == name
    if step.type == "assignment_expression" and \
            text(step.child_by_field_name("operator")) == "+=":
        return text(step.child_by_field_name("left")) == name and \
            _launch_only(_side(step, "right"))
    return False


def _add(a: Lin | None, b: Lin | None) -> Lin | None:
    if a is None or b is None:
        return None
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return {k: v for k, v in out.items() if v or not k}


def _neg(a: Lin | None) -> Lin | None:
    return None if a is None else {k: -v for k, v in a.items()}


def _scale(a: Lin | None, k: int) -> Lin | None:
    return None if a is None else {s: v * k for s, v in a.items()}


def _sub(a: Lin | None, b: Lin | None) -> Lin | None:
    return _add(a, _neg(b))


def _show(form: Lin) -> str:
    parts = [f"{'' if v == 1 else '-' if v == -1 else str(v) + ' * '}{s}" for s, v in
             form.items() if s and v]
    if form.get("", 0) or not parts:
        parts.append(str(form.get("", 0)))
    return " + ".join(parts).replace("+ -", "- ")
