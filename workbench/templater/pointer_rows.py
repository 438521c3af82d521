"""A pointer walked down a matrix's rows read as the counted loop over rows it is, before the
analysis (issue 28: first contact, lnbwd_colpartials of held-back set 16).

``const float* g = dy + r0 * cols + c; const float* x = xhat + r0 * cols + c; const float*
const end = dy + r1 * cols + c; while (g < end) { sg += *g * *x; g += cols; x += cols; }``
walks rows ``r0 .. r1 - 1`` of two row-major matrices at column ``c``: it is ``for (size_t
wb_walk_row = r0; wb_walk_row < r1; ++wb_walk_row) sg += dy[wb_walk_row * (cols) + (c)] *
xhat[wb_walk_row * (cols) + (c)];``. The families read a row walk through a counted loop
and its reads through their index, so the same column reduction lifted or was refused by
the spelling of its walk alone. A row end clamped by hand (``size_t r1 = r0 + 64; if (r1 >
rows) r1 = rows;``) is read as the ``min`` it is first (:func:`_clamp`).

Rewritten only where the two are the same program (:func:`_walk`): the loop is a ``while``
or a ``for`` comparing a pointer ``p < e``; its body's last statements and the ``for``'s
update (``p += s, q += s``) step pointers, each once, by the same stride ``s``, ``p`` among
them (a ``for`` that declares ``p`` steps it in its update: a counted ``while`` respelled),
and no ``continue`` of the loop's own skips them; ``s`` is a literal, a macro or a name
nothing in the kernel assigns, and is positive: a positive literal, or a column check keeps
every thread whose column (a signed local nothing reassigns, built from the launch's
geometry, literals, ``+`` and ``*`` only: never negative) is at least ``s`` out of the loop
(``if (c >= s) return;`` before it in its block, or ``if (c < s && ..) {..}`` around it),
so a row walk of a matrix ``s`` wide that the thread's column is inside; each stepped
pointer and the end ``e`` are declared alone, with a value, in the block of the loop,
before it, as ``base + R * s + C`` (base first, the rest in any order, ``s * R`` too), the stepped
pointers all at the same row ``R``, the end at ``base_p + R_e * s + C_p``; nothing but the
loop mentions them after their declarations, the loop's body only reading the stepped
pointers (``*q``, ``q[k]``) and never assigning ``s``, ``R`` or ``R_e``. Then ``p < e`` is
``R + k < R_e`` at the k-th pass (``s > 0``), and ``*q`` is ``base_q[(R + k) * s + C_q]``.
The declarations become blank and the steps empty, so every line keeps its number. Anything
else stays as written.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import chain, int_value, strip, text, walk, write_target
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.loop_forms import Edit, declared_value, own_continue, rewrite_loops

_ROW = "wb_walk_row"
_INTEGER = ("int", "unsigned", "unsigned int", "long", "long long", "unsigned long",
            "unsigned long long", "size_t", "ptrdiff_t", "int64_t", "uint64_t", "int32_t",
            "uint32_t")
_GEOMETRY = ("threadIdx.", "blockIdx.", "blockDim.", "gridDim.")
_SIGNED = ("int", "signed", "signed int", "long", "long long", "int32_t", "int64_t",
           "ptrdiff_t")


def pointer_rows(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each clamped row end read as its ``min`` and each pointer walk down
    rows read as its counted row loop in ``entry`` (unchanged where there is none)."""
    clamped = rewrite_loops(current, entry, lambda data, n: _clamp(n)
                            if n.type == "declaration" else None)
    return rewrite_loops(clamped, entry, lambda data, n: _walk(n)
                         if n.type in ("while_statement", "for_statement") else None)


def _condition(stmt: Node) -> Node:
    """The tested expression of an ``if``, ``while`` or ``for`` (a ``for`` without one: the
    statement itself, which no caller reads as a comparison)."""
    cond = stmt.child_by_field_name("condition")
    if cond is not None and cond.type == "condition_clause":
        cond = cond.child_by_field_name("value")
    return strip(cond) if cond is not None else stmt


def _type(decl: Node) -> str:
    node = decl.child_by_field_name("type")
    return " ".join(text(node).split()) if node is not None else ""


def _blank(node: Node) -> Edit:
    """The edit emptying ``node``, its lines kept."""
    return node.start_byte, node.end_byte, "\n" * text(node).count("\n")


