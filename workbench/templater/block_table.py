"""Per-block tables a guard on the thread index fills: an extent that is not the block's.

A block that builds a table in shared memory once (twiddles, a lookup, a window) before a
barrier, one entry a thread under a guard on a flat thread index, reads::

    __shared__ float2 tw[64];
    const int tid = threadIdx.y * 64 + threadIdx.x;   // or threadIdx.x, blockDim.x for 64
    if (tid < 64) tw[tid] = make_float2(cosf(a * tid), sinf(a * tid));
    __syncthreads();

Its extent may equal a block size as written (64 threads along x) without being tied to it:
the guard, not the block, says which entries are written, and an entry's value depends on
its index alone. Every entry is then written, with the value the kernel as written gives it,
at any block whose flat thread indices cover the table: ``threads >= E``. Such an array is
no tile of the block (:mod:`.smem_tiles`) and its extent is no block-size use
(:mod:`.block`); the block lift constrains its sizes so the flat index still covers it.

A table qualifies where the analysis shows (else it is read as before, tied by its extent):
one dimension of literal extent ``E``; every write ``T[i] = v`` with ``=``, inside an ``if
(i < E)`` (or ``E > i``) with no ``else`` at the top level of the body before the first
barrier there; ``i`` the flat index (``threadIdx.x``, or ``threadIdx.y * X + threadIdx.x``
in either order, ``X`` the block's x size as a literal or ``blockDim.x``, directly or through
a local never assigned); the guarded statements read no thread or block builtin but the index
and no local declared outside them but the index (kernel arguments, constants and functions
are alike for every thread); ``T`` read only through subscripts, its elements' addresses
never taken (no alias, call or atomic can write it).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    DIMS,
    binary,
    builtin,
    factors,
    int_value,
    strip,
    terms,
    text,
    walk,
    writer,
)
from workbench.templater.plan import Plan
from workbench.templater.regtile_blockdim import BlockTie
from workbench.templater.rules import literal, scale_divisor


@dataclass(frozen=True)
class GuardedTable:
    """A shared table filled under ``index < extent``: its flat index covers the block's x
    (``dims == "x"``) or x and y (``"xy"``, ``x_size`` the x size the index is written with,
    None for ``blockDim.x``)."""

    name: str
    extent: int
    dims: str
    x_size: int | None


def guarded_tables(plan: Plan) -> dict[str, GuardedTable]:
    """Every shared array of ``plan``'s kernel that is a guarded table (module docstring)."""
    out = {}
    for d in plan.facts.defs.values():
        if d.is_shared:
            table = _table(plan, d.name, d.decl)
            if table is not None:
                out[d.name] = table
    return out


def table_constraints(plan: Plan, tables: dict[str, GuardedTable]) -> list[str]:
    """The constraints that keep each table covered by its flat index at the block as lifted
    (``plan.block``): none where the sizes the index reads stay literals."""
    x = plan.block[0]
    y = plan.block[1] if len(plan.block) > 1 else "1"
    out = []
    for t in tables.values():
        reads = [x] if t.dims == "x" else [x, y]
        if all(literal(b) is not None for b in reads):
            continue
        if t.dims == "x":
            out.append(f"{x} >= {t.extent}")
            continue
        if t.x_size is not None and literal(x) is None:
            out.append(f"{x} == {t.x_size}")  # the index's literal x stride stays as written
        out.append(f"{x} * {y} >= {t.extent}")
    return out


