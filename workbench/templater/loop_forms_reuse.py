"""A counter several loops reuse, read as a counter of each loop's own (issue 28: held-back set
17's rowl1_scale_warp).

``int64_t j = begin + lane; while (j < end) { s += fabsf(x[j]); j += 32; } ... for (j = begin
+ lane; j < end; j += 32) out[j] = x[j] * k;`` walks a row twice with one variable. The second
loop assigns it before any read, so nothing reads the value the first leaves: each loop is
the ``for`` declaring a counter of its own, and the families, which read a loop through its
``for`` header, then find two lane loops. :mod:`.loop_forms` respells such loops with the
rules here:

* The variable is dead after a statement (:func:`dead_after`) where, up to the block that
  declares it, every later statement naming it is a loop starting it afresh (:func:`_fresh`):
  a ``for`` declaring its own (its value not reading the name), or one this module rewrites
  in turn (``for (v = e; ...)``; ``v = e;`` starting a counted ``while``); no loop between the
  statement and that block runs it again, and nothing in that block takes its address (:func:`_address_of`:
  ``&x[j]`` takes another array's).
* ``for (v = e; c; u)`` (``e`` not reading ``v``) where ``v`` is dead after the loop becomes
  ``for (T v = e; c; u)`` (:func:`assigned_for`), ``T`` the type ``v`` is declared with
  (:func:`declared_type`: written out, not ``auto``; no array, reference, ``static``,
  ``extern`` or ``__shared__``): the loop's counter shadows the one it assigned, whose value
  nothing reads again.
* ``v = e;`` before a counted ``while`` starts it as its declaration would
  (:func:`assignment`, read by :func:`.loop_forms._counted`), written ``T v = e`` in the
  ``for``'s header.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from workbench.templater.analysis import LOOPS, strip, text, walk

#: (start byte, end byte, new text) of one edit of the source (as :mod:`.loop_forms`)
Edit = tuple[int, int, str]
#: The rewrite of a counted ``while`` (:func:`.loop_forms._counted`): its edits, or None.
Counted = Callable[[bytes, Node], list[Edit] | None]

_STORAGE = {"static", "extern", "__shared__", "__constant__", "__device__", "auto"}


def _names(node: Node, name: str) -> bool:
    return any(n.type == "identifier" and text(n) == name for n in walk(node))


def assignment(stmt: Node) -> tuple[str, Node] | None:
    """(name, value) of a statement ``v = e;`` whose value does not read ``v``, else None."""
    e = strip(stmt.named_children[0]) if stmt.type == "expression_statement" and \
        stmt.named_child_count == 1 else None
    if e is None or e.type != "assignment_expression" or \
            text(e.child_by_field_name("operator")) != "=":
        return None
    left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
    if left is None or right is None or strip(left).type != "identifier" or \
            _names(right, text(strip(left))):
        return None
    return text(strip(left)), right


def _declarator(d: Node, var: str) -> int | None:
    """Pointer levels of the declarator ``d`` of ``var`` (``*p``: 1), None where ``d``
    declares another name or an array or reference."""
    if d.type == "init_declarator":
        d = d.child_by_field_name("declarator") or d
    stars = 0
    while d.type == "pointer_declarator":
        stars += 1
        d = d.child_by_field_name("declarator") or d
    return stars if d.type == "identifier" and text(d) == var else None


def _declaring_block(node: Node, var: str) -> tuple[Node, Node] | None:
    """(the block declaring ``var`` around ``node``, that declaration), no loop between."""
    child, up = node, node.parent
    while up is not None and up.type not in LOOPS and up.type != "function_definition":
        if up.type == "compound_statement":
            for s in up.named_children:
                if s.start_byte >= child.start_byte:
                    break
                if s.type == "declaration" and any(
                        _declarator(d, var) is not None
                        for d in s.children_by_field_name("declarator")):
                    return up, s
        child, up = up, up.parent
    return None


def declared_type(node: Node, var: str) -> str | None:
    """The type a declaration of ``var`` of its own is written with (``int64_t``, ``const
    float*``), as the block around ``node`` declares it before ``node``, no loop between;
    None where it is not found or not a plain local (see the module's rules)."""
    found = _declaring_block(node, var)
    if found is None:
        return None
    decl = found[1]
    kind = decl.child_by_field_name("type")
    words = {text(c) for c in decl.children if c != kind}
    if kind is None or kind.type == "placeholder_type_specifier" or words & _STORAGE:
        return None
    stars = next(s for d in decl.children_by_field_name("declarator")
                 if (s := _declarator(d, var)) is not None)
    first = decl.children_by_field_name("declarator")[0]
    head = decl.text[:first.start_byte - decl.start_byte].decode() if decl.text else ""
    return " ".join(head.split()) + "*" * stars


def _fresh(data: bytes, stmts: list[Node], k: int, var: str, counted: Counted) -> int:
    """How many statements from ``stmts[k]`` on start ``var`` afresh (a loop with a counter
    of its own after the rewrite): 1 for a ``for`` declaring it or one :func:`assigned_for`
    rewrites, 2 for ``v = e;`` and the counted ``while`` after it that starts from it,
    else 0."""
    s = stmts[k]
    init = s.child_by_field_name("initializer") if s.type == "for_statement" else None
    if init is not None and init.type == "declaration":
        own = [d for d in init.children_by_field_name("declarator")
               if _declarator(d, var) is not None]
        value = own[0].child_by_field_name("value") if own else None
        return 1 if own and (value is None or not _names(value, var)) else 0
    if s.type == "for_statement":
        return 1 if assigned_for(data, s, counted) is not None else 0
    named = assignment(s)
    if named is None or named[0] != var or k + 1 >= len(stmts) or \
            stmts[k + 1].type != "while_statement":
        return 0
    edits = counted(data, stmts[k + 1]) or []  # the while's rewrite takes `v = e;` in
    return 2 if any(at == s.start_byte for at, _end, _new in edits) else 0


def _address_of(node: Node, var: str) -> bool:
    """``node`` takes the address of ``var`` or of a part of it (``&v``, ``&v.x``,
    ``&v[0]``): a pointer may then read it later. ``&p[v]`` (``__ldg(&x[c])``) takes the
    address of another array's element, only reading ``v``."""
    if node.type != "pointer_expression" or text(node.child_by_field_name("operator")) != "&":
        return False
    place = node.child_by_field_name("argument")
    while place is not None and strip(place).type in ("subscript_expression",
                                                      "field_expression"):
        place = strip(place).child_by_field_name("argument")
    return place is None or strip(place).type != "identifier" or text(strip(place)) == var


def dead_after(data: bytes, node: Node, var: str, counted: Counted) -> bool:
    """Nothing reads the value ``var`` holds when ``node`` ends (the module's first rule)."""
    found = _declaring_block(node, var)
    if found is None:
        return False
    block = found[0]
    if any(_address_of(n, var) for n in walk(block)):
        return False
    child = node
    while child != block:
        up = child.parent
        assert up is not None  # _declaring_block reached block from node
        stmts = [c for c in up.named_children if c.type != "comment"] \
            if up.type == "compound_statement" else []
        k = next((i + 1 for i, c in enumerate(stmts) if c == child), len(stmts))
        while k < len(stmts):
            if not _names(stmts[k], var):
                k += 1
                continue
            step = _fresh(data, stmts, k, var, counted)
            if step == 0:
                return False
            k += step
        if up.type != "compound_statement" and any(
                _names(c, var) for c in up.named_children if c.start_byte > child.end_byte):
            return False  # `if (c) loop; else use(v);`: the other branch reads it
        child = up
    return True


def assigned_for(data: bytes, loop: Node, counted: Counted) -> list[Edit] | None:
    """The edit declaring the counter a ``for (v = e; ...)`` assigns where ``v`` is dead
    after the loop (``for (int64_t j = e; ...)``), or None."""
    init = loop.child_by_field_name("initializer")
    if init is None or init.type != "assignment_expression":
        return None
    left, right = init.child_by_field_name("left"), init.child_by_field_name("right")
    if text(init.child_by_field_name("operator")) != "=" or left is None or right is None or \
            strip(left).type != "identifier":
        return None
    var = text(strip(left))
    kind = declared_type(loop, var)
    if kind is None or _names(right, var) or not dead_after(data, loop, var, counted):
        return None
    return [(init.start_byte, init.start_byte, f"{kind} ")]