def _siblings(node: Node) -> list[Node]:
    block = node.parent
    return [] if block is None or block.type != "compound_statement" else \
        [c for c in block.named_children if c.type != "comment"]


def _clamp(decl: Node) -> list[Edit] | None:
    """``T v = A; if (v > B) v = B;`` (``B < v`` too) as ``const T v = min((T)(A), (T)(B));``
    where T is an integer type, B is cast to T or a name declared a T, and nothing else
    assigns ``v``; else None."""
    found, siblings = declared_value(decl), _siblings(decl)
    if found is None or decl not in siblings or _type(decl) not in _INTEGER:
        return None
    var, value = found
    k = siblings.index(decl)
    after = siblings[k + 1] if k + 1 < len(siblings) else None
    if after is None or after.type != "if_statement" or \
            after.child_by_field_name("alternative") is not None:
        return None
    cond = _condition(after)
    then = after.child_by_field_name("consequence")
    if then is not None and then.type == "compound_statement" and then.named_child_count == 1:
        then = then.named_children[0]
    if cond.type != "binary_expression" or then is None or \
            then.type != "expression_statement" or then.named_child_count != 1:
        return None
    left, op, right = (cond.child_by_field_name("left"), text(cond.child_by_field_name(
        "operator")), cond.child_by_field_name("right"))
    bound = right if op in (">", ">=") and left is not None and text(strip(left)) == var \
        else left if op in ("<", "<=") and right is not None and text(strip(right)) == var \
        else None
    set_ = strip(then.named_children[0])
    if bound is None or set_.type != "assignment_expression" or \
            text(set_.child_by_field_name("operator")) != "=" or \
            text(set_.child_by_field_name("left")) != var or \
            text(strip(set_.child_by_field_name("right"))) != text(strip(bound)):  # type: ignore[arg-type]
        return None
    t = _type(decl)
    block = decl.parent
    assert block is not None  # a sibling of the block's statements
    writes = [n for n in walk(block) if (w := write_target(n)) is not None and text(w) == var]
    if not _typed(bound, t, decl) or len(writes) != 1:
        return None
    return [(decl.start_byte, decl.end_byte,
             f"const {t} {var} = min(({t})({text(value)}), ({t})({text(strip(bound))}));"),
            _blank(after)]


def _typed(bound: Node, t: str, decl: Node) -> bool:
    """``bound`` is cast to ``t`` or names a variable or parameter declared a ``t``."""
    b = bound
    while b.type == "parenthesized_expression" and b.named_child_count == 1:
        b = b.named_children[0]
    if b.type == "cast_expression":
        return " ".join(text(b.child_by_field_name("type")).split()) == t
    if b.type != "identifier":
        return False
    root = decl
    while root.parent is not None:
        root = root.parent
    types = {_type(d) for d in walk(root) if d.type in ("declaration", "parameter_declaration")
             and any(n.type == "identifier" and text(n) == text(b) for n in
                     d.children_by_field_name("declarator"))}
    return types == {t}


def _rows(value: Node, stride: str) -> tuple[str, str, str] | None:
    """(base, R, C) of ``base + R * stride + C``, else None."""
    terms = chain(value, "+")
    if len(terms) < 2 or terms[0].type != "identifier":
        return None
    rows, rest = [], []
    for t in terms[1:]:
        parts = [t.child_by_field_name("left"), t.child_by_field_name("right")] \
            if t.type == "binary_expression" and text(t.child_by_field_name("operator")) == "*" \
            else []
        by = [p for p in parts if p is not None and text(strip(p)) == stride]
        if by:
            rows.append(text(parts[1] if parts[0] is by[0] else parts[0]))
        else:
            rest.append(text(t))
    if len(rows) != 1:
        return None
    return text(terms[0]), rows[0], " + ".join(rest) or "0"


def _step(stmt: Node) -> tuple[str, str] | None:
    """(pointer, stride) of ``q += s;``, else None."""
    return _step_of(stmt.named_children[0]) if stmt.type == "expression_statement" and \
        stmt.named_child_count == 1 else None


def _step_of(expr: Node) -> tuple[str, str] | None:
    """(pointer, stride) of ``q += s``, else None."""
    e = strip(expr)
    if e.type != "assignment_expression" or \
            text(e.child_by_field_name("operator")) != "+=":
        return None
    left = e.child_by_field_name("left")
    if left is None or left.type != "identifier":
        return None
    return text(left), text(strip(e.child_by_field_name("right")))  # type: ignore[arg-type]