def _table(plan: Plan, name: str, decl: Node) -> GuardedTable | None:
    declarator = next((d for d in decl.children_by_field_name("declarator")
                       if d.type == "array_declarator" and
                       (inner := d.child_by_field_name("declarator")) is not None and
                       inner.type == "identifier" and text(inner) == name), None)
    if declarator is None:
        return None  # not one dimension (or not an array)
    extent = int_value(declarator.child_by_field_name("size"))
    if extent is None:
        return None
    barrier = _first_barrier(plan.body)
    found: tuple[str, int | None] | None = None
    for n in walk(plan.body):
        if n.type != "identifier" or text(n) != name or n.parent is None or \
                n.parent.type == "array_declarator":
            continue
        sub = n.parent
        if sub.type != "subscript_expression" or sub.child_by_field_name("argument") != n or \
                (sub.parent is not None and sub.parent.type == "pointer_expression"):
            return None  # an alias, a call or an atomic could write it where no guard is seen
        written = sub.parent is not None and sub.parent.type in (
            "assignment_expression", "update_expression") and \
            (sub.parent.child_by_field_name("left") == sub or
             sub.parent.child_by_field_name("argument") == sub)
        if not written:
            continue
        form = _guarded_write(plan, sub, extent, barrier)
        if form is None or (found is not None and form != found):
            return None
        found = form
    if found is None:
        return None
    return GuardedTable(name, extent, found[0], found[1])


def _first_barrier(body: Node) -> int:
    for s in body.named_children:
        if any(c.type == "call_expression" and
               text(c.child_by_field_name("function")) == "__syncthreads" for c in walk(s)):
            return s.start_byte
    return body.end_byte


def _guarded_write(plan: Plan, sub: Node, extent: int,
                   barrier: int) -> tuple[str, int | None] | None:
    """(dims, x size) of the flat index of one write ``T[i] = v`` under its guard, or None."""
    assign = sub.parent
    assert assign is not None
    if assign.type != "assignment_expression" or \
            text(assign.child_by_field_name("operator")) != "=":
        return None
    guard = assign.parent
    while guard is not None and guard.type != "if_statement":
        guard = guard.parent
    if guard is None or guard.parent != plan.body or guard.end_byte > barrier or \
            guard.child_by_field_name("alternative") is not None:
        return None
    index = sub.child_by_field_name("indices")
    if index is not None and index.type == "subscript_argument_list":
        index = index.named_children[0] if index.named_child_count == 1 else None
    cond = guard.child_by_field_name("condition")
    if index is None or cond is None or not _bounds(strip(cond), text(strip(index)), extent):
        return None
    form = _flat(plan, strip(index))
    if form is None or not _index_only(plan, guard.child_by_field_name("consequence"),
                                       text(strip(index))):
        return None
    return form


def _bounds(cond: Node, index: str, extent: int) -> bool:
    if cond.type == "condition_clause" and cond.named_child_count == 1:
        cond = strip(cond.named_children[0])
    parts = binary(cond)
    if parts is None:
        return False
    left, op, right = parts
    return (op == "<" and text(strip(left)) == index and int_value(right) == extent) or \
        (op == ">" and text(strip(right)) == index and int_value(left) == extent)


def _flat(plan: Plan, index: Node) -> tuple[str, int | None] | None:
    """("x", None) for ``threadIdx.x``, ("xy", X) for ``threadIdx.y * X + threadIdx.x``
    (X None for ``blockDim.x``), through never-assigned locals; else None."""
    value = through_locals(plan, index)
    if builtin(value, "threadIdx") == "x":
        return "x", None
    parts = terms(value)
    if len(parts) != 2 or any(sign != 1 for sign, _ in parts):
        return None
    xs = [t for _s, t in parts if builtin(through_locals(plan, t), "threadIdx") == "x"]
    rows = [t for _s, t in parts if t not in xs]
    if len(xs) != 1 or len(rows) != 1:
        return None
    fs = [through_locals(plan, f) for f in factors(rows[0])]
    if len(fs) != 2 or sum(builtin(f, "threadIdx") == "y" for f in fs) != 1:
        return None
    stride = next(f for f in fs if builtin(f, "threadIdx") != "y")
    if builtin(stride, "blockDim") == "x":
        return "xy", None
    size = int_value(stride)
    return ("xy", size) if size is not None and size == literal(plan.block[0]) else None


def through_locals(plan: Plan, node: Node) -> Node:
    """``node`` without parentheses and casts, a local that is never assigned read as its
    value (``const int b = blockIdx.y * gridDim.x + blockIdx.x``; ``b`` -> its value)."""
    node = strip(node)
    seen: set[str] = set()
    while node.type == "identifier" and text(node) not in seen:
        seen.add(text(node))
        d = plan.facts.defs.get(text(node))
        if d is None or d.assigned or d.value is None or d.is_shared:
            break
        node = strip(d.value)
    return node


