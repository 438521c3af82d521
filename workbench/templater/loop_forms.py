"""Counted ``while`` loops read as the ``for`` loops they are, before the analysis (issue 28:
first contact).

``int ly = threadIdx.y; while (ly < H) { ...; ly += BH; }`` is the tile-load loop ``for (int
ly = threadIdx.y; ly < H; ly += BH) { ... }`` written by another hand; ``int t = 0; while (t
< 3) { ...; t++; }`` is a tap loop, ``int i = tid; while (i < n) { ...; i += stride; }`` a
grid-stride walk. The families read such loops through a ``for``'s initializer, condition
and update, so the same kernel lifted or was refused by the spelling of its loop alone.
Every counted ``while`` of the kernel is respelled; a loop that is not counted (run until a
value settles, a step that is not its last statement) stays a ``while``, which the families
that model such loops (escape-time items) read as written.

Rewritten only where the two are the same program and the loop is counted: the variable
(a number or a pointer) is declared alone, with a value, in the same block before the
``while`` (or assigned there, ``v = e;``, where a block around declares it: a counter reused
by several loops, :mod:`.loop_forms_reuse`), and the declaration may move to the loop
(:func:`_movable`, the one rule the other
loop spellings of :mod:`.loop_forms_open` use too): the statements between neither mention
it nor assign a name its value reads, and where there are some, they are declarations that
call and assign nothing or the value reads no memory and calls nothing; the condition
compares the variable with a bound (another local: ``src < end``) that reads nothing the
body assigns and calls nothing (a loop run until a value settles stays a ``while``), alone
or beside guards (``c < n && live``: conjuncts naming neither the variable nor anything the
body assigns, reading no memory and calling nothing, so the loop runs whole or not at all,
:mod:`.lane_bound` reads the ``for``); the
loop's body is a block whose last statement steps the variable (``v += s``, ``v -= s``,
``++v``, ``v++``, ``--v``, ``v--``, ``v = v + s``) or halves it (``v /= 2``, ``v >>= 1``: an
offset loop, whose condition may be the variable alone, ``while (offset)``); no ``continue`` in the body belongs to
this loop (in a ``for`` it would run the step, in the ``while`` it skips it); and nothing
after the loop reads the value it leaves (a ``for`` scopes it to the loop; a later loop
restarting the variable reads its own: :func:`.loop_forms_reuse.dead_after`, which also gives
``for (v = e; ...)`` its own ``T v``). The declaration becomes blank and
the step's statement empty, on their own lines, so every line keeps its number.

A ``while`` whose last statements step two or more pointers one element each (``while (p <
end) { ...; ++p; ++pw; }``: a tile walked with its weights beside it, held-back set 16's
kde2d_tiles) is the index loop ``for (int wb_k = 0; wb_k < (end) - p; ++wb_k)`` with each
pointer read at its base plus ``wb_k`` (:func:`_pointer_walk`): the families that run a
loop's statements once an item then find no step among them.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from workbench.templater.analysis import LOOPS, binary, chain, strip, text, walk
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.loop_forms_reuse import assigned_for, assignment, dead_after, declared_type
from workbench.templater.point_split import entry_body

#: Reads of the launch's geometry (``blockIdx.x``): no memory, the same value anywhere.
_GEOMETRY = ("threadIdx.", "blockIdx.", "blockDim.", "gridDim.")
#: Expressions that may write memory or a variable.
_WRITES = ("call_expression", "assignment_expression", "update_expression")


#: (start byte, end byte, new text) of one edit of the source
Edit = tuple[int, int, str]


def counted_whiles(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each counted ``while`` loop of ``entry`` written as its ``for``
    loop, a walk of pointers in step as an index loop (unchanged when there is none, or the
    kernel cannot be found: the analysis reports that itself)."""
    return rewrite_loops(current, entry, lambda data, loop: (
        _pointer_walk(data, loop) or _counted(data, loop) or _counted_down(data, loop))
        if loop.type == "while_statement" else assigned_for(data, loop, _counted)
        if loop.type == "for_statement" else None)


