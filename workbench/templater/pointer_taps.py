"""A pointer walked over a window's taps read as the index it stands for, before the analysis
(issue 28: first contact, dwconv5_nchw of held-back set 13).

``const float* tap = wt + c * 25; for (int dy = -2; dy <= 2; ++dy) for (int dx = -2; dx <=
2; ++dx, ++tap) acc += *tap * v;`` reads the filter at ``tap[(dy + 2) * 5 + (dx + 2)]``: the
pointer counts the taps of the nest, one a step of its innermost loop. The window families
read a tap's weight through its index (what it depends on: the loop variables, never the
output point), so the same convolution lifted or was refused by the spelling of its taps
alone. Here the walk becomes that index: the step leaves the loop, and each read ``*p``
becomes ``p[idx]`` (``p[k]``: ``p[idx + (k)]``), the pointer keeping its first value.

The same holds for a pointer stepped by a stride, ``const float* pa = a + row; for (int k
= 0; k < K; ++k) { acc += *pa * *pb; pa += M; pb += N; }`` (a column-major operand walked
down its column, issue 28: a respelling of set 19's gemm_cm_bt_rowscale, whose k slices
regtile_kslice reads only from an index): ``*pa`` is ``a[row + (long long)k * M]`` (the
product as wide as the pointer's steps, which no int bounds; read from the pointer parameter
where the pointer is one plus an offset whose names nothing after it assigns, and its
declaration goes: the families read a parameter's index, :func:`_folded`).

The step may also be the read's own: ``const float *t = taps; for (dy ..) for (dx ..) sum +=
*t++ * v;`` (issue 28: set 26's u8_filter7x7_const, whose OUT_Y, OUT_X and USE_SMEM the
window family gives only to the indexed read) reads ``t[(dy + 3) * 7 + (dx + 3)]``: the
postfix ``*p++`` runs exactly once a pass of L where its statement is one of L's body (or
the body), with no ``?:``, ``&&``, ``||`` or comma between them, and neither the rest of
that statement nor a later one names the pointer (:func:`_postfix_read`).

Rewritten only where the two are the same program: the pointer is declared alone, with a
value, in a block; it is stepped in one place, by one (``++p``, ``p++``, ``p += 1``) or by a
stride ``p += s`` that calls nothing, reads no memory and names neither the pointer nor
anything the nest assigns (the same on every pass), either in the update of a ``for`` loop L
beside the loop's own step (``++dx, ++p``) or as a statement of L's body that no later
statement of the body mentions the pointer in (then no ``continue`` of L's own skips it); L
and every loop around it up to that block form a nest, each loop a direct statement of the
one around it or its body without braces (it runs on every pass of its parent), each ``for (int v = lo; v < hi; ++v)``
(or ``<=``, ``v++``, ``v += 1``) with constant bounds (the file's integer macros read as
their values; the outermost loop's bound may be a run-time value, which no index reads) and
its variable never assigned in its body; no loop of the nest around L has a ``continue`` of its
own (it would skip L's steps), and no ``break`` or ``goto`` sits anywhere in the nest;
every other mention of the pointer is a read ``*p`` or ``p[k]`` inside L's body (so nothing
reads the pointer's value before, between or after the steps). Anything else stays as
written.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import inside, strip, text, walk, writer
from workbench.templater.analysis import integer_macros as reading_constants
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.loop_forms import (
    Edit,
    declared_value,
    own_continue,
    rewrite_loops,
    written_names,
)
from workbench.templater.loop_forms_open import signed_value
from workbench.templater.tile_count_loops import file_integers

#: (variable, first value, steps) of one counted loop of the nest (steps None: a run-time
#: bound, which only the outermost loop may have: no index multiplies by its count)
_Counted = tuple[str, int, int | None]


def pointer_taps(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each pointer walked over a nest's taps in ``entry`` read through its
    index (unchanged where there is none or the kernel cannot be found)."""
    with reading_constants(file_integers(current)):  # #define KS 7, constexpr int kSide = 7
        return rewrite_loops(current, entry, lambda data, n: _walked(n)
                             if n.type == "declaration" else None)


