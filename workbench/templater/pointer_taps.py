"""A pointer walked over a window's taps read as the index it stands for, before the analysis
(issue 28: first contact, dwconv5_nchw of held-back set 13).

``const float* tap = wt + c * 25; for (int dy = -2; dy <= 2; ++dy) for (int dx = -2; dx <=
2; ++dx, ++tap) acc += *tap * v;`` reads the filter at ``tap[(dy + 2) * 5 + (dx + 2)]``: the
pointer counts the taps of the nest, one a step of its innermost loop. The window families
read a tap's weight through its index (what it depends on: the loop variables, never the
output point), so the same convolution lifted or was refused by the spelling of its taps
alone. Here the walk becomes that index: the step leaves the loop, and each read ``*p``
becomes ``p[idx]`` (``p[k]``: ``p[idx + (k)]``), the pointer keeping its first value.

Rewritten only where the two are the same program: the pointer is declared alone, with a
value, in a block; it is stepped in one place, by one (``++p``, ``p++``, ``p += 1``), either
in the update of a ``for`` loop L beside the loop's own step (``++dx, ++p``) or as the last
statement of L's body (then no ``continue`` of L's own skips it); L and every loop around it
up to that block form a nest, each loop a direct statement of the one around it (it runs on
every pass of its parent), each ``for (int v = lo; v < hi; ++v)`` (or ``<=``, ``v++``, ``v
+= 1``) with constant bounds (the file's integer macros read as their values) and its
variable never assigned in its body; no loop of the nest around L has a ``continue`` of its
own (it would skip L's steps), and no ``break`` or ``goto`` sits anywhere in the nest;
every other mention of the pointer is a read ``*p`` or ``p[k]`` inside L's body (so nothing
reads the pointer's value before, between or after the steps). Anything else stays as
written.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.core.cuda_source import CudaSourceError, parse_cuda
from workbench.templater.analysis import integer_macros as reading_constants
from workbench.templater.analysis import strip, text, walk
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.loop_forms import Edit, _assigned, _declared, _own_continue, rewrite_loops
from workbench.templater.loop_forms_open import _signed_value
from workbench.templater.macros import integer_macros

#: (variable, first value, steps) of one counted loop of the nest
_Counted = tuple[str, int, int]


def pointer_taps(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each pointer walked over a nest's taps in ``entry`` read through its
    index (unchanged where there is none or the kernel cannot be found)."""
    try:
        defined = integer_macros(parse_cuda(current.text, current.file))
    except CudaSourceError:
        return current
    with reading_constants({m.name: m.value for m in defined.values()}):
        return rewrite_loops(current, entry, lambda data, n: _walked(n)
                             if n.type == "declaration" else None)


def _pointer(decl: Node) -> str | None:
    """The name a declaration of one pointer with a value declares, else None."""
    found = _declared(decl)
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
    found = _declared(init) if init is not None and init.type == "declaration" else None
    if found is None or cond is None or body is None or len(update) != 1:
        return None
    var, value = found
    cond = strip(cond)
    op = text(cond.child_by_field_name("operator")) if cond.type == "binary_expression" else ""
    left = cond.child_by_field_name("left")
    lo, hi = _signed_value(value), _signed_value(cond.child_by_field_name("right"))
    if op not in ("<", "<=") or left is None or text(strip(left)) != var or lo is None or \
            hi is None or not _steps(update[0], var) or var in _assigned(body):
        return None
    count = hi - lo + (op == "<=")
    return (var, lo, count) if count > 0 else None


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
        rest = [text(p) for p in _comma_parts(parent) if not _steps(p, var)]
        return loop, (parent.start_byte, parent.end_byte, ", ".join(rest))
    stmt = parent
    body = None if stmt is None else stmt.parent
    loop = None if body is None else body.parent
    if stmt is None or stmt.type != "expression_statement" or body is None or \
            body.type != "compound_statement" or loop is None or loop.type != "for_statement" \
            or [c for c in body.named_children if c.type != "comment"][-1] != stmt or \
            _own_continue(body):
        return None
    return loop, (stmt.start_byte, stmt.end_byte, "")


def _nest(inner: Node, block: Node, var: str) -> list[_Counted] | None:
    """The counted loops from the one in ``block`` down to ``inner`` (L), outermost first,
    where each runs on every pass of the one around it; else None."""
    update = inner.child_by_field_name("update")
    own = [p for p in _comma_parts(update) if not _steps(p, var)] if update is not None else []
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
        loop = None if up is None or up.type != "compound_statement" else up.parent
        update = None if loop is None else loop.child_by_field_name("update")
        if up is None or loop is None or loop.type != "for_statement" or update is None or \
                _own_continue(up):
            return None
        own = [update]
    return None


def _index(loops: list[_Counted]) -> str:
    """The tap the nest's loops stand at, counted from 0 (``(dy + 2) * 5 + (dx + 2)``)."""
    def offset(v: str, lo: int) -> str:
        return v if lo == 0 else f"({v} - {lo})" if lo > 0 else f"({v} + {-lo})"
    out = offset(loops[0][0], loops[0][1])
    for v, lo, count in loops[1:]:
        out = f"{out} * {count} + {offset(v, lo)}"
    return out


def _walked(decl: Node) -> list[Edit] | None:
    """The edits reading the pointer ``decl`` declares through its index, or None."""
    var, block = _pointer(decl), decl.parent
    if var is None or block is None or block.type != "compound_statement":
        return None
    mentions = [n for s in block.named_children if s.start_byte >= decl.end_byte
                for n in walk(s) if n.type == "identifier" and text(n) == var]
    steps = [n for n in mentions if n.parent is not None and _steps(n.parent, var)]
    step = steps[0].parent if len(steps) == 1 else None
    site = None if step is None else _site(step, var)
    if site is None:
        return None
    loop, removal = site
    loops = _nest(loop, block, var)
    outer = loop
    while outer.parent is not None and outer.parent != block:
        outer = outer.parent
    body = loop.child_by_field_name("body")
    if loops is None or body is None or any(
            n.type in ("break_statement", "goto_statement") for n in walk(outer)):
        return None
    index = _index(loops)
    edits = [removal]
    for n in mentions:
        if n == steps[0]:
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