def _nonnegative(value: Node) -> bool:
    """``value`` is built from the launch's geometry, literals, ``+`` and ``*`` only."""
    v = strip(value)
    if v.type == "field_expression":
        return text(v).startswith(_GEOMETRY)
    if v.type == "number_literal":
        return (int_value(v) or 0) >= 0
    if v.type == "binary_expression" and text(v.child_by_field_name("operator")) in "+*":
        return all(_nonnegative(c) for c in (v.child_by_field_name("left"),
                                             v.child_by_field_name("right")) if c is not None)
    return False


def _positive(stride: str, loop: Node) -> bool:
    """``stride`` is a positive literal, or the thread's never-negative column (a local
    nothing reassigns) is below ``stride`` wherever the loop runs: an earlier statement of
    the loop's block returns the threads where it is not (``if (c >= s) return;``), or an
    ``if`` around the loop tests it (``if (c < s && ..) {..}``)."""
    try:
        if int(stride, 0) > 0:
            return True
    except ValueError:
        pass
    kernel = loop
    while kernel.parent is not None and kernel.type != "function_definition":
        kernel = kernel.parent
    changed = _reassigned(kernel)
    found = [(f[0], f[1], _type(d)) for d in walk(kernel) if d.type == "declaration" and
             (f := declared_value(d)) is not None]
    names = [name for name, _v, _t in found]
    # a signed column: compared with an unsigned one, a negative stride would pass the check
    values = {name: v for name, v, t in found if names.count(name) == 1 and
              name not in changed and t in _SIGNED}

    def column_against(cond: Node, op: str) -> bool:
        left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
        col = strip(left) if left is not None and cond.type == "binary_expression" and \
            text(cond.child_by_field_name("operator")) == op else None
        return col is not None and right is not None and text(strip(right)) == stride and \
            col.type == "identifier" and text(col) in values and _nonnegative(values[text(col)])

    siblings = _siblings(loop)
    for s in siblings[:siblings.index(loop)]:
        then = s.child_by_field_name("consequence") if s.type == "if_statement" else None
        if then is not None and then.type == "return_statement" and \
                s.child_by_field_name("alternative") is None and \
                column_against(_condition(s), ">="):
            return True
    up = loop.parent
    while up is not None and up != kernel:
        then = up.child_by_field_name("consequence") if up.type == "if_statement" else None
        if then is not None and then.start_byte <= loop.start_byte < then.end_byte and \
                any(column_against(c, "<") for c in chain(_condition(up), "&&")):
            return True
        up = up.parent
    return False


