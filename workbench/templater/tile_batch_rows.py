"""What a thread's rows carry in the CTA-per-data-tile family (:mod:`.tile_batch`): a
whole tile's early exit, and the values a row keeps across a barrier.

A tile's early exit: a graph kernel's blocked phase copies the tiles of the pivot's bands
and leaves, ``if (blockIdx.x == kb || blockIdx.y == kb) { if (inside) d_out[..] = cur;
return; }``, before its first barrier. Its test reads no thread's place: only block indices,
the kernel's scalar arguments (never assigned), named constants and locals computed from
those alone. Every thread of a tile takes the same side, so the tile leaves as one before
any barrier it would have met. Batched, the tiles of one CTA may take different sides and
the CTA's barriers are every thread's: the exit leaves the tile's work, not the CTA. With
rows a thread, a row that takes it skips the rest of its phase (its ``return`` a
``continue`` of the loop over the thread's rows, after the statements before it, so the
copy runs for every row the thread owns) and every later phase's rows test it again (the
test's locals recomputed there, as the rows recompute every local they read); in one pass
(no rows a thread), its value is kept in ``wb_left`` and every statement after it is run
only where it is false (a declaration after it must be a recomputable value: it is run
anyway, harmlessly). Recognised: a top-level ``if`` without ``else`` in the first phase
whose consequence is ``return;`` or a block ending in one, leaving no other way and calling
no barrier; any other ``return`` stays refused.

A value a row keeps across a barrier (``int cur = inside ? d_in[i * n + j] : INF;`` before
the barrier, ``cur = via < cur ? via : cur;`` after it): rows a thread run each phase once
per row, so the value is one register a row, ``cur[RPT]`` declared before the phases,
indexed by the row loop's counter (unrolled: registers). Legal for a scalar local declared
alone at the top level (no array, pointer or reference); its declaration becomes the row's
assignment.

The rows inside a phase's loop (the register tile's reuse): a phase whose rows each run a
loop that only reads memory and updates the row's registers (``for (k = 0; k < 32; ++k) {
int via = rowPiv[ti][k] + colPiv[k][tj]; cur = via < cur ? via : cur; }``) runs that loop
once with the rows inside it, ``for (k ..) for (row ..) body``, then the rest of the phase
row by row. The rows' bodies at one ``k`` touch disjoint registers, so their order is
free; unrolled, the rows' reads of one element (``colPiv[k][tj]``, the same for every row
of a thread where TY = 1) are loaded once for all of them, as a hand-written register
tile's ``cv[b]`` is. Legal (else the phase runs row by row, as before) where the statements
before the loop are only recomputable declarations (comments and pragmas), the loop's
header reads only its counter and names no local (the same trips for every row), and its
body synchronises and leaves nothing (no barrier, ``return``, ``break``, ``continue`` or
``goto``), calls only pure functions, writes only the held registers and its own locals,
and reads no array the phase writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    JUMPS,
    builtin,
    declared_name,
    is_barrier,
    strip,
    text,
    walk,
    write_target,
)
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls
from workbench.templater.regtile import Refused


@dataclass(frozen=True)
class TileExit:
    """``if (test) { body; return; }``: a whole tile's exit before its first barrier."""

    statement: Node
    test: Node
    leave: Node  # the ``return;``


def tile_exit(plan: Plan, first_phase: list[Node], values: Mapping[str, Node | None]
              ) -> TileExit | None:
    """The first phase's tile exit (module doc), or None where the kernel has no
    ``return``; raises Refused, with the line, at a ``return`` that is no such exit.
    ``values``: each top-level local's value (None: declared without one, or not a value
    read alike wherever it is read)."""
    returns = [n for n in walk(plan.body) if n.type == "return_statement"]
    if not returns:
        return None
    found = next((e for s in first_phase if (e := _exit(s)) is not None), None)
    stray = [r for r in returns if found is None or r != found.leave]
    if stray:
        raise Refused("a `return` that is no whole tile's exit before the first barrier "
                      "(`if (test) { ..; return; }` at the top level, its test reading no "
                      "thread's place): a thread that leaves would skip the tiles its CTA "
                      "runs after this one, and their barriers", stray[0])
    assert found is not None
    for stmt in _body(found.statement)[:-1]:
        for n in walk(stmt):
            if n.type in JUMPS or (n.type == "call_expression" and "sync" in text(
                    n.child_by_field_name("function"))):
                raise Refused(f"the tile's exit leaves or synchronises by `{text(n)}` before "
                              "its return", n)
    why = _thread_read(plan, found.test, values, set())
    if why is not None:
        raise Refused(f"the exit's test `{text(found.test)}` reads {why}: the threads of a "
                      "tile would not leave as one", found.statement)
    return found


