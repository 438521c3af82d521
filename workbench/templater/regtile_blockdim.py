"""Tiles whose side is the block's size read at run time (``blockDim``): what the block lift
must not change alone (issue 28, first contact with the tiled-product family).

A product that takes its tile from the launch, ``const int ts = blockDim.x;`` then
``row = blockIdx.y * ts + threadIdx.y``, offsets the block's rows by its x size while its y
threads number them: the kernel is right only for a square block (rows ``ts`` .. the y size
are never computed when x grows, or are computed twice when it shrinks). Lifting the x size
alone, as an independent range, writes wrong configs; so does the grid along y, which the
launch as written divides by the literal. And a kernel whose shared tiles live in
``extern __shared__`` memory is launched with kernel.toml's ``smem_bytes``, which a lifted
block size does not follow: a larger block indexes past it.

:func:`block_tie` finds either use (through single-assignment aliases of ``blockDim`` and
``blockIdx`` too) so the block lift refuses with the line instead. The launch-sized buffer
ties the block wherever it is read at blockDim or indexed at a place that depends on the
thread, through pointers into it too (``float* Bs = smem + TILE * TILE; Bs[ty * TILE +
tx]``): a tile of a literal 16 sized at launch as 2 * 16 * 16 floats is as tied to the
block as one that reads blockDim.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import DIMS, binary, builtin, strip, text, walk
from workbench.templater.plan import Plan
from workbench.templater.rules import literal


@dataclass(frozen=True)
class BlockTie:
    """Why the block's ``dim`` size cannot be lifted alone, and the node it is about."""

    reason: str
    node: Node


def _aliases(plan: Plan, name: str) -> dict[str, str]:
    """Local -> dimension, for the locals declared once and never assigned whose value is
    ``name.<dim>`` (``const int ts = blockDim.x``), followed through local copies."""
    # regtile imports the analysis helpers this module's callers already import
    from workbench.templater.regtile import single_assignment_values
    values = single_assignment_values(plan.body, set())
    out: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for local, value in values.items():
            if local in out:
                continue
            v = strip(value)
            dim = builtin(v, name) or (out.get(text(v)) if v.type == "identifier" else None)
            if dim is not None:
                out[local] = dim
                changed = True
    return out


def _dim_of(node: Node, name: str, aliases: dict[str, str]) -> str | None:
    node = strip(node)
    d = builtin(node, name)
    if d is None and node.type == "identifier":
        d = aliases.get(text(node))
    return d


def _threads(plan: Plan, dim: str) -> int:
    """Threads of the launch as written along ``dim`` (1 where not written or not literal
    1: a block dimension given by an expression counts as several)."""
    i = DIMS.index(dim)
    if i >= len(plan.block):
        return 1
    value = literal(plan.block[i])
    return 2 if value is None else value


def _reads_dim(plan: Plan, dim: str, aliases: dict[str, str]) -> Node | None:
    for n in walk(plan.body):
        if builtin(n, "blockDim") == dim or (n.type == "identifier" and
                                             aliases.get(text(n)) == dim):
            return n
    return None


def _dynamic_shared(plan: Plan) -> Node | None:
    """The first ``extern __shared__`` declaration of the kernel's file."""
    for n in walk(plan.source.tree.root_node):
        if n.type == "declaration" and {"extern", "__shared__"} <= {text(c) for c in n.children}:
            return n
    return None


def _dynamic_name(extern: Node) -> str:
    """The array an ``extern __shared__`` declaration names (``smem`` of ``smem[]``)."""
    node = extern.child_by_field_name("declarator")
    while node is not None and node.type != "identifier":
        node = node.child_by_field_name("declarator")
    return "" if node is None else text(node)


def _reaching(plan: Plan, seeds: set[str]) -> set[str]:
    """``seeds`` and every local whose value reads one of them, transitively (a pointer into
    the buffer, ``float* Bs = smem + TILE * TILE``; a column from the thread)."""
    names = set(seeds)
    changed = True
    while changed:
        changed = False
        for d in plan.facts.defs.values():
            if d.name not in names and d.value is not None and any(
                    n.type in ("identifier", "field_expression") and text(n) in names
                    for n in walk(d.value)):
                names.add(d.name)
                changed = True
    return names


