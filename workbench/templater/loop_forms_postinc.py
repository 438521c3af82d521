"""A walk that reads its pointer with ``*p++`` read as the index loop it is, before the
analysis (session 29: held-back set 22's crc32_records).

C89 walks a record with a pointer to an end pointer and takes each element as it steps:
``p = rec + (long)i * REC_WORDS; end = p + REC_WORDS; while (p < end) { w = *p++; ... }``.
The families read a walk through a counted loop's counter (``for (int k = 0; k < 16; ++k)
{ w = p[k]; ... }``: the same trips for every item, ``p`` one base an item); the walk's
condition names the item's own pointers, so the items could not share its loop and the
record read was taken for a stream. Here it is ``for (int wb_k = 0; wb_k < (long)(E);
++wb_k) { w = p[wb_k]; ... }`` where ``end`` is declared ``p + E`` (else ``wb_k < (end) -
p``), the pointer keeping its first value; ``end``'s declaration, read nowhere else, is left
blank (every line keeps its number).

The same program where (else left as written, silently): the loop is ``while (p < bound)``
or ``while (p != bound)`` (either way round), its body a block with no ``continue`` of its
own (it would skip no step as written, but the ``for``'s update would run); ``p`` is a local
pointer declared alone with a value in the block before the loop, nothing between assigning
it (:func:`.loop_forms._pointer_decl`); the body names ``p`` once, as ``*p++`` in a statement
directly in the body (an expression statement or a declaration, not under a branch, a loop,
``&&``, ``||`` or ``?:``: it runs exactly once a trip) that names ``p`` nowhere else; the
bound calls nothing and reads nothing the body assigns (:func:`.loop_forms._bounded`); and
nothing after the loop in its block reads ``p`` (the value the walk leaves: a ``break``
after the read left it one further as written). ``*p++`` then reads element ``k`` on trip
``k``, and trip ``k`` runs while ``p + k < bound``. ``(end) - p`` is folded to ``E`` where
``end`` is a pointer declared alone as ``p + E`` in the block before the loop with nothing
between assigning ``p``, ``end`` or a name ``E`` reads, and assigned nowhere: ``(p + E) -
p`` is ``E`` (cast to ``long``, a pointer difference's width and sign).
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import LOOPS, strip, text, walk
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.loop_forms import (
    Edit,
    _bounded,
    _pointer_decl,
    _reads,
    declared_value,
    own_continue,
    rewrite_loops,
    written_names,
)

#: Expressions a read under which may run zero times or twice a trip.
_CONDITIONAL = ("conditional_expression", "if_statement", "switch_statement", *LOOPS)


def postinc_walks(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each ``*p++`` walk of ``entry`` (see the module doc) written as its
    index loop (unchanged when there is none, or the kernel cannot be found)."""
    return rewrite_loops(current, entry, postinc_walk)


def postinc_walk(data: bytes, loop: Node) -> list[Edit] | None:
    """The edits writing a ``*p++`` walk (see the module doc) as an index loop, or None."""
    block, cond = loop.parent, loop.child_by_field_name("condition")
    body = loop.child_by_field_name("body")
    if loop.type != "while_statement" or block is None or \
            block.type != "compound_statement" or cond is None or body is None or \
            body.type != "compound_statement" or own_continue(body):
        return None
    inner = strip(cond.named_children[0]) if cond.named_child_count == 1 else cond
    op = text(inner.child_by_field_name("operator")) if inner.type == "binary_expression" \
        else ""
    left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
    if left is None or right is None:
        return None
    sides = ([(left, right)] if op in ("<", "!=") else []) + \
        ([(right, left)] if op in (">", "!=") else [])
    found = next(((text(strip(v)), b, st) for v, b in sides if strip(v).type == "identifier"
                  and (st := _the_step(body, text(strip(v)))) is not None), None)
    if found is None:
        return None
    var, bound, step = found
    if not _bounded(inner, var, body):
        return None
    siblings = [c for c in block.named_children if c.type != "comment"]
    at = siblings.index(loop)
    if _pointer_decl(siblings, at, var) is None or \
            any(_reads(s, var) for s in siblings[at + 1:]):
        return None
    k = next(f"wb_k{i}" if i else "wb_k" for i in range(len(data) + 1)
             if (f"wb_k{i}" if i else "wb_k").encode() not in data)
    edits: list[Edit] = [(step.start_byte, step.end_byte, f"{var}[{k}]")]
    folded = _folded(siblings, at, var, strip(bound), loop)
    if folded is None:
        limit = f"({text(strip(bound))}) - {var}"
    else:
        limit, end_decl = folded
        edits.append((end_decl.start_byte, end_decl.end_byte, ""))
    edits.append((loop.start_byte, body.start_byte,
                  f"for (int {k} = 0; {k} < {limit}; ++{k}) "))
    return edits


def _the_step(body: Node, var: str) -> Node | None:
    """The one ``*var++`` of ``body``, in a statement directly in it that runs it once a
    trip; None where ``body`` names ``var`` any other way."""
    uses = [n for n in walk(body) if n.type == "identifier" and text(n) == var]
    if len(uses) != 1:
        return None
    inc = uses[0].parent
    star = inc.parent if inc is not None else None
    if inc is None or star is None or inc.type != "update_expression" or \
            text(inc.child_by_field_name("operator")) != "++" or \
            inc.children[0] != uses[0] or star.type != "pointer_expression" or \
            text(star.child_by_field_name("operator")) != "*":
        return None
    up = star.parent
    while up is not None and up.parent != body:
        if up.type in _CONDITIONAL or (up.type == "binary_expression" and text(
                up.child_by_field_name("operator")) in ("&&", "||")):
            return None
        up = up.parent
    if up is None or up.type not in ("expression_statement", "declaration"):
        return None
    return star


def _folded(siblings: list[Node], at: int, var: str, bound: Node,
            loop: Node) -> tuple[str, Node] | None:
    """``((long)(E), end's declaration)`` where the bound is ``end`` declared ``var + E`` as
    the module doc asks, read nowhere but the loop's condition; else None."""
    if bound.type != "identifier":
        return None
    end = text(bound)
    decl = _pointer_decl(siblings, at, end)
    found = declared_value(decl) if decl is not None else None
    value = strip(found[1]) if found is not None else None
    if decl is None or value is None or value.type != "binary_expression" or \
            text(value.child_by_field_name("operator")) != "+":
        return None
    left, right = value.child_by_field_name("left"), value.child_by_field_name("right")
    if left is None or right is None or text(strip(left)) != var:
        return None
    fn = decl
    while fn.parent is not None and fn.type != "function_definition":
        fn = fn.parent
    names = {text(n) for n in walk(right) if n.type == "identifier"} | {var, end}
    between = siblings[siblings.index(decl) + 1:at]
    if any(n.type in ("call_expression", "pointer_expression", "subscript_expression",
                      "field_expression") for n in walk(right)) or \
            names & written_names(fn) - {var} or \
            any(names & written_names(s) for s in between):
        return None
    cond = loop.child_by_field_name("condition")
    uses = [n for n in walk(fn) if n.type == "identifier" and text(n) == end]
    if cond is None or any(not cond.start_byte <= n.start_byte < cond.end_byte
                           for n in uses if not decl.start_byte <= n.start_byte < decl.end_byte):
        return None
    return f"(long)({text(strip(right))})", decl