def rewrite_loops(current: InlinedSource, entry: str | None,
                  edits_of: Callable[[bytes, Node], list[Edit] | None]) -> InlinedSource:
    """``current`` with the edits ``edits_of`` gives each node of ``entry``'s body applied
    (None: that node stays), ``current`` itself where there are none."""
    body = entry_body(current, entry)
    if body is None:
        return current
    data = current.text.encode()
    edits: list[Edit] = []
    for loop in walk(body):
        found = edits_of(data, loop)
        if found is not None:
            edits.extend(found)
    for start, end, new in sorted(edits, reverse=True):
        data = data[:start] + new.encode() + data[end:]
    return InlinedSource(data.decode(), current.file, current.findings, current.origin) \
        if edits else current


def _reads(node: Node, name: str) -> bool:
    return any(n.type == "identifier" and text(n) == name for n in walk(node))


def _step(stmt: Node, var: str) -> bool:
    """``stmt`` only steps ``var`` by a value that does not read it."""
    if stmt.type != "expression_statement" or stmt.named_child_count != 1:
        return False
    e = strip(stmt.named_children[0])
    if e.type == "update_expression":
        arg = e.child_by_field_name("argument")
        return arg is not None and text(strip(arg)) == var
    if e.type != "assignment_expression":
        return False
    left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
    op = text(e.child_by_field_name("operator"))
    if left is None or right is None or text(strip(left)) != var:
        return False
    if op in ("+=", "-=", "/=", ">>="):  # a step, or a halving (an offset loop's)
        return not _reads(right, var)
    r = strip(right)
    if op != "=" or r.type != "binary_expression":
        return False
    a, b = r.child_by_field_name("left"), r.child_by_field_name("right")
    return text(r.child_by_field_name("operator")) in ("+", "-") and a is not None and \
        b is not None and text(strip(a)) == var and not _reads(b, var)


def written_names(body: Node) -> set[str]:
    """The names ``body`` writes: a scalar assigned, or the array a subscript stores to (not
    the names of its index: ``out[r * cols + c] = v`` writes out, not cols)."""
    out = set()
    for n in walk(body):
        if n.type in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
            while target is not None and strip(target).type == "subscript_expression":
                target = strip(target).child_by_field_name("argument")
            if target is not None:
                out |= {text(m) for m in walk(target) if m.type == "identifier"}
    return out


def _bounded(cond: Node, var: str, body: Node) -> bool:
    """``cond`` is ``var OP bound`` (either side) with a bound that calls nothing and reads
    nothing ``body`` assigns."""
    cond = strip(cond)
    if cond.type == "identifier":  # while (v): v != 0, a bound of nothing the body assigns
        return text(cond) == var
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    op = text(cond.child_by_field_name("operator")) if cond.type == "binary_expression" else ""
    if op not in ("<", "<=", ">", ">=", "!=") or left is None or right is None:
        return False
    sides = {text(strip(left)): right, text(strip(right)): left}
    bound = sides.get(var)
    if bound is None or _reads(bound, var) or any(n.type == "call_expression"
                                                  for n in walk(bound)):
        return False
    return not {text(n) for n in walk(bound) if n.type == "identifier"} & written_names(body)


def own_continue(body: Node) -> bool:
    """A ``continue`` in ``body`` that belongs to the loop ``body`` is the body of."""
    def visit(n: Node) -> bool:
        if n.type == "continue_statement":
            return True
        return any(visit(c) for c in n.children if c.type not in LOOPS)
    return visit(body)


def declared_value(decl: Node) -> tuple[str, Node] | None:
    """(name, value) of a declaration of one variable with a value, else None."""
    ds = decl.children_by_field_name("declarator") if decl.type == "declaration" else []
    if len(ds) != 1 or ds[0].type != "init_declarator":
        return None
    name, value = ds[0].child_by_field_name("declarator"), ds[0].child_by_field_name("value")
    while name is not None and name.type == "pointer_declarator":
        name = name.child_by_field_name("declarator")
    if name is None or name.type != "identifier" or value is None:
        return None
    return text(name), value


