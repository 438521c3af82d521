"""A CTA per fixed-size data tile: tiles a CTA across and down, rows a thread, shared padding.

The family: a 2-D launch block of literal sizes ``(NX, NY)`` whose CTA works on one tile of
the data whose extent is part of what the kernel computes (an 8 x 8 block transform, a
per-tile Walsh-Hadamard): the thread is the tile's element, the block the tile's index, and
some loop ``for (k = 0; k < E; ..)`` with ``E`` the block's extent reads a ``__shared__``
array at ``k`` (a dot product across the tile). Unlike a stencil's or a GEMM's tile, the
tile's edge is no knob here (a 16 x 16 DCT is another transform), so :mod:`.block` and
:mod:`.smem_tiles` must not resize it; 64-thread CTAs of tiny tiles starve the machine. The
knobs (the hand-written expert's of unseen18/dct8x8_blocks):

- TX, TY: tiles a CTA across and down. The CTA of ``NX TX x NY TY / RPT`` threads is TX x TY
  virtual CTAs of the kernel as written: thread ``(x, y)`` is element ``(x % NX, y % NY)`` of
  tile ``(x / NX, y / NY)``, whose block index is ``blockIdx * T + tile``; every
  ``threadIdx``/``blockIdx``/``blockDim`` is read through these. The grid counts the written
  grid's tiles by CTAs, ``ceil_div(G, T)``. A tile past the written grid (the last CTA's,
  where T does not divide it) skips its rows where rows a thread are lifted, and only the
  CTAs at the grid's edge test for it (:func:`_rows`); else its block index is clamped to
  the grid's last (it recomputes the last tile and stores what it stored: legal because no
  global array is both read and written and nothing is atomic; the clamp costs registers:
  61 against 40 at the expert's pick). Each ``__shared__`` array gains the tile's index (a
  2-D ``[A][B]`` becomes ``[A TY][B TX + PAD]``, tile ``(i, j)``'s rows and columns
  interleaved as the threads are; a 1-D ``[E]`` becomes ``(E + PAD) TX TY``), except a
  *table*: an array every tile fills alike (each top-level statement writing it,
  ``T[ty][tx] = v;`` or ``if (tid < 64) T[..] = v;``, is no declaration, reads no memory and
  no block index and assigns nothing else declared outside it) and reads only after a
  barrier, which stays one copy a CTA, filled once: each fill runs for every thread of the
  written CTA, by the CTA's flat thread index strided over its threads (:func:`_fill`), in
  its place in one pass, at the head of its phase outside the rows with rows a thread.
  Filled by tile 0 inside the rows, each of its RPT row copies carried a cosf (sm_90 at the
  expert's pick 16 copies of its slow path, a 32-byte stack frame; the expert's one).
- RPT: rows a thread. Each barrier-separated phase runs ``RPT`` times, for rows ``threadIdx.y
  + j NY TY / RPT``; the locals a later phase's rows read are recomputed there (and those a
  table's fill reads, in its loop), legal where each is declared once with a value that
  reads no memory and is never assigned; a scalar that is not (a sum carried across a
  barrier) is one register a row, ``s[RPT]`` (:mod:`.tile_batch_rows`); else the note names
  the local and its line, and RPT is not lifted.
- PAD: floats of padding a shared tile's row (or a 1-D tile).

Legal where the analysis shows (else a note with the line, and nothing is lifted here): every
barrier a top-level statement, no ``return`` but a whole tile's exit before the first
barrier (:mod:`.tile_batch_rows`), no ``z`` index, ``gridDim`` unread, no
atomics or fences, no pointer locals, pointer arguments read and written only through
subscripts and none both, no array written but the kernel's arguments, locals and shared
arrays, each shared array declared at the top level with constant extents and read only
through whole subscripts, the written grid's rules in the kernel's scalar arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tree_sitter import Node

from workbench.templater.analysis import (
    builtin,
    identifiers,
    is_barrier,
    single_values,
    text,
    walk,
)
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused
from workbench.templater.rules import rule_in_c, scalar_sizes
from workbench.templater.tile_batch_facts import (
    BARRIER,
    SharedArray,
    TileLocal,
    carried_locals,
    chain,
    check_shape,
    declarator_of,
    shared_arrays,
    split_phases,
    tile_locals,
    tile_shape,
    top_statements,
)
from workbench.templater.tile_batch_rows import (
    Rows,
    RowsInside,
    held_declaration,
    rows_inside,
    rows_loop,
    tile_exit,
)

_TILES = [1, 2, 4, 8]


def lift_tile_batch(plan: Plan) -> bool:
    """Apply the family where the kernel is a CTA per fixed-size data tile; False (with a
    note where the kernel has the family's shape but the lift is not legal) otherwise."""
    shape = tile_shape(plan)
    if shape is None:
        return False
    try:
        _lift(plan, *shape)
    except Refused as no:
        plan.note("TX", False, no.reason, no.node)
        return False
    return True


def _held_edits(plan: Plan, held: dict[str, str], locals_: dict[str, TileLocal],
                reg: str) -> list[_Item]:
    """A held local's declaration as its row's assignment, every read of it its row's
    (``reg``: the register's subscript, ``[wb_j]`` or ``[wb_j][wb_i]``)."""
    out: list[_Item] = []
    for name in held:
        start, end, new = held_declaration(locals_[name].stmt, reg)
        out.append((start, end, 1, _const(new)))
        out += [_put(n, f"{name}{reg}") for n in identifiers(plan.body)
                if text(n) == name and n.parent is not None and
                n.parent.type != "init_declarator" and not (start <= n.start_byte < end)]
    return out


def in_c(rule: str, plan: Plan) -> str:
    """A grid rule in C over the kernel's scalar arguments (:func:`.rules.rule_in_c`), or
    Refused."""
    c = rule_in_c(rule, scalar_sizes(plan.scalars))
    if c is None:
        raise Refused(f"the grid rule `{rule}` reads something other than the kernel's "
                      "scalar arguments and integers (the last tile is clamped to it)",
                      plan.body)
    return c


#: An edit of :func:`_render`: (start, end, rank, make over the inner text).
_Item = tuple[int, int, int, Callable[[str], str]]


def _render(data: bytes, start: int, end: int, items: list[_Item]) -> str:
    """``data[start:end]`` with ``items`` applied, nested ones inside their container (sorted
    by start, longest first, wraps (rank 0) before replacements (1) of the same span)."""
    out, pos, i = [], start, 0
    while i < len(items):
        s, e, _rank, make = items[i]
        inner = [it for it in items[i + 1:] if it[0] >= s and it[1] <= e]
        out.append(data[pos:s].decode())
        out.append(make(_render(data, s, e, inner)))
        pos, i = e, i + 1 + len(inner)
    out.append(data[pos:end].decode())
    return "".join(out)


def _const(new: str) -> Callable[[str], str]:
    return lambda _inner: new


def _put(node: Node, new: str) -> _Item:
    return (node.start_byte, node.end_byte, 1, lambda _inner: new)


def _wrap(node: Node, prefix: str, suffix: str = "") -> _Item:
    return (node.start_byte, node.end_byte, 0, lambda inner: f"{prefix}{inner}{suffix}")


def _lift(plan: Plan, nx: int, ny: int) -> None:
    stmts = top_statements(plan)
    phases = split_phases(stmts)
    exit_ = tile_exit(plan, phases[0], single_values(plan.body))
    check_shape(plan, exit_)
    locals_ = tile_locals(plan, phases)
    arrays = shared_arrays(plan, phases, locals_)
    gx, gy = in_c(plan.grid[0], plan), in_c(plan.grid[1], plan)
    fills = {f for a in arrays for f in a.fills}
    held: dict[str, str] = {}
    try:
        carried: list[list[Node]] | None
        carried, held = carried_locals(phases, locals_, fills, exit_)
        rows_note = None
    except Refused as no:
        carried, rows_note = None, no
    edits = _builtins(plan, nx, ny) + [it for a in arrays for it in _array_edits(plan, a)]
    plain = sorted(edits, key=lambda it: (it[0], -it[1], it[2]))  # the exit's test's
    insides: list[RowsInside | None] = []
    if carried is not None:
        derived = {name: loc.derived for name, loc in locals_.items()}
        insides = [rows_inside(plan, [s for s in phase if s not in fills and
                                      not any(a.decl == s for a in arrays)], held, derived)
                   if held and (exit_ is None or k) else None
                   for k, phase in enumerate(phases)]
    cols = any(i is not None for i in insides)  # columns a thread: a register tile's reuse
    reg = "[wb_j][wb_i]" if cols else "[wb_j]"
    if carried is not None:
        edits += _held_edits(plan, held, locals_, reg)
        if exit_ is not None:  # the row leaves its phase (module doc of tile_batch_rows)
            edits.append(_put(exit_.leave, "continue;"))
    elif exit_ is not None:
        edits += [_put(exit_.leave, ""), _put(exit_.test, "wb_left")]
    items = sorted(edits, key=lambda it: (it[0], -it[1], it[2]))

    def show(stmt: Node) -> str:
        return _render(plan.source.data, stmt.start_byte, stmt.end_byte,
                       [it for it in items if stmt.start_byte <= it[0] and
                        it[1] <= stmt.end_byte])

    shared = [s for s in stmts if any(a.decl == s for a in arrays)]
    x_threads = f"{nx} * TX / CPT" if cols else f"{nx} * TX"
    threads = f"{nx} * TX * {ny} * TY" if carried is None else \
        f"{nx} * TX * ({ny} * TY / RPT)" if not cols else f"({x_threads}) * ({ny} * TY / RPT)"

    def fill(stmt: Node) -> str:
        return _fill(stmt, [show(s) for s in _fill_locals(stmt, locals_)], show(stmt), nx, ny,
                     x_threads, threads)

    lines = [show(s) for s in shared]
    x = (f"const unsigned wb_tx = TX == 1 ? 0u : threadIdx.x / {nx}, "
         f"wb_ex = TX == 1 ? threadIdx.x : threadIdx.x % {nx};")
    if carried is None:  # one pass: a tile past the written grid redoes the last one
        lines += [x, f"const unsigned wb_bxv = blockIdx.x * TX + wb_tx, wb_gx = {gx};",
                  "const unsigned wb_bx = TX == 1 || wb_bxv < wb_gx ? wb_bxv : wb_gx - 1;",
                  f"const unsigned wb_ty = threadIdx.y / {ny}, wb_ey = threadIdx.y % {ny};",
                  f"const unsigned wb_byv = blockIdx.y * TY + wb_ty, wb_gy = {gy};",
                  "const unsigned wb_by = TY == 1 || wb_byv < wb_gy ? wb_byv : wb_gy - 1;"]
        left = False  # past the tile's exit: run where it was not taken
        for s in stmts:
            if s in shared:
                continue
            shown = f"{BARRIER}();" if is_barrier(s) else fill(s) if s in fills else show(s)
            if exit_ is not None and s == exit_.statement:
                test = _render(plan.source.data, exit_.test.start_byte, exit_.test.end_byte,
                               [it for it in plain if exit_.test.start_byte <= it[0] and
                                it[1] <= exit_.test.end_byte])
                lines.append(f"const bool wb_left = {test};")
                left = True
            elif left and not is_barrier(s) and s not in fills:
                if s.type == "declaration":
                    loc = locals_.get(declarator_of(s.children_by_field_name("declarator")[0]))
                    if loc is None or not loc.derived:
                        raise Refused("a declaration after the tile's exit reads memory or is "
                                      "assigned: the tiles that left would run it", s)
                else:
                    shown = f"if (!wb_left) {{\n    {shown}\n  }}"
            lines.append(shown)
    else:  # rows a thread: a tile past the written grid skips its rows (tile 0 never does)
        if not cols:
            lines += [x, "const unsigned wb_bx = blockIdx.x * TX + wb_tx;",
                      f"const bool wb_in_x = wb_bx < {gx};"]
        lines += [f"const bool wb_whole = TX * TY == 1 || ((blockIdx.x + 1) * TX <= {gx} && "
                  f"(blockIdx.y + 1) * TY <= {gy});"]
        lines += [f"{kind} {name}[RPT]{'[CPT]' if cols else ''};" for name, kind in held.items()]
        geometry = Rows(f"(threadIdx.y + wb_j * ({ny} * TY / RPT))", ny, f"wb_by >= {gy}",
                         (nx, gx) if cols else None)
        for k, phase in enumerate(phases):
            if k:
                lines.append(f"{BARRIER}();")
            lines += [fill(s) for s in phase if s in fills]
            head = [show(s) for s in carried[k]]
            if exit_ is not None and k:
                head.append(f"if ({show(exit_.test)}) continue;")
            own = [s for s in phase if s not in shared and s not in fills]
            inside = insides[k]
            if inside is None:
                lines.append(rows_loop(geometry, head + [show(s) for s in own]))
                continue
            # a pragma before the loop stays before it, outside the rows
            pragmas = "".join(show(s) + "\n    " for s in inside.before
                              if s.type == "preproc_call")
            before = [show(s) for s in inside.before if s.type != "preproc_call"]
            body = inside.loop.child_by_field_name("body")
            assert body is not None
            around = pragmas + _render(
                plan.source.data, inside.loop.start_byte, body.start_byte,
                [it for it in items if inside.loop.start_byte <= it[0] and
                 it[1] <= body.start_byte])
            reads = _needed([*carried[k], *inside.before], [body, *(
                [exit_.test] if exit_ is not None and k else [])])
            lines.append(rows_loop(geometry, [show(s) for s in reads] +
                                   head[len(carried[k]):] + [show(body)], around))
            if inside.after:
                lines.append(rows_loop(geometry,
                                       head + before + [show(s) for s in inside.after]))
    plan.rw.replace(plan.body, "{\n  " + "\n  ".join(lines) + "\n}")
    _space(plan, nx, ny, carried is not None, arrays, cols)
    if rows_note is not None:
        plan.note("RPT", False, rows_note.reason, rows_note.node)


def _needed(decls: Sequence[Node], uses: Sequence[Node]) -> list[Node]:
    """The declarations of ``decls`` (in order) whose names ``uses`` read, with those their
    values read: the rows inside a loop recompute no local they do not read."""
    names = {text(n) for u in uses for n in identifiers(u)}
    out: list[Node] = []
    for decl in reversed(decls):
        declared = {declarator_of(d) for d in decl.children_by_field_name("declarator")}
        if decl.type == "declaration" and declared & names:
            out.insert(0, decl)
            names |= {text(n) for n in identifiers(decl)}
    return out


def _fill_locals(stmt: Node, locals_: dict[str, TileLocal]) -> list[Node]:
    """The declarations before ``stmt`` of the locals a table's fill reads, with those their
    values read (each recomputable and reading no block index: :func:`fills_alike`)."""
    own = {declarator_of(d) for n in walk(stmt) if n.type == "declaration"
           for d in n.children_by_field_name("declarator")}
    out: list[Node] = []
    todo = [n for n in walk(stmt) if n.type == "identifier" and text(n) not in own]
    while todo:
        loc = locals_.get(text(todo.pop()))
        if loc is None or loc.stmt in out or loc.stmt.start_byte >= stmt.start_byte:
            continue
        out.append(loc.stmt)
        todo += [i for i in walk(loc.stmt) if i.type == "identifier"]
    return sorted(out, key=lambda s: s.start_byte)


def _fill(stmt: Node, decls: list[str], fill: str, nx: int, ny: int, x_threads: str,
          threads: str) -> str:
    """A table's fill once a CTA: the statement run for every thread ``(wb_ex, wb_ey)`` of
    the written ``nx x ny`` CTA, by the CTA's flat thread index strided over its threads,
    with the locals it reads (``decls``) recomputed for that thread. The same entries with
    the same values as one tile's threads write, whatever TX, TY and RPT, outside the rows
    and before the phase's barrier."""
    body = "\n    ".join([f"const unsigned wb_ex = wb_e % {nx}, wb_ey = wb_e / {nx};", *decls,
                          fill])
    return (f"for (int wb_e = threadIdx.y * ({x_threads}) + threadIdx.x; wb_e < {nx * ny}; "
            f"wb_e += {threads}) {{\n    {body}\n  }}")


def _builtins(plan: Plan, nx: int, ny: int) -> list[_Item]:
    """``threadIdx``/``blockIdx`` read as the tile's element and block, ``blockDim`` as the
    tile's extent."""
    out = []
    for n in walk(plan.body):
        if n.type != "field_expression":
            continue
        for name, spelled in (("threadIdx", "wb_e"), ("blockIdx", "wb_b")):
            dim = builtin(n, name)
            if dim is not None:
                out.append(_put(n, f"{spelled}{dim}"))
        dim = builtin(n, "blockDim")
        if dim is not None:
            out.append(_put(n, str(nx if dim == "x" else ny)))
    return out


def _array_edits(plan: Plan, a: SharedArray) -> list[_Item]:
    """A tile's extents and subscripts with the tile's index."""
    if a.table:  # filled once a CTA by :func:`_fill`
        return []
    if len(a.extents) == 2:
        out = [_put(a.sizes[0], f"{a.extents[0]} * TY"),
               _put(a.sizes[1], f"{a.extents[1]} * TX + PAD")]
    else:
        out = [_put(a.sizes[0], f"({a.extents[0]} + PAD) * TX * TY")]
    for use in plan.uses(a.name):
        indices = chain(use)[1]
        if len(indices) == 2:  # [row][column]
            out += [_wrap(indices[0], f"wb_ty * {a.extents[0]} + (", ")"),
                    _wrap(indices[1], f"wb_tx * {a.extents[1]} + (", ")")]
        elif indices:
            out.append(_wrap(indices[0], f"(wb_ty * TX + wb_tx) * ({a.extents[0]} + PAD) + (",
                             ")"))
    return out


def _smem(a: SharedArray) -> str:
    """Bytes of ``a`` as lifted."""
    if a.table:
        return f"{a.elem} * {' * '.join(map(str, a.extents))}"
    if len(a.extents) == 2:
        return f"{a.elem} * {a.extents[0]} * TY * ({a.extents[1]} * TX + PAD)"
    return f"{a.elem} * ({a.extents[0]} + PAD) * TX * TY"


def _space(plan: Plan, nx: int, ny: int, rows: bool, arrays: list[SharedArray],
           cols: bool = False) -> None:
    where = f"{plan.source.line_of(plan.body)}"
    grid = list(plan.grid)
    plan.grid = [f"ceil_div({grid[0]}, TX)", f"ceil_div({grid[1]}, TY)"]
    for name, axis, n in (("TX", "across", nx), ("TY", "down", ny)):
        plan.add_param(name, {"kind": "choice", "values": _TILES, "default": 1,
                              "description": f"{n}-wide data tiles a CTA {axis} "
                                             "(as written: 1)"},
                       f"{where}: block {nx} x {ny}")
    y_threads = f"{ny} * TY / RPT" if rows else f"{ny} * TY"
    if rows:
        plan.add_param("RPT", {"kind": "choice", "values": _TILES, "default": 1,
                               "description": "tile rows a thread, strided by the block's "
                                              "height (as written: 1)"},
                       f"{where}: block y {ny}")
        plan.constrain(f"({ny} * TY) % RPT == 0")
    tiles = [a for a in arrays if not a.table]
    if tiles:
        plan.add_param("PAD", {"kind": "choice", "values": [0, 1], "default": 0,
                               "description": "floats of padding a shared tile's row "
                                              f"({', '.join(a.name for a in tiles)}; "
                                              "as written: 0)"},
                       f"{where}: __shared__ {tiles[0].name}")
    x_threads = f"{nx} * TX / CPT" if cols else f"{nx} * TX"
    if cols:
        plan.add_param("CPT", {"kind": "choice", "values": [1, 2, 4], "default": 1,
                               "description": "tile columns a thread, strided by the block's "
                                              "width: with RPT a register tile whose loop "
                                              "reads a row's and a column's elements once "
                                              "(as written: 1)"},
                       f"{where}: block x {nx}")
        plan.constrain(f"({nx} * TX) % CPT == 0")
    plan.block = [x_threads, y_threads]
    threads = f"{x_threads} * ({y_threads})" if cols else f"{nx} * TX * ({y_threads})"
    plan.constrain(f"{threads} <= 1024")
    plan.constrain(f"{threads} >= 32 or TX * TY == 1")
    if arrays:
        plan.constrain(f"{' + '.join(_smem(a) for a in arrays)} <= 49152")
    plan.launch_bounds = threads
    tables = [a.name for a in arrays if a.table]
    shared = ", ".join(a.name for a in arrays if not a.table) or "none"
    kept = f", tables {', '.join(tables)} one a CTA, filled once by its threads" if tables \
        else ""
    plan.note("TX", True, f"a CTA per {nx} x {ny} data tile: TX x TY tiles a CTA, each "
              "thread an element of its tile, a tile past the written grid skipping its rows "
              f"(or clamped to it without rows a thread); shared tiles {shared} gain the "
              f"tile's index{kept}", plan.body)
