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

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    builtin,
    calls,
    declared_name,
    identifiers,
    int_expr_value,
    is_barrier,
    mentions,
    single_values,
    strip,
    text,
    walk,
    write_target,
    writer,
)
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused
from workbench.templater.rules import literal
from workbench.templater.tile_batch_rows import (
    Rows,
    RowsInside,
    TileExit,
    held_declaration,
    held_type,
    rows_inside,
    rows_loop,
    tile_exit,
)

#: Bytes of a shared array's element type.
_ELEM_BYTES = {"float": 4, "int": 4, "unsigned": 4, "unsigned int": 4, "double": 8,
               "char": 1, "short": 2, "__half": 2, "half": 2}
_TILES = [1, 2, 4, 8]
_BARRIER = "__syncthreads"


@dataclass(frozen=True)
class _Array:
    """A ``__shared__`` array: its declaration, extents (values and nodes), element bytes."""

    name: str
    decl: Node
    extents: tuple[int, ...]
    sizes: tuple[Node, ...]
    elem: int
    fills: tuple[Node, ...]  # a table's fills (every tile's alike); () for a tile

    @property
    def table(self) -> bool:
        return bool(self.fills)


@dataclass(frozen=True)
class _Local:
    """A top-level local: the phase that declares it, whether its value is recomputable
    (declared with a value reading no memory, never assigned) and whether it reads the
    block index."""

    name: str
    stmt: Node
    phase: int
    derived: bool
    by_block: bool


def lift_tile_batch(plan: Plan) -> bool:
    """Apply the family where the kernel is a CTA per fixed-size data tile; False (with a
    note where the kernel has the family's shape but the lift is not legal) otherwise."""
    shape = _tile_shape(plan)
    if shape is None:
        return False
    try:
        _lift(plan, *shape)
    except Refused as no:
        plan.note("TX", False, no.reason, no.node)
        return False
    return True


def _tile_shape(plan: Plan) -> tuple[int, int] | None:
    """(NX, NY) of a 2-D literal block with a barrier whose CTA reads a shared array across a
    tile extent (a loop ``k < NX``, ``k < NY`` or ``k < blockDim.x`` indexing it by ``k``)."""
    if len(plan.block) != 2 or len(plan.grid) != 2 or _BARRIER not in calls(plan.body):
        return None
    nx, ny = literal(plan.block[0]), literal(plan.block[1])
    if nx is None or ny is None:
        return None
    shared = {d.name for d in plan.facts.defs.values() if d.is_shared}
    for loop in walk(plan.body):
        if loop.type != "for_statement":
            continue
        cond = loop.child_by_field_name("condition")
        init = loop.child_by_field_name("initializer")
        if cond is None or init is None or init.type != "declaration" or \
                cond.type != "binary_expression" or \
                text(cond.child_by_field_name("operator")) != "<":
            continue
        var, bound = declared_name(init)[0], cond.child_by_field_name("right")
        extent = {"x": nx, "y": ny}.get(builtin(bound, "blockDim") or "") if bound else None
        if text(strip(cond.child_by_field_name("left") or cond)) != var or \
                (extent or int_expr_value(bound)) not in (nx, ny):
            continue
        if any(n.type == "subscript_expression" and _base(n) in shared and
               mentions(n, {var}) for n in walk(loop)):
            return nx, ny
    return None


def _base(subscript: Node) -> str:
    return text(_name_node(subscript))


def _chain(ident: Node) -> tuple[Node, list[Node]]:
    """The outermost subscript over ``ident`` and its index expressions in source order."""
    node, indices = ident, []
    while node.parent is not None and node.parent.type == "subscript_expression" and \
            node.parent.child_by_field_name("argument") == node:
        node = node.parent
        args = node.child_by_field_name("indices")
        assert args is not None
        indices.append(args.named_children[0])
    return node, indices


def _statements(plan: Plan) -> list[Node]:
    return [c for c in plan.body.children if c.type not in ("{", "}")]


def _phases(stmts: Sequence[Node]) -> list[list[Node]]:
    out: list[list[Node]] = [[]]
    for s in stmts:
        if is_barrier(s):
            out.append([])
        else:
            out[-1].append(s)
    return out