def _movable(siblings: list[Node], at: int, var: str,
             start: Callable[[Node], tuple[str, Node] | None] = declared_value) -> Node | None:
    """The declaration of ``var`` alone with a value among ``siblings`` before ``at`` (or
    the statement ``start`` reads as (name, value) for it: :func:`.loop_forms_reuse.assignment`'s
    ``v = e;``) that may move to ``at``: the statements between neither mention ``var`` nor
    assign a name its value reads, and where there are some, either they are declarations
    that call and assign nothing (they write no memory, so a read of memory in the value may
    move past them) or the value reads no memory and calls nothing."""
    for k in range(at - 1, -1, -1):
        found = start(siblings[k])
        if found is None or found[0] != var:
            if _reads(siblings[k], var):
                return None
            continue
        between = siblings[k + 1:at]
        read = {text(n) for n in walk(found[1]) if n.type == "identifier"}
        quiet = all(b.type == "declaration" and not any(n.type in _WRITES for n in walk(b))
                    for b in between)
        if any(written_names(b) & read for b in between) or \
                (not quiet and _reads_memory(found[1])):
            return None
        return siblings[k]
    return None


def _steady(guard: Node, var: str, body: Node) -> bool:
    """``guard``, a conjunct beside the loop's comparison, has one value for the whole loop:
    it names neither ``var`` nor anything ``body`` assigns, reads no memory and calls
    nothing."""
    names = {text(n) for n in walk(guard) if n.type == "identifier"}
    return var not in names and not names & written_names(body) and not _reads_memory(guard)


def _reads_memory(value: Node) -> bool:
    """``value`` calls a function or reads memory (a subscript, a dereference, a member that
    is not the launch's geometry)."""
    return any(n.type in ("call_expression", "subscript_expression", "pointer_expression",
                          "field_expression") and not text(n).startswith(_GEOMETRY)
               for n in walk(value))


def _loop_var(cond: Node) -> list[str]:
    """The names a loop's comparison compares (either side)."""
    cond = strip(cond)
    if cond.type == "identifier":  # while (v)
        return [text(cond)]
    sides = [cond.child_by_field_name("left"), cond.child_by_field_name("right")] \
        if cond.type == "binary_expression" else []
    return [text(strip(n)) for n in sides if n is not None and strip(n).type == "identifier"]


def _counted(data: bytes, loop: Node) -> list[Edit] | None:
    """The edits writing ``loop`` as a ``for`` loop, or None where it is not counted."""
    block = loop.parent
    cond, body = loop.child_by_field_name("condition"), loop.child_by_field_name("body")
    if block is None or block.type != "compound_statement" or cond is None or body is None \
            or body.type != "compound_statement":
        return None
    siblings = [c for c in block.named_children if c.type != "comment"]
    at = siblings.index(loop)
    inner = cond.named_children[0] if cond.type in (
        "parenthesized_expression", "condition_clause") and cond.named_child_count == 1 \
        else cond
    stmts = [c for c in body.named_children if c.type != "comment"]
    parts = chain(inner, "&&")  # the comparison and the guards beside it (live && i < n)
    found = [(d, v, p) for p in parts for v in _loop_var(p) if stmts and _step(stmts[-1], v)
             and (d := _movable(siblings, at, v) or
                  _movable(siblings, at, v, assignment))]  # the name the body steps
    if len(found) != 1:
        return None
    decl, var, compare = found[0]
    kind = "" if decl.type == "declaration" else declared_type(loop, var)  # v = e; restarts
    if kind is None or not _step(stmts[-1], var) or not _bounded(compare, var, body) or \
            not all(_steady(g, var, body) for g in parts if g != compare) or \
            own_continue(body) or not dead_after(data, loop, var, _counted):
        return None
    step = text(strip(stmts[-1].named_children[0]))
    head = (f"for ({kind + ' ' if kind else ''}{data[decl.start_byte:decl.end_byte].decode()} "
            f"{data[inner.start_byte:inner.end_byte].decode()}; {step}) ")
    return [(decl.start_byte, decl.end_byte, ""),
            (loop.start_byte, body.start_byte, head),
            (stmts[-1].start_byte, stmts[-1].end_byte, "")]