def _pointer(decl: Node) -> str | None:
    """The name a declaration of one pointer with a value declares, else None."""
    found = declared_value(decl)
    name = decl.children_by_field_name("declarator")[0].child_by_field_name("declarator") \
        if found is not None else None
    return found[0] if found is not None and name is not None and \
        name.type == "pointer_declarator" else None


def _steps(node: Node, var: str) -> bool:
    """``node`` steps ``var`` by one (``++p``, ``p++``, ``p += 1``)."""
    e = strip(node)
    target = e.child_by_field_name("argument" if e.type == "update_expression" else "left")
    by = "1" if e.type == "update_expression" else text(e.child_by_field_name("right"))
    op = text(e.child_by_field_name("operator"))
    return e.type in ("update_expression", "assignment_expression") and \
        op in ("++", "+=") and target is not None and text(strip(target)) == var and \
        by.strip() == "1"


def _stride(node: Node, var: str) -> Node | None:
    """The amount ``node`` steps the pointer ``var`` by (``++p``: the ``++``; ``p += s``:
    ``s``), else None."""
    e = strip(node)
    if _steps(e, var):
        return e
    target, by = e.child_by_field_name("left"), e.child_by_field_name("right")
    return by if e.type == "assignment_expression" and target is not None and \
        text(strip(target)) == var and text(e.child_by_field_name("operator")) == "+=" \
        else None


def _comma_parts(node: Node) -> list[Node]:
    """The expressions of a comma chain (``++dx, ++p``), or ``[node]``."""
    if node.type != "comma_expression":
        return [node]
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    return [] if left is None or right is None else [*_comma_parts(left), *_comma_parts(right)]


def _counted(loop: Node, update: list[Node]) -> _Counted | None:
    """(variable, first value, steps) of ``for (int v = lo; v < hi; ++v)`` with constant
    bounds whose update is ``update`` and whose body never assigns ``v``, else None."""
    init, cond, body = (loop.child_by_field_name(f) for f in ("initializer", "condition",
                                                              "body"))
    found = declared_value(init) if init is not None and init.type == "declaration" else None
    if found is None or cond is None or body is None or len(update) != 1:
        return None
    var, value = found
    cond = strip(cond)
    op = text(cond.child_by_field_name("operator")) if cond.type == "binary_expression" else ""
    left = cond.child_by_field_name("left")
    lo, hi = signed_value(value), signed_value(cond.child_by_field_name("right"))
    if op not in ("<", "<=") or left is None or text(strip(left)) != var or lo is None or \
            not _steps(update[0], var) or var in written_names(body):
        return None
    count = None if hi is None else hi - lo + (op == "<=")
    return (var, lo, count) if count is None or count > 0 else None


def _site(step: Node, var: str) -> tuple[Node, Edit] | None:
    """(the loop L whose taps ``step`` counts, the edit removing the step), else None."""
    parent = step.parent
    if parent is not None and parent.type == "comma_expression":
        while parent.parent is not None and parent.parent.type == "comma_expression":
            parent = parent.parent
        loop = parent.parent
        if loop is None or loop.type != "for_statement" or \
                loop.child_by_field_name("update") != parent:
            return None
        rest = [text(p) for p in _comma_parts(parent) if _stride(p, var) is None]
        return loop, (parent.start_byte, parent.end_byte, ", ".join(rest))
    stmt = parent
    body = None if stmt is None else stmt.parent
    loop = None if body is None else body.parent
    if stmt is None or stmt.type != "expression_statement" or body is None or \
            body.type != "compound_statement" or loop is None or loop.type != "for_statement" \
            or any(n.type == "identifier" and text(n) == var for c in body.named_children
                   if c.start_byte > stmt.start_byte for n in walk(c)) or \
            own_continue(body):
        return None
    return loop, (stmt.start_byte, stmt.end_byte, "")