def _walk(loop: Node) -> list[Edit] | None:
    """The edits writing the pointer walk ``loop`` as its counted row loop, else None."""
    body, cond = loop.child_by_field_name("body"), _condition(loop)
    siblings = _siblings(loop)
    init, update = loop.child_by_field_name("initializer"), loop.child_by_field_name("update")
    if body is None or body.type != "compound_statement" or loop not in siblings or \
            own_continue(body) or (init is not None and update is None) or \
            cond.type != "binary_expression" or \
            text(cond.child_by_field_name("operator")) != "<":
        return None
    p, e = (text(strip(cond.child_by_field_name(f))) for f in ("left", "right"))  # type: ignore[arg-type]
    # a for loop's update steps (``p += s, q += s``); with an initializer it declares p (a
    # counted while respelled)
    own = [_step_of(u) for u in _comma_parts(update)] if update is not None else []
    heads = [o for o in own if o is not None]
    if len(heads) != len(own) or (init is not None and (
            _pointer(init) != p or p not in [n for n, _s in heads])):
        return None
    statements = [c for c in body.named_children if c.type != "comment"]
    at = siblings.index(loop)
    pointers = {name for d in siblings[:at] if (name := _pointer(d)) is not None}
    last = heads[0] if heads else (_step(statements[-1]) if statements else None)
    if last is None:
        return None
    stride = last[1]
    steps: dict[str, Node] = {}
    for stmt in reversed(statements):
        step = _step(stmt)
        if step is None or step[0] in steps or step[0] not in pointers or step[1] != stride:
            break
        steps[step[0]] = stmt
    stepped = [n for n, _s in heads]
    walked = [*steps, *stepped]
    if p not in walked or len(set(walked)) != len(walked) or \
            any(st != stride for _n, st in heads):
        return None
    kernel = loop
    while kernel.parent is not None and kernel.type != "function_definition":
        kernel = kernel.parent
    if stride in _reassigned(kernel) or not _positive(stride, loop):
        return None
    decls: dict[str, tuple[Node, tuple[str, str, str]]] = {}
    for name in [*walked, e]:
        found = [(d, f[1]) for d in ([init] if init is not None and name == p else
                                     siblings[:at])
                 if (f := declared_value(d)) is not None and f[0] == name and _pointer(d) == name]
        rows = _rows(found[0][1], stride) if len(found) == 1 else None
        if rows is None:
            return None
        decls[name] = (found[0][0], rows)
    first = {decls[q][1][1] for q in walked}
    base, end_rows, end_rest = decls[e][1]
    if len(first) != 1 or (base, end_rest) != (decls[p][1][0], decls[p][1][2]):
        return None
    start = first.pop()
    if (_words(start) | _words(end_rows)) & _reassigned(body):
        return None
    header = (loop.start_byte, body.start_byte)
    skipped = [header, *((s.start_byte, s.end_byte) for s in steps.values())]
    edits: list[Edit] = [_blank(d) for d, _r in decls.values() if d != init]
    edits += [_blank(s) for s in steps.values()]
    for name, (decl, _r) in decls.items():
        scope = [loop] if decl == init else siblings[siblings.index(decl) + 1:]
        for n in (n for s in scope for n in walk(s) if n.type == "identifier"
                  and text(n) == name):
            if any(a <= n.start_byte < b for a, b in skipped):
                continue
            read = _read(n, body, decls[name][1], stride, name in walked)
            if read is None:
                return None
            edits.append(read)
    row_type = _row_type(siblings[:at], start)
    edits.append((*header, f"for ({row_type} {_ROW} = {start}; {_ROW} < {end_rows}; "
                           f"++{_ROW}) "))
    return edits


def _comma_parts(node: Node) -> list[Node]:
    """The expressions of a comma chain (``p += s, q += s``), or ``[node]``."""
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if node.type != "comma_expression" or left is None or right is None:
        return [node]
    return [*_comma_parts(left), *_comma_parts(right)]


def _pointer(decl: Node) -> str | None:
    """The name a declaration of one pointer with a value declares, else None."""
    found = declared_value(decl)
    ds = decl.children_by_field_name("declarator") if found is not None else []
    inner = ds[0].child_by_field_name("declarator") if ds else None
    return found[0] if found is not None and inner is not None and \
        inner.type == "pointer_declarator" else None


def _reassigned(node: Node) -> set[str]:
    """The variables ``node`` assigns or steps (not the arrays it stores to)."""
    targets = [write_target(n) for n in walk(node)]
    return {text(t) for t in targets if t is not None and t.type == "identifier"}


def _words(expr: str) -> set[str]:
    """The names (and numbers) the C expression text ``expr`` spells."""
    return set("".join(c if c.isalnum() or c == "_" else " " for c in expr).split())


def _read(n: Node, body: Node, rows: tuple[str, str, str], stride: str,
          stepped: bool) -> Edit | None:
    """The edit reading the stepped pointer at ``n`` (``*q``, ``q[k]``) through its row."""
    base, _start, rest = rows
    read = n.parent
    if not stepped or read is None or not (body.start_byte <= n.start_byte < body.end_byte):
        return None
    at = f"{_ROW} * ({stride}) + ({rest})"
    if read.type == "pointer_expression" and text(read.child_by_field_name("operator")) == "*" \
            and read.child_by_field_name("argument") == n:
        return read.start_byte, read.end_byte, f"{base}[{at}]"
    if read.type == "subscript_expression" and read.child_by_field_name("argument") == n:
        k = read.child_by_field_name("indices") or read.child_by_field_name("index")
        if k is None:
            return None
        index = strip(k.named_children[0]) if k.type == "subscript_argument_list" else k
        return read.start_byte, read.end_byte, f"{base}[{at} + ({text(index)})]"
    return None


def _row_type(before: list[Node], start: str) -> str:
    """The type the walk's first row is declared with (without const), else long long."""
    for d in before:
        found = declared_value(d)
        if found is not None and found[0] == start and _type(d) in _INTEGER:
            return _type(d)
    return "long long"