def _body(stmt: Node) -> list[Node]:
    then = stmt.child_by_field_name("consequence")
    if then is None:
        return []
    if then.type != "compound_statement":
        return [then]
    return [c for c in then.named_children if c.type != "comment"]


def _exit(stmt: Node) -> TileExit | None:
    condition = stmt.child_by_field_name("condition")
    if stmt.type != "if_statement" or condition is None or \
            stmt.child_by_field_name("alternative") is not None:
        return None
    body = _body(stmt)
    if not body or body[-1].type != "return_statement" or body[-1].named_child_count:
        return None
    test = strip(condition.named_children[-1]) if condition.named_children else condition
    return TileExit(stmt, test, body[-1])


def _thread_read(plan: Plan, node: Node, values: Mapping[str, Node | None],
                 seen: set[str]) -> str | None:
    """What in ``node`` may differ between a tile's threads (a thread index, memory, a
    call, an assigned argument, a local not computed from block-uniform values alone);
    None where nothing does."""
    assigned = {text(t) for n in walk(plan.body) if (t := write_target(n)) is not None
                and t.type == "identifier"}
    params = {p.name: p for p in plan.kernel.params}
    for n in walk(node):
        if builtin(n, "threadIdx") is not None or builtin(n, "blockDim") is not None:
            return f"`{text(n)}`"
        if n.type in ("subscript_expression", "pointer_expression", "call_expression"):
            return f"`{text(n)}`"
        if n.type != "identifier" or text(n) in seen:
            continue
        name = text(n)
        if name in params:
            if params[name].is_pointer or name in assigned:
                return f"the argument `{name}`"
        elif name in values:
            value = values[name]
            if value is None:
                return f"the local `{name}`"
            seen.add(name)
            why = _thread_read(plan, value, values, seen)
            if why is not None:
                return f"`{name}`, which reads {why}"
    return None


def held_type(decl: Node, name: str) -> str:
    """The element type of the row registers ``name[RPT]`` standing for the scalar local
    ``decl`` declares alone; raises Refused where it is no such local."""
    declarators = decl.children_by_field_name("declarator")
    kind = decl.child_by_field_name("type")
    inner = declarators[0] if declarators else None
    if inner is not None and inner.type == "init_declarator":
        inner = inner.child_by_field_name("declarator")
    if len(declarators) != 1 or kind is None or inner is None or inner.type != "identifier" \
            or text(kind) == "auto":
        raise Refused(f"`{name}` lives across a barrier and is not a scalar declared alone: "
                      "rows a thread would need one a row", decl)
    return text(kind)


def held_declaration(decl: Node, reg: str) -> tuple[int, int, str]:
    """The span of ``decl`` that names the local, and what replaces it: ``int cur = v;``
    becomes ``cur[wb_j] = v;`` (``reg`` the register's subscript; the value rendered as the
    rest of the row is), ``int cur;`` nothing."""
    d = decl.children_by_field_name("declarator")[0]
    value = d.child_by_field_name("value") if d.type == "init_declarator" else None
    name = text(d.child_by_field_name("declarator") if value is not None else d)
    if value is None:
        return decl.start_byte, decl.end_byte, ""
    return decl.start_byte, value.start_byte, f"{name}{reg} = "


@dataclass(frozen=True)
class RowsInside:
    """A phase split around its loop the rows run inside (module doc): the statements
    before it (recomputable declarations), the loop, and the statements after it."""

    before: tuple[Node, ...]
    loop: Node
    after: tuple[Node, ...]