def _postfix_read(step: Node, var: str) -> tuple[Node, Node] | None:
    """(the loop L, the read ``*p++``) where ``step`` is the ``p++`` of a read ``*p++`` that
    runs exactly once on every pass of L: the read sits in a statement of L's body (or is
    its body) with no ``?:``, ``&&`` or ``||`` between them, no ``continue`` of L's own can
    skip it, and no other part of that statement nor any later statement of the body names
    the pointer (the step's place then never shows); else None."""
    e = strip(step)
    if e.type != "update_expression" or not e.children or e.children[0].type == "++" or \
            not _steps(e, var):
        return None
    read = e.parent
    while read is not None and read.type == "parenthesized_expression":
        read = read.parent
    if read is None or read.type != "pointer_expression" or \
            text(read.child_by_field_name("operator")) != "*":
        return None
    stmt: Node | None = read
    while stmt is not None and stmt.type not in ("expression_statement", "declaration"):
        if stmt.type in ("conditional_expression", "comma_expression", "lambda_expression") or (
                stmt.type == "binary_expression" and
                text(stmt.child_by_field_name("operator")) in ("&&", "||")) or \
                stmt.type.endswith("_statement"):
            return None
        stmt = stmt.parent
    body = None if stmt is None else stmt.parent
    if stmt is None or body is None:
        return None
    if body.type == "for_statement" and body.child_by_field_name("body") == stmt:
        loop, later = body, []
    elif body.type == "compound_statement" and body.parent is not None and \
            body.parent.type == "for_statement" and not own_continue(body):
        loop, later = body.parent, [c for c in body.named_children
                                    if c.start_byte > stmt.start_byte]
    else:
        return None
    if any(n.type == "identifier" and text(n) == var and not inside(n, read)
           for c in [stmt, *later] for n in walk(c)):
        return None
    return loop, read


def _nest(inner: Node, block: Node, var: str) -> list[_Counted] | None:
    """The counted loops from the one in ``block`` down to ``inner`` (L), outermost first,
    where each runs on every pass of the one around it; else None."""
    update = inner.child_by_field_name("update")
    own = [p for p in _comma_parts(update) if _stride(p, var) is None] \
        if update is not None else []
    loops: list[_Counted] = []
    loop: Node | None = inner
    while loop is not None:
        counted = _counted(loop, own)
        if counted is None:
            return None
        loops.insert(0, counted)
        up = loop.parent
        if up == block:
            return loops
        if up is not None and up.type == "for_statement" and \
                up.child_by_field_name("body") == loop:  # for (a ..) for (b ..): no braces
            loop, up = up, loop
        else:
            loop = None if up is None or up.type != "compound_statement" else up.parent
        update = None if loop is None else loop.child_by_field_name("update")
        if up is None or loop is None or loop.type != "for_statement" or update is None or \
                (up.type == "compound_statement" and own_continue(up)):
            return None
        own = [update]
    return None


def _index(loops: list[_Counted]) -> str | None:
    """The tap the nest's loops stand at, counted from 0 (``(dy + 2) * 5 + (dx + 2)``); None
    where an inner loop's count is a run-time value."""
    def offset(v: str, lo: int) -> str:
        return v if lo == 0 else f"({v} - {lo})" if lo > 0 else f"({v} + {-lo})"
    out = offset(loops[0][0], loops[0][1])
    for v, lo, count in loops[1:]:
        if count is None:
            return None
        out = f"{out} * {count} + {offset(v, lo)}"
    return out


def _invariant(by: Node, outer: Node, var: str) -> bool:
    """The step ``by`` (a ``++`` or the ``s`` of ``p += s``) is the same on every pass of the
    nest ``outer``: it calls nothing, reads no memory and names nothing the nest assigns nor
    the pointer."""
    if _steps(by, var):
        return True
    assigned = written_names(outer)
    return not any(n.type in ("call_expression", "subscript_expression", "pointer_expression",
                              "field_expression", "assignment_expression", "update_expression")
                   or (n.type == "identifier" and (text(n) == var or text(n) in assigned))
                   for n in walk(by))