def _thread_indexed_dynamic(plan: Plan, extern: Node, dim: str) -> Node | None:
    """A subscript of the launch-sized buffer (or a pointer into it) at an index that
    depends on threadIdx.<dim>: where a lifted block would index past or across it."""
    buffers = _reaching(plan, {_dynamic_name(extern)})
    threaded = _reaching(plan, {f"threadIdx.{dim}"})
    for n in walk(plan.body):
        array = n.child_by_field_name("argument")
        if n.type != "subscript_expression" or array is None or text(strip(array)) not in buffers:
            continue
        index = n.child_by_field_name("indices") or n.child_by_field_name("index")
        if index is not None and any(text(m) in threaded for m in walk(index)):
            return n
    return None


def _own_threads_inside(product: Node, dim: str) -> bool:
    """Whether ``product`` (blockIdx.<g> * blockDim.<dim>) is added to threadIdx.<dim>."""
    parent = product.parent
    while parent is not None and parent.type == "parenthesized_expression":
        product, parent = parent, parent.parent
    parts = binary(parent) if parent is not None else None
    if parts is None or parts[1] != "+":
        return False
    other = parts[2] if parts[0] == product else parts[0]
    return builtin(strip(other), "threadIdx") == dim


def _lanes(plan: Plan) -> bool:
    """The lane family takes the kernel (its x threads are lanes, :mod:`.const_via`)."""
    from workbench.templater.const_via import takes_lanes  # it imports the block's rules
    return takes_lanes(plan)


def block_tie(plan: Plan, dim: str) -> BlockTie | None:
    """Why the block's ``dim`` size may not be lifted as an independent range (None: no
    reason found here)."""
    dims = _aliases(plan, "blockDim")
    blocks = _aliases(plan, "blockIdx")
    for n in walk(plan.body):
        parts = binary(n)
        if parts is None or parts[1] != "*":
            continue
        for a, b in ((parts[0], parts[2]), (parts[2], parts[0])):
            grid_dim = _dim_of(a, "blockIdx", blocks)
            if grid_dim is None or grid_dim == dim or _dim_of(b, "blockDim", dims) != dim:
                continue
            if _threads(plan, grid_dim) > 1:
                crossed = _own_threads_inside(n, dim)
                if crossed and not _lanes(plan):
                    if _threads(plan, grid_dim) != _threads(plan, dim):
                        continue  # the block lift's grid follows the size (_cross_grids)
                    return BlockTie(
                        f"`{text(n)}` offsets the blocks along {grid_dim} by the block's "
                        f"{dim} size, and the block is {_threads(plan, dim)} threads along "
                        f"both {dim} and {grid_dim} as written: the grid rules' divisor "
                        f"cannot tell which size each follows; the block stays as written", n)
                if crossed:
                    # a crossed grid (px = blockIdx.x * blockDim.y + threadIdx.y) whose x
                    # threads are lanes: the lane layout's transforms size the y threads
                    # (OUTER_THREADS) and add what BLOCK_Y alone cannot (vectors across the
                    # lanes, items, a register window), so the block lift leaves it to them
                    return BlockTie(
                        f"`{text(n)}` offsets the blocks along {grid_dim} by the block's "
                        f"{dim} size, numbered inside by threadIdx.{dim}, while the "
                        f"{grid_dim} threads are lanes: the lane layout's transforms size "
                        f"the block's {dim} threads; the block lift leaves it as written", n)
                return BlockTie(
                    f"`{text(n)}` offsets the blocks along {grid_dim} by the block's {dim} "
                    f"size while threadIdx.{grid_dim} numbers the rows inside: the block's "
                    f"{dim} and {grid_dim} sizes are tied (a square tile), which an "
                    "independent range per dimension would break; the block stays as written",
                    n)
    read = _reads_dim(plan, dim, dims)
    extern = _dynamic_shared(plan)
    if read is not None and extern is not None:
        return BlockTie(
            f"`{text(extern).strip()}` is sized at launch (kernel.toml's smem_bytes), which a "
            f"lifted block size would not follow, and the kernel reads blockDim.{dim} "
            f"(`{text(read)}`, line {read.start_point.row + 1}): the block stays as written",
            extern)
    indexed = None if extern is None else _thread_indexed_dynamic(plan, extern, dim)
    if extern is not None and indexed is not None:
        return BlockTie(
            f"`{text(extern).strip()}` is sized at launch (kernel.toml's smem_bytes), which a "
            f"lifted block size would not follow, and `{text(indexed)}` (line "
            f"{indexed.start_point.row + 1}) indexes it by threadIdx.{dim}: another block "
            "would index past it or across another thread's part; the block stays as written",
            extern)
    return None