def _check_shape(plan: Plan, exit_: TileExit | None) -> None:
    """Raise with the line where the virtual CTAs could not be the kernel as written (a
    tile's early exit, ``exit_``, is read by :mod:`.tile_batch_rows`)."""
    for n in walk(plan.body):
        if n.type == "return_statement" and (exit_ is None or n != exit_.leave):
            raise Refused("a `return`: a thread that leaves would skip the tiles its CTA "
                           "runs after this one, and their barriers", n)
        name = text(n.child_by_field_name("function")) if n.type == "call_expression" else ""
        if name == _BARRIER and (n.parent is None or n.parent.parent != plan.body):
            raise Refused("a barrier inside a statement (each must be a top-level statement "
                           "for the tiles of a CTA to meet it alike)", n)
        if name.startswith("atomic") or name.startswith("__threadfence"):
            raise Refused(f"`{name}`: a CTA's clamped duplicate of the last tile would "
                           "repeat it", n)
        if builtin(n, "gridDim") or builtin(n, "threadIdx") == "z" or \
                builtin(n, "blockIdx") == "z" or builtin(n, "blockDim") == "z":
            raise Refused(f"`{text(n)}`: the tiles' grid is modelled in x and y only", n)
    for d in plan.facts.defs.values():
        if d.is_pointer and not d.is_shared:
            raise Refused(f"the pointer local `{d.name}` (what it writes is not followed)",
                           d.decl)
    known = set(plan.facts.defs) | {p.name for p in plan.kernel.params if p.is_pointer}
    for n in walk(plan.body):
        if n.type == "subscript_expression" and writer(n) is not None and \
                _base(n) not in known:
            raise Refused(f"`{text(n)}` writes `{_base(n)}`, no argument, local or shared "
                           "array of the kernel (a clamped duplicate tile would write it "
                           "again)", n)
    for p in plan.kernel.params:
        if not p.is_pointer:
            continue
        bare = [u for u in plan.uses(p.name) if not _chain(u)[1]]
        if bare:
            raise Refused(f"`{text(bare[0].parent)}` reads the argument `{p.name}` other than "
                           f"through a subscript (what it writes is not followed)", bare[0])
        uses = [_chain(u)[0] for u in plan.uses(p.name)]
        writes = [(u, w) for u in uses if (w := writer(u)) is not None]
        if (writes and len(writes) < len(uses)) or any(
                text(w.child_by_field_name("operator")) != "=" for _u, w in writes):
            raise Refused(f"`{p.name}` is read and written: a CTA's clamped duplicate of "
                           "the last tile would read what it stored", writes[0][0])


def _arrays(plan: Plan, phases: list[list[Node]], locals_: dict[str, _Local]) -> list[_Array]:
    top = {s.start_byte for s in _statements(plan)}
    out = []
    for d in plan.facts.defs.values():
        if not d.is_shared:
            continue
        if d.decl.start_byte not in top:
            raise Refused(f"the shared array `{d.name}` is declared inside a statement", d.decl)
        sizes: list[Node] = []
        node = d.decl.child_by_field_name("declarator")
        while node is not None and node.type == "array_declarator":
            size = node.child_by_field_name("size")
            if size is None:
                raise Refused(f"`{d.name}` has an open extent", d.decl)
            sizes.insert(0, size)
            node = node.child_by_field_name("declarator")
        values = [int_expr_value(s) for s in sizes]
        kind = text(d.decl.child_by_field_name("type"))
        if not 1 <= len(sizes) <= 2 or None in values or kind not in _ELEM_BYTES:
            raise Refused(f"the shared array `{d.name}` is not a 1-D or 2-D array of a "
                           "scalar type with constant extents", d.decl)
        for use in plan.uses(d.name):
            if use.parent == node or (use.parent is not None and \
                    use.parent.type == "array_declarator"):
                continue
            if len(_chain(use)[1]) != len(sizes):
                raise Refused(f"`{text(use.parent)}` reads the shared array `{d.name}` other "
                               "than through a whole subscript", use)
        out.append(_Array(d.name, d.decl, tuple(v for v in values if v is not None),
                          tuple(sizes), _ELEM_BYTES[kind],
                          _table(plan, d.name, phases, locals_)))
    return out


def _phase_of(node: Node, phases: list[list[Node]]) -> int:
    return next(k for k, stmts in enumerate(phases)
                if any(s.start_byte <= node.start_byte < s.end_byte for s in stmts))


def _table(plan: Plan, name: str, phases: list[list[Node]],
           locals_: dict[str, _Local]) -> tuple[Node, ...]:
    """The top-level statements filling ``name`` where every tile fills it alike (each
    statement writing ``name`` reads no memory, no block index and no local that does, and
    writes nothing else declared outside it) and reads it only in later phases; else ()."""
    accesses = [_chain(u)[0] for u in plan.uses(name) if _chain(u)[1]]
    writes = [a for a in accesses if writer(a) is not None]
    fills = tuple(sorted({_top(plan, w) for w in writes}, key=lambda f: f.start_byte))
    if not writes or not all(_fills_alike(f, name, locals_) for f in fills):
        return ()
    last_fill = max(_phase_of(f, phases) for f in fills)
    reads = [a for a in accesses if writer(a) is None]
    return fills if all(_phase_of(r, phases) > last_fill for r in reads) else ()