def _folded(decl: Node, block: Node) -> tuple[str, str] | None:
    """(base, offset) of a pointer declared ``T* p = base + off;`` (or ``= base;``: offset
    "") where ``base`` is a pointer parameter of the kernel and the value calls nothing,
    reads no memory and names nothing the block assigns after it: the pointer's first value
    at every read, so a read may name ``base`` in its place; else None."""
    found = declared_value(decl)
    fn = block.parent
    if found is None or fn is None or fn.type != "function_definition":
        return None
    value = strip(found[1])
    left, op = value.child_by_field_name("left"), text(value.child_by_field_name("operator"))
    base, off = (value, None) if value.type == "identifier" else \
        (strip(left), value.child_by_field_name("right")) \
        if value.type == "binary_expression" and op == "+" and left is not None else (None, None)
    params = fn.child_by_field_name("declarator")
    pointers = {text(d.child_by_field_name("declarator")) for d in walk(params)
                if d.type == "pointer_declarator" and d.parent is not None and
                d.parent.type == "parameter_declaration"} if params is not None else set()
    after = {text(n) for c in block.named_children if c.start_byte >= decl.end_byte
             for n in walk(c) if n.type == "identifier" and writer(n, address=True)}
    if base is None or base.type != "identifier" or text(base) not in pointers or any(
            n.type in ("call_expression", "subscript_expression", "pointer_expression",
                       "field_expression", "assignment_expression", "update_expression")
            or (n.type == "identifier" and text(n) in after) for n in walk(value)):
        return None
    return text(base), "" if off is None else text(off)


def _parenthesized(node: Node) -> str:
    return text(node) if strip(node).type in ("identifier", "number_literal") \
        else f"({text(node)})"


def _parenthesized_text(index: str) -> str:
    return index if index.isidentifier() else f"({index})"


def _walked(decl: Node) -> list[Edit] | None:
    """The edits reading the pointer ``decl`` declares through its index, or None."""
    var, block = _pointer(decl), decl.parent
    if var is None or block is None or block.type != "compound_statement":
        return None
    mentions = [n for s in block.named_children if s.start_byte >= decl.end_byte
                for n in walk(s) if n.type == "identifier" and text(n) == var]
    steps = [n for n in mentions if n.parent is not None and _stride(n.parent, var) is not None]
    step = steps[0].parent if len(steps) == 1 else None
    site = None if step is None else _site(step, var)
    # sum += *t++ * v: the read becomes t[idx], the step going with it
    postfix = None if step is None or site is not None else _postfix_read(step, var)
    loop = site[0] if site is not None else postfix[0] if postfix is not None else None
    if loop is None:
        return None
    loops = _nest(loop, block, var)
    outer = loop
    while outer.parent is not None and outer.parent != block:
        outer = outer.parent
    body = loop.child_by_field_name("body")
    if loops is None or body is None or any(
            n.type in ("break_statement", "goto_statement") for n in walk(outer)):
        return None
    index = _index(loops)
    by = _stride(step, var) if step is not None else None
    if index is None or by is None or not _invariant(by, outer, var):
        return None
    edits = [site[1]] if site is not None else []
    if not _steps(by, var):  # p += s: the taps s apart, counted as wide as the pointer's
        index = f"(long long){_parenthesized_text(index)} * {_parenthesized(by)}"
        folded = _folded(decl, block)
        if folded is not None:  # p = base + off: read from base (the families read params)
            var, off = folded
            index = f"{off} + {index}" if off else index
            edits.append((decl.start_byte, decl.end_byte, ""))
    for n in mentions:
        if n == steps[0]:
            if postfix is not None:
                edits.append((postfix[1].start_byte, postfix[1].end_byte, f"{var}[{index}]"))
            continue
        read = n.parent
        if read is None or not (body.start_byte <= n.start_byte < body.end_byte):
            return None
        if read.type == "pointer_expression" and text(read.child_by_field_name("operator")) \
                == "*" and read.child_by_field_name("argument") == n:
            edits.append((read.start_byte, read.end_byte, f"{var}[{index}]"))
        elif read.type == "subscript_expression" and read.child_by_field_name("argument") == n:
            k = read.child_by_field_name("indices") or read.child_by_field_name("index")
            if k is None:
                return None
            at = strip(k.named_children[0]) if k.type == "subscript_argument_list" else k
            edits.append((read.start_byte, read.end_byte, f"{var}[{index} + ({text(at)})]"))
        else:
            return None
    return edits
