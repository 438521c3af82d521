"""A whole block's early exit before the register-tiled product (a triangular output).

A kernel that computes one triangle of its output often lets the blocks whose tile lies
wholly on the other side of the diagonal leave at once: ``if (blockIdx.x > blockIdx.y) {
if (i < n && j < n) C[i * n + j] = 0.0f; return; }`` before the loop over tiles, every
thread writing its element's fill. The test reads no thread's place, so every thread of a
block takes the same side: the block leaves as one, before any barrier. Coarsened
(:mod:`.regtile`), a real thread runs the exit's statements once per virtual thread of its
TM x TN register tile, as it runs the epilogue, then returns.

What the test means depends on the block's tile: ``blockIdx.x > blockIdx.y`` says "above
the diagonal" only where a block's rows and columns are one square tile, as written. A test
that reads a block index, the grid's size or a local must compare the block's row of tiles
with its column (``blockIdx.x > blockIdx.y``, ``col0 > row0`` with ``col0 = blockIdx.x *
TILE``, joined by ``&&`` / ``||``): on a square tile of any size it selects the tiles past
the diagonal (or a band of them), and the template keeps its block tile square (BM == BN).
The kernel's blocks then own the outputs they own as written at that tile size, the
assumption every tile-size knob of the kernel rests on (its epilogue masks the triangle: the
tiles a larger tile no longer skips compute what the skipped ones wrote). A test of one
block index against a number (``blockIdx.x > 3``) would select other outputs at another
tile: refused. A test of the kernel's arguments alone (``n == 0``) leaves the tile free.

Recognised (else the statement is no exit, or refused with the reason and the line): an
``if`` with no ``else`` among the statements before the loop over tiles whose body is
``return;`` or a block ending in ``return;``; the test reads no thread index, no local set
from one and not the tile size but as a block's offset (``blockIdx.x * TILE``; elsewhere its
role, rows or columns or depth, is not read from a comparison); the statements before the return write no shared memory, synchronise nothing,
call no function of the file that reads the thread's place itself (that would not follow
the virtual thread), leave no other way (``return``, ``break``, ``goto``) and read no local the kernel
assigns (an accumulator).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import binary, builtin, int_value, strip, text, walk
from workbench.templater.inline_bind import callee_name
from workbench.templater.plan import Plan
from workbench.templater.regtile import Gemm, Refused, _statements

_EXITS = ("return_statement", "goto_statement", "break_statement", "continue_statement")


@dataclass(frozen=True)
class BlockExit:
    """``if (test) { body; return; }``: the test (read once per block) and the statements
    each virtual thread runs before the block returns."""

    statement: Node
    test: Node
    body: tuple[Node, ...]
    reads_block: bool  # the test reads a block index or grid size, or a local (which may)


def block_exit(g: Gemm, s: Node) -> BlockExit | None:
    """``s`` (a statement before the loop over tiles) as a whole block's exit; None when it
    is no ``if (..) return;``; raises Refused when it is one the coarsened threads cannot
    share."""
    if s.type != "if_statement" or s.child_by_field_name("alternative") is not None:
        return None
    then = s.child_by_field_name("consequence")
    condition = s.child_by_field_name("condition")
    if then is None or condition is None:
        return None
    body = _statements(then) if then.type == "compound_statement" else [then]
    if not body or body[-1].type != "return_statement" or body[-1].named_child_count:
        return None
    test = strip(condition.named_children[-1]) if condition.named_children else condition
    if g.mentions_thread(test):
        raise Refused(f"the early exit's test `{text(test)}` reads the thread's place: the "
                      "coarsened threads would leave for some of their outputs only", s)
    for n in walk(test):
        if int_value(n) == g.tile and not _block_offset(n):  # a literal or a named constant
            raise Refused(f"the early exit's test `{text(test)}` reads the tile size "
                          f"`{text(n)}`: its role in a comparison (rows, columns or depth) "
                          "is not read", n)
    defined = g.plan.source.function_definitions()
    for stmt in body[:-1]:
        for n in walk(stmt):
            if n.type in _EXITS:
                raise Refused(f"the early exit leaves by `{text(n)}` before its return", n)
            if n.type == "call_expression" and "sync" in text(n.child_by_field_name("function")):
                raise Refused(f"the early exit synchronises (`{text(n)}`)", n)
            if n.type == "call_expression" and _reads_thread(defined, callee_name(n), set()):
                raise Refused(f"the early exit calls {callee_name(n)}, which reads the "
                              "thread's place itself: that would not follow the virtual "
                              "thread", n)
            if n.type == "identifier" and text(n) in g.assigned:
                raise Refused(f"the early exit reads {text(n)}, which the kernel assigns (an "
                              "accumulator's value is not one per virtual thread there)", n)
            if n.type == "subscript_expression" and (a := g.access(n)) is not None and \
                    a[0] in g.tiles:
                raise Refused(f"the early exit touches the shared tile `{text(n)}`", n)
    reads_block = any(builtin(n, "blockIdx") is not None or builtin(n, "gridDim") is not None
                      or (n.type == "identifier" and text(n) in g.locals) for n in walk(test))
    if reads_block and not _row_against_column(g, test, set()):
        raise Refused(f"the early exit's test `{text(test)}` does not compare the block's "
                      "row of tiles with its column (a triangle or band of tiles): which "
                      "outputs it selects would change with the tile", s)
    if reads_block and g.rect:
        raise Refused(f"the early exit's test `{text(test)}` reads the block's place on a "
                      f"{g.block_size['y']} x {g.block_size['x']} tile: kept square, the "
                      "template's default would not be the kernel as written", s)
    return BlockExit(s, test, tuple(body[:-1]), reads_block)


def _reads_thread(defined: Mapping[str, Node], name: str, seen: set[str]) -> bool:
    """Whether the file's function ``name`` reads ``threadIdx``, itself or through a
    function of the file it calls."""
    fn = defined.get(name)
    if fn is None or name in seen:
        return False
    seen.add(name)
    return any(builtin(n, "threadIdx") is not None or (
        n.type == "call_expression" and _reads_thread(defined, callee_name(n), seen))
        for n in walk(fn))


_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})


def _row_against_column(g: Gemm, test: Node, seen: set[str]) -> bool:
    """Whether ``test`` compares the block's row of tiles with its column only: comparisons
    of one side along x with one along y (:func:`_block_dim`), joined by ``&&`` / ``||``.
    On a square tile of any size ``bx > by`` selects the tiles past the diagonal."""
    test = strip(test)
    parts = binary(test)
    if parts is None:
        return False
    left, op, right = parts
    if op in ("&&", "||"):
        return _row_against_column(g, left, seen) and _row_against_column(g, right, seen)
    return op in _COMPARISONS and \
        {_block_dim(g, left, seen), _block_dim(g, right, seen)} == {"x", "y"}


def _block_dim(g: Gemm, node: Node, seen: set[str]) -> str | None:
    """"x" / "y" for a block index (``blockIdx.x``), its tile offset (``blockIdx.x * TILE``,
    ``(TILE) * blockIdx.x``) or a local set once from one (``col0``), else None."""
    node = strip(node)
    d = builtin(node, "blockIdx")
    if d in ("x", "y"):
        return d
    parts = binary(node)
    if parts is not None and parts[1] == "*":
        dims = [_block_dim(g, side, seen) for side in (parts[0], parts[2])]
        sizes = [int_value(strip(side)) == g.tile for side in (parts[0], parts[2])]
        for dim, other in ((dims[0], sizes[1]), (dims[1], sizes[0])):
            if dim is not None and other:
                return dim
        return None
    name = text(node) if node.type == "identifier" else ""
    local = g.locals.get(name)
    if local is None or local.value is None or local.count > 1 or name in g.assigned or \
            name in seen:
        return None
    return _block_dim(g, local.value, seen | {name})


def _block_offset(size: Node) -> bool:
    """Whether the tile size ``size`` multiplies a block index (``blockIdx.x * TILE``: the
    tile's first column, which the rewrite reads as ``blockIdx.x * BN``)."""
    parent = size.parent
    while parent is not None and parent.type == "parenthesized_expression":
        size, parent = parent, parent.parent
    if parent is None or parent.type != "binary_expression" or \
            text(parent.child_by_field_name("operator")) != "*":
        return False
    other = parent.child_by_field_name("left")
    if other == size:
        other = parent.child_by_field_name("right")
    return other is not None and builtin(other, "blockIdx") in ("x", "y")


def constrain_exits(plan: Plan, exits: list[BlockExit], rows: str, columns: str) -> None:
    """Keep the block tile square where an exit's test reads a block index (module doc)."""
    for ex in exits:
        if ex.reads_block:
            plan.constrain(f"{rows} == {columns}")
            plan.note("REGISTER_TILE", True, f"the block's early exit `if "
                      f"({text(ex.test)})` runs each virtual thread's statements, then "
                      f"returns; its test reads the block's index, so the block tile stays "
                      f"square ({rows} == {columns}), as written", ex.statement)
            return