def _index_only(plan: Plan, body: Node | None, index: str) -> bool:
    """The guarded statements read no builtin index or size but the table's index and no
    local declared outside them but the index (arrays only as a write's target): each
    entry's value is its index's alone."""
    if body is None:
        return False
    inside = {text(c) for d in walk(body) if d.type == "declaration"
              for c in walk(d) if c.type == "identifier" and c.parent is not None and
              c.parent.type in ("init_declarator", "declaration", "array_declarator")}
    for n in walk(body):
        if n.type == "field_expression" and text(n) != index and any(
                builtin(n, b) for b in ("threadIdx", "blockIdx", "blockDim", "gridDim")):
            return False
        if n.type == "identifier" and _write_target(n):
            continue  # this table, or another one filled alike (each checked on its own)
        if n.type == "identifier" and text(n) != index and text(n) in plan.facts.defs and \
                text(n) not in inside:
            return False
    return True


def _write_target(name: Node) -> bool:
    sub = name.parent
    w = writer(sub) if sub is not None and sub.type == "subscript_expression" else None
    return w is not None and w.type == "assignment_expression"


def row_offsets(plan: Plan, dim: str, size: int) -> tuple[list[Node], set[int]]:
    """(literals, grid dimensions) of blocks offset by the block's ``dim`` size along another
    grid dimension: ``blockIdx.x * 4 + threadIdx.y`` in a (64, 4) block numbers the grid's
    items 4 a block, the y threads taking one each, so the 4 is the y size and the grid's x
    rule divides by it (``ceil_div(batch, 4)``). Only where no other block dimension has
    that size (which one the literal means would be a guess) and every such grid rule
    divides by it; else nothing. Only in a kernel with a guarded table (its threads along x
    number the table's entries, so only y can take more items): elsewhere the same offset is
    a lane layout's outer threads (const_items' OUTER_THREADS with its vector width) or an
    unguarded row family's ITEMS_X, which a block lift here would take first."""
    if not guarded_tables(plan):
        return [], set()
    sizes = [literal(b) for b in plan.block]
    if sizes.count(size) != 1:
        return [], set()
    uses: list[Node] = []
    grids: set[int] = set()
    for n in walk(plan.body):
        parts = terms(n) if n.type == "binary_expression" and \
            text(n.child_by_field_name("operator")) == "+" else []
        if not any(builtin(through_locals(plan, t), "threadIdx") == dim for _s, t in parts):
            continue
        for _sign, term in parts:
            fs = factors(term)
            blocks = [builtin(f, "blockIdx") for f in fs]
            lits = [f for f in fs if f.type == "number_literal" and int_value(f) == size]
            if len(fs) != 2 or len(lits) != 1 or not any(blocks) or dim in blocks:
                continue
            g = DIMS.index(next(b for b in blocks if b))
            if g >= len(plan.grid) or scale_divisor(plan.grid[g], str(size), "B") is None:
                return [], set()
            if all(u.start_byte != lits[0].start_byte for u in uses):
                uses.append(lits[0])
            grids.add(g)
    return uses, grids


def table_tie(plan: Plan, dim: str, size: int, uses: list[Node]) -> BlockTie | None:
    """Why the block's x size stays: a guarded table as long as the x size, in a kernel with
    no use of that size (no block offset, stride or tree; ``blockDim.x`` read at most in the
    flat index). The x threads then number a fixed row as long as the table (the bins of a
    transform, one a thread): another x size would leave bins uncomputed or run past the
    row, and nothing in the kernel says how the x index would follow."""
    if dim != "x" or uses:
        return None
    for t in guarded_tables(plan).values():
        if t.extent == size:
            return BlockTie(f"the x threads number a row as long as the table {t.name} "
                            f"({size} entries, filled under a guard on the thread index) "
                            "and nothing offsets them by the block size: another x size "
                            "would leave the row's outputs uncomputed or overrun it, so the "
                            "x size stays as written", plan.facts.defs[t.name].decl)
    return None