def _top(plan: Plan, node: Node) -> Node:
    """The top-level statement of the body holding ``node``."""
    while node.parent is not None and node.parent != plan.body:
        node = node.parent
    return node


def _fills_alike(stmt: Node, name: str, locals_: dict[str, _Local]) -> bool:
    """Whether ``stmt`` does the same in every tile: no declaration, reads only ``name``'s
    entries it writes (no other subscript, no dereference, no block index, no local reading
    either) and assigns only ``name``'s entries and names it declares inside it."""
    if stmt.type == "declaration":  # its names would outlive the fill's own loop
        return False
    own = {_declared(d) for n in walk(stmt) if n.type == "declaration"
           for d in n.children_by_field_name("declarator")}
    for n in walk(stmt):
        if n.type == "subscript_expression" and (_base(n) != name or writer(_chain(
                _name_node(n))[0]) is None):
            return False
        if builtin(n, "blockIdx") or n.type == "pointer_expression":
            return False
        if n.type == "identifier" and text(n) in locals_ and text(n) not in own:
            loc = locals_[text(n)]
            if not loc.derived or loc.by_block:
                return False
        if n.type in ("assignment_expression", "update_expression"):
            target = write_target(n)
            if target is None or (target.type == "identifier" and text(target) not in own) or \
                    (target.type != "identifier" and _base(target) != name):
                return False
    return True


def _name_node(subscript: Node) -> Node:
    node = subscript
    while node.type == "subscript_expression":
        node = node.child_by_field_name("argument")  # type: ignore[assignment]
    return node


def _locals(plan: Plan, phases: list[list[Node]]) -> dict[str, _Local]:
    # a local array written by its elements (``s[k & 1] += ..``) is assigned too: its
    # declaration's value is not what a later phase reads
    assigned = {text(t) if t.type == "identifier" else _base(t) for n in walk(plan.body)
                if (t := write_target(n)) is not None and
                t.type in ("identifier", "subscript_expression")}
    out: dict[str, _Local] = {}
    for k, stmts in enumerate(phases):
        for s in stmts:
            if s.type != "declaration" or any(text(c) == "__shared__" for c in s.children):
                continue
            declarators = s.children_by_field_name("declarator")
            names = [_declared(d) for d in declarators]
            values = [d.child_by_field_name("value") if d.type == "init_declarator" else None
                      for d in declarators]
            reads = [n for v in values if v is not None for n in walk(v)]
            derived = None not in values and not (set(names) & assigned) and not any(
                n.type in ("subscript_expression", "pointer_expression") or
                (n.type == "identifier" and text(n) in out and not out[text(n)].derived)
                for n in reads)
            by_block = any(builtin(n, "blockIdx") or (n.type == "identifier" and
                           text(n) in out and out[text(n)].by_block) for n in reads)
            for name in names:
                out[name] = _Local(name, s, k, derived, bool(by_block))
    return out


def _declared(declarator: Node) -> str:
    node: Node | None = declarator
    while node is not None and node.type != "identifier":
        node = node.child_by_field_name("declarator")
    return text(node)


def _carried(phases: list[list[Node]], locals_: dict[str, _Local], fills: set[Node],
             exit_: TileExit | None) -> tuple[list[list[Node]], dict[str, str]]:
    """Each phase's rows' declarations of earlier phases that it reads, with those their
    values read (recomputed there; a table's fill recomputes its own, :func:`_fill_locals`;
    a later phase's rows read the tile exit's test too), and the locals no value recomputes
    that a later phase reads: one register a row (name -> element type,
    :mod:`.tile_batch_rows`); raises where one cannot be."""
    out: list[list[Node]] = []
    held: dict[str, str] = {}
    for k, stmts in enumerate(phases):
        need: list[Node] = []
        todo = [n for s in stmts if s not in fills for n in walk(s) if n.type == "identifier"]
        if exit_ is not None and k:
            todo += list(identifiers(exit_.test))
        while todo:
            n = todo.pop()
            loc = locals_.get(text(n))
            if loc is None or loc.phase >= k or loc.stmt in need or loc.name in held:
                continue
            if not loc.derived:
                held[loc.name] = held_type(loc.stmt, loc.name)
                continue
            need.append(loc.stmt)
            todo += [i for i in walk(loc.stmt) if i.type == "identifier"]
        out.append(sorted(need, key=lambda s: s.start_byte))
    return out, held