def _counted_down(data: bytes, loop: Node) -> list[Edit] | None:
    """``int v = e; while (v-- > 0) { .. }`` as ``for (int v = e; v > 0; --v) { .. }``
    where the body never names ``v`` (the test steps it; the same trips: e, or none when e
    is not above 0), no ``continue`` is the loop's and nothing after it reads ``v`` (the
    ``while`` leaves -1 there, the ``for`` 0); None for any other loop."""
    block = loop.parent
    cond, body = loop.child_by_field_name("condition"), loop.child_by_field_name("body")
    inner = cond.named_children[0] if cond is not None and cond.named_child_count == 1 \
        else None
    parts = binary(inner) if inner is not None else None
    if block is None or block.type != "compound_statement" or body is None or \
            body.type != "compound_statement" or parts is None or parts[1] != ">" or \
            text(strip(parts[2])) != "0" or parts[0].type != "update_expression" or \
            not text(parts[0]).replace(" ", "").endswith("--"):
        return None
    counter = parts[0].child_by_field_name("argument")
    var = text(counter) if counter is not None and counter.type == "identifier" else ""
    siblings = [c for c in block.named_children if c.type != "comment"]
    decl = _movable(siblings, siblings.index(loop), var) if var else None
    if decl is None or decl.type != "declaration" or _reads(body, var) or \
            own_continue(body) or not dead_after(data, loop, var, _counted):
        return None
    head = f"for ({data[decl.start_byte:decl.end_byte].decode()} {var} > 0; --{var}) "
    return [(decl.start_byte, decl.end_byte, ""), (loop.start_byte, body.start_byte, head)]


def _unit_step(stmt: Node) -> str | None:
    """The name ``stmt`` moves one element on (``++p``, ``p++``, ``p += 1``, ``p = p + 1``)."""
    if stmt.type != "expression_statement" or stmt.named_child_count != 1:
        return None
    e = strip(stmt.named_children[0])
    target = e.child_by_field_name("argument" if e.type == "update_expression" else "left")
    right = e.child_by_field_name("right")
    op = text(e.child_by_field_name("operator"))
    if target is None or strip(target).type != "identifier" or not _step(stmt, text(target)):
        return None
    if e.type == "update_expression":
        return text(target) if op == "++" else None
    if op == "=" and right is not None:
        r = strip(right)
        op = text(r.child_by_field_name("operator")) + "="
        right = r.child_by_field_name("right")
    return text(target) if op == "+=" and right is not None and text(strip(right)) == "1" \
        else None


def _pointer_decl(siblings: list[Node], at: int, var: str) -> Node | None:
    """The declaration of the pointer ``var`` alone with a value among ``siblings`` before
    ``at``, nothing between assigning it."""
    for k in range(at - 1, -1, -1):
        found = declared_value(siblings[k])
        if found is not None and found[0] == var:
            d = siblings[k].children_by_field_name("declarator")[0]
            name = d.child_by_field_name("declarator")
            pointer = name is not None and name.type == "pointer_declarator"
            between = siblings[k + 1:at]
            return siblings[k] if pointer and not any(var in written_names(b) for b in between) \
                else None
    return None