def rows_inside(plan: Plan, phase: list[Node], held: Mapping[str, str],
                derived: Mapping[str, bool]) -> RowsInside | None:
    """``phase`` (its statements the rows run) split around the loop its rows can run
    inside; None where none can (module doc). ``derived``: each top-level local's
    recomputability."""
    at = next((k for k, stmt in enumerate(phase) if stmt.type == "for_statement"), None)
    if at is None:
        return None
    for stmt in phase[:at]:
        if stmt.type in ("comment", "preproc_call"):
            continue
        if stmt.type != "declaration" or not all(
                derived.get(declared_name(stmt)[0] if d.type != "init_declarator" else
                            text(d.child_by_field_name("declarator")), False)
                for d in stmt.children_by_field_name("declarator")):
            return None
    loop = phase[at]
    body = loop.child_by_field_name("body")
    init = loop.child_by_field_name("initializer")
    if body is None or init is None or init.type != "declaration":
        return None
    counter = declared_name(init)[0]
    scalars = {p.name for p in plan.kernel.params if not p.is_pointer}
    header = [c for c in loop.children if c != body]
    if any(n.type == "identifier" and text(n) != counter and
           (text(n) in derived or text(n) in held or
            (text(n) in {p.name for p in plan.kernel.params} and text(n) not in scalars))
           for h in header for n in walk(h)):
        return None
    own = {text(d.child_by_field_name("declarator")) if d.type == "init_declarator" else text(d)
           for n in walk(body) if n.type == "declaration"
           for d in n.children_by_field_name("declarator")}
    pure = pure_calls(plan.source)
    written = {_array(t) for s in phase if s != loop for n in walk(s)
               if (t := write_target(n)) is not None and t.type == "subscript_expression"}
    for n in walk(body):
        if n.type in JUMPS or is_barrier(n) or n.type == "pointer_expression":
            return None
        if n.type == "call_expression" and text(n.child_by_field_name("function")) not in pure:
            return None
        target = write_target(n)
        if target is not None and (target.type != "identifier" or
                                   (text(target) not in held and text(target) not in own)):
            return None
        if n.type == "subscript_expression" and _array(n) in written:
            return None
    return RowsInside(tuple(phase[:at]), loop, tuple(phase[at + 1:]))


def _array(subscript: Node) -> str:
    node = subscript
    while node.type == "subscript_expression":
        node = node.child_by_field_name("argument")  # type: ignore[assignment]
    return text(node)


@dataclass(frozen=True)
class Rows:
    """How a thread's rows are walked: the row expression (of ``wb_j``), the tile's height,
    the test of a row past the written grid, and, with columns a thread, the tile's width
    and the grid's width in tiles (C)."""

    row: str
    ny: int
    past_y: str
    columns: tuple[int, str] | None


def rows_loop(g: Rows, work: list[str], around: str = "") -> str:
    """A phase's loop over a thread's rows, twice: a CTA whose tiles all lie inside the
    written grid runs it without a test (ptxas then reads a table's entries once for all
    rows: sm_90 at unseen18/dct8x8_blocks' expert pick 144 ld.shared and 40 registers, with
    the test 256 and 44), the last CTAs skipping the rows of tiles past the grid. ``around``:
    the header of a loop the rows run inside (:func:`rows_inside`). At
    TY = 1 a row's tile is 0 and its element the row: said as constants, so the rows'
    reads of one element of a tile are one load. With columns a thread, each row's loop
    runs the thread's CPT columns (``threadIdx.x`` the block's width apart), each its
    tile's and element's across, skipped past the grid."""
    row, ny = g.row, g.ny
    head = (f"const unsigned wb_ty = TY == 1 ? 0u : {row} / {ny}, "
            f"wb_ey = TY == 1 ? {row} : {row} % {ny};")
    by = "const unsigned wb_by = blockIdx.y * TY + wb_ty;"  # the rows' tile's, where read
    body = "\n    ".join(work)
    loop = "#pragma unroll\n    for (int wb_j = 0; wb_j < RPT; ++wb_j) {{\n    {}\n    }}"
    past = f"!wb_in_x || {g.past_y}"
    if g.columns is not None:
        nx, gx = g.columns
        col = f"(threadIdx.x + wb_i * ({nx} * TX / CPT))"
        head += (f"\n    #pragma unroll\n    for (int wb_i = 0; wb_i < CPT; ++wb_i) {{\n    "
                 f"const unsigned wb_tx = TX == 1 ? 0u : {col} / {nx}, "
                 f"wb_ex = TX == 1 ? {col} : {col} % {nx};\n    "
                 "const unsigned wb_bx = blockIdx.x * TX + wb_tx;")
        body += "\n    }"
        past = f"wb_bx >= {gx} || {g.past_y}"
    whole = loop.format("\n    ".join([head, *[by] * ("wb_by" in body), body]))
    edge = loop.format(f"{head}\n    {by}\n    if ({past}) continue;\n    {body}")
    if around:
        whole, edge = f"{around}{{\n    {whole}\n    }}", f"{around}{{\n    {edge}\n    }}"
    return f"if (wb_whole) {{\n    {whole}\n  }} else {{\n    {edge}\n  }}"