def _held_edits(plan: Plan, held: dict[str, str], locals_: dict[str, _Local],
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


def _in_c(rule: str, plan: Plan) -> str:
    """A grid rule of the rules' language in C over the kernel's scalar arguments."""
    args = {str(shape).strip(): arg for arg, shape in plan.scalars.items()}

    def c(node: ast.expr) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return str(node.value)
        if isinstance(node, ast.Name) and node.id in args:
            return args[node.id]
        ops: dict[type, str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/"}
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return f"({c(node.left)} {ops[type(node.op)]} {c(node.right)})"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "ceil_div" and len(node.args) == 2:
            a, b = c(node.args[0]), c(node.args[1])
            return f"(({a} + {b} - 1) / {b})"
        raise Refused(f"the grid rule `{rule}` reads `{ast.unparse(node)}`, no scalar "
                       "argument of the kernel (the last tile is clamped to it)", plan.body)

    return c(ast.parse(rule.strip(), mode="eval").body)


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
    stmts = _statements(plan)
    phases = _phases(stmts)
    exit_ = tile_exit(plan, phases[0], single_values(plan.body))
    _check_shape(plan, exit_)
    locals_ = _locals(plan, phases)
    arrays = _arrays(plan, phases, locals_)
    gx, gy = _in_c(plan.grid[0], plan), _in_c(plan.grid[1], plan)
    fills = {f for a in arrays for f in a.fills}
    held: dict[str, str] = {}
    try:
        carried: list[list[Node]] | None
        carried, held = _carried(phases, locals_, fills, exit_)
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
            shown = f"{_BARRIER}();" if is_barrier(s) else fill(s) if s in fills else show(s)
            if exit_ is not None and s == exit_.statement:
                test = _render(plan.source.data, exit_.test.start_byte, exit_.test.end_byte,
                               [it for it in plain if exit_.test.start_byte <= it[0] and
                                it[1] <= exit_.test.end_byte])
                lines.append(f"const bool wb_left = {test};")
                left = True
            elif left and not is_barrier(s) and s not in fills:
                if s.type == "declaration":
                    loc = locals_.get(_declared(s.children_by_field_name("declarator")[0]))
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
                lines.append(f"{_BARRIER}();")
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
        declared = {_declared(d) for d in decl.children_by_field_name("declarator")}
        if decl.type == "declaration" and declared & names:
            out.insert(0, decl)
            names |= {text(n) for n in identifiers(decl)}
    return out


def _fill_locals(stmt: Node, locals_: dict[str, _Local]) -> list[Node]:
    """The declarations before ``stmt`` of the locals a table's fill reads, with those their
    values read (each recomputable and reading no block index: :func:`_fills_alike`)."""
    own = {_declared(d) for n in walk(stmt) if n.type == "declaration"
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


def _array_edits(plan: Plan, a: _Array) -> list[_Item]:
    """A tile's extents and subscripts with the tile's index."""
    if a.table:  # filled once a CTA by :func:`_fill`
        return []
    if len(a.extents) == 2:
        out = [_put(a.sizes[0], f"{a.extents[0]} * TY"),
               _put(a.sizes[1], f"{a.extents[1]} * TX + PAD")]
    else:
        out = [_put(a.sizes[0], f"({a.extents[0]} + PAD) * TX * TY")]
    for use in plan.uses(a.name):
        indices = _chain(use)[1]
        if len(indices) == 2:  # [row][column]
            out += [_wrap(indices[0], f"wb_ty * {a.extents[0]} + (", ")"),
                    _wrap(indices[1], f"wb_tx * {a.extents[1]} + (", ")")]
        elif indices:
            out.append(_wrap(indices[0], f"(wb_ty * TX + wb_tx) * ({a.extents[0]} + PAD) + (",
                             ")"))
    return out


def _smem(a: _Array) -> str:
    """Bytes of ``a`` as lifted."""
    if a.table:
        return f"{a.elem} * {' * '.join(map(str, a.extents))}"
    if len(a.extents) == 2:
        return f"{a.elem} * {a.extents[0]} * TY * ({a.extents[1]} * TX + PAD)"
    return f"{a.elem} * ({a.extents[0]} + PAD) * TX * TY"


def _space(plan: Plan, nx: int, ny: int, rows: bool, arrays: list[_Array],
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