def _indexed(use: Node, var: str, k: str) -> Edit:
    """The edit reading the walked pointer ``var`` at ``use`` as its base and the count
    ``k``: ``*p`` -> ``p[k]``, ``p->x`` -> ``p[k].x``, ``p[j]`` -> ``p[k + (j)]``, else ``(p +
    k)``."""
    read = use.parent
    if read is not None and read.type == "pointer_expression" and \
            text(read.child_by_field_name("operator")) == "*":
        return read.start_byte, read.end_byte, f"{var}[{k}]"
    if read is not None and read.type == "field_expression" and \
            text(read.child_by_field_name("operator")) == "->":
        field = read.child_by_field_name("field")
        return read.start_byte, read.end_byte, f"{var}[{k}].{text(field)}"
    at = read.child_by_field_name("indices") if read is not None and \
        read.type == "subscript_expression" else None
    if at is not None and read is not None and read.child_by_field_name("argument") == use:
        index = strip(at.named_children[0]) if at.type == "subscript_argument_list" else at
        return read.start_byte, read.end_byte, f"{var}[{k} + ({text(index)})]"
    return use.start_byte, use.end_byte, f"({var} + {k})"


def _pointer_walk(data: bytes, loop: Node) -> list[Edit] | None:
    """The edits writing a walk of pointers in step as an index loop, or None.

    ``const float2* p = tile; const float2* end = tile + count; const float* pw = weights;
    while (p < end) { ...; ++p; ++pw; }`` visits ``[tile, end)`` one element a pass with
    ``pw`` beside ``p``: it is ``for (int wb_k = 0; wb_k < end - p; ++wb_k) { ... }`` with
    each read of a walked pointer at its base plus ``wb_k`` (``*pw`` -> ``pw[wb_k]``, ``p->x``
    -> ``p[wb_k].x``), the pointers keeping their first values. Rewritten where the body's
    last statements step two or more pointers by one each and nothing else (one walk, its
    companions beside it), the condition is ``p < bound`` or ``p != bound`` (either way
    round) with a bound that reads nothing the body assigns and calls nothing; each walked
    pointer is a local declared alone with a value in the block before the loop, nothing
    between assigning it, the rest of the body assigns none, nothing after the loop names
    one; no ``continue`` of the loop's own (it would skip the steps). A walk of one pointer
    is a counted ``while`` (:func:`_counted`)."""
    block = loop.parent
    cond, body = loop.child_by_field_name("condition"), loop.child_by_field_name("body")
    if block is None or block.type != "compound_statement" or cond is None or body is None \
            or body.type != "compound_statement" or own_continue(body):
        return None
    inner = strip(cond.named_children[0]) if cond.named_child_count == 1 else cond
    stmts = [c for c in body.named_children if c.type != "comment"]
    last = len(stmts)
    while last > 0 and _unit_step(stmts[last - 1]) is not None:
        last -= 1
    walked = [_unit_step(s) or "" for s in stmts[last:]]
    left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
    op = text(inner.child_by_field_name("operator")) if inner.type == "binary_expression" \
        else ""
    var = text(strip(left)) if left is not None and op in ("<", "!=") else \
        text(strip(right)) if right is not None and op in (">", "!=") else ""
    bound = right if var and left is not None and text(strip(left)) == var else left
    if len(walked) < 2 or len(set(walked)) != len(walked) or var not in walked or \
            bound is None or not _bounded(inner, var, body) or \
            any(n in written_names(s) for s in stmts[:last] for n in walked):
        return None
    siblings = [c for c in block.named_children if c.type != "comment"]
    at = siblings.index(loop)
    if any(_pointer_decl(siblings, at, n) is None or
           any(_reads(s, n) for s in siblings[at + 1:]) for n in walked):
        return None
    k = next(f"wb_k{i}" if i else "wb_k" for i in range(len(data) + 1)
             if (f"wb_k{i}" if i else "wb_k").encode() not in data)
    edits: list[Edit] = [(loop.start_byte, body.start_byte,
                          f"for (int {k} = 0; {k} < ({text(strip(bound))}) - {var}; ++{k}) ")]
    edits += [(s.start_byte, s.end_byte, "") for s in stmts[last:]]
    edits += [_indexed(n, text(n), k) for s in stmts[:last] for n in walk(s)
              if n.type == "identifier" and text(n) in walked]
    return edits
