"""Shared tiles tied to a 2-D block: lifted together through the author's macro, or kept.

Where no tile family (:mod:`.regtile`, :mod:`.tile`) applies to a kernel with a 2-D or 3-D
block, a ``__shared__`` array whose extent is written with the block size (``tile[TILE + 2]
[TILE + 2]`` for a 3x3 halo, ``[16][16]``) ties the block to the tile: lifting block x and y
as independent ranges leaves the tile, its halo and its load loop behind (the issue's blur
read past its tile at every config but the default). Two outcomes, never a half-lifted tile:

- the block is square and every use of its size in the kernel is spelled by one macro
  (``#define TILE 16``): the macro is the tile, so one parameter replaces its value and the
  block, the grid, the extents, the halo and the load loops all follow it;
- otherwise the block size is kept as written, and the finding names the array and line.

A loop over tiles bounded by a block index (``t <= blockIdx.y``: its diagonal tile) sums
each row's terms to the end of its tile, which moves with the tile: the block is kept unless
the stores stage the terms past the diagonal as zero (:mod:`.regtile_diagonal`'s test).
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import LOOPS, builtin, int_value, strip, text, walk
from workbench.templater.apron import lift_apron
from workbench.templater.apron_line import lift_apron_line
from workbench.templater.block import _shared_arrays
from workbench.templater.block_table import guarded_tables
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, fresh_names
from workbench.templater.regtile_diagonal import bounded_by_block, diagonal
from workbench.templater.regtile_shapes import constrain_whole_tiles
from workbench.templater.rules import literal, scale_divisor
from workbench.templater.smem_rect import lift_rect_block
from workbench.templater.smem_rect_partials import ACCUMULATE


def _tied(plan: Plan, sizes: set[int]) -> tuple[str, Node, Node] | None:
    """(array, declaration, extent) of the first shared extent written with a block size;
    a table a guard on the thread index fills (:mod:`.block_table`) is no tile."""
    tables = guarded_tables(plan)
    for name, decl, extents in _shared_arrays(plan):
        for e in extents if name not in tables else []:
            if any(n.type in ("number_literal", "identifier") and int_value(n) in sizes
                   for n in walk(e)):
                return name, decl, e
    return None


def lift_tied_tiles(plan: Plan) -> bool:
    """Lift a tied shared tile through its macro, or keep the block (True: handled); an
    apron tile (:mod:`.apron`, a line in one dimension: :mod:`.apron_line`) first gets its
    block apart from the tile and outputs per thread."""
    if lift_apron(plan) or lift_apron_line(plan):
        return True
    sizes = {v for b in plan.block if (v := literal(b)) is not None and v > 1}
    if sum(1 for b in plan.block if literal(b) != 1) < 2:
        return False  # a 1-D block: block.py follows arrays indexed by the thread
    tied = _tied(plan, sizes)
    if tied is None:
        return False
    array, decl, extent = tied
    value = literal(plan.block[0])
    macro = _one_macro(plan, value) if value is not None and \
        all(literal(b) == value for b in plan.block[:2]) and \
        all(literal(b) in (None, 1) for b in plan.block[2:]) else None
    if macro is None or value is None:
        try:  # the block's sizes spelled by two names (a strip and its thread rows)
            lift_rect_block(plan)
            return True
        except Refused as refused:
            at = "" if refused.node is None else f", line {refused.node.start_point.row + 1}"
            plan.note("BLOCK_X", False, f"the shared array {array}'s extent `{text(extent)}` "
                      "is tied to the block size, and the kernel spells that size neither with "
                      "one macro the block, the grid and the tile's loads all follow, nor with "
                      f"one name a dimension ({refused.reason}{at}): the block size is kept "
                      "as written", decl)
            return True
    whole = _sum_over_tile(plan, macro)
    if whole is not None:
        plan.note("BLOCK_X", False, f"`{text(whole.child_by_field_name('condition'))}`: the "
                  f"loop sums over the whole extent {macro} and no loop around it walks "
                  f"tiles, so {macro} is what is summed, not a tile size: the block size is "
                  "kept as written", whole)
        return True
    counted = _counts_tiles(plan, macro)
    if counted is not None:
        plan.note("BLOCK_X", False, f"`{text(counted)}`: the kernel's argument counts tiles of "
                  f"{macro}, so {macro} is part of what the kernel computes (another tile is "
                  "another argument's meaning), not a block size: the block size is kept as "
                  "written", counted)
        return True
    stop = _diagonal_refused(plan)
    if stop is not None:
        plan.note("BLOCK_X", False, f"{stop.reason}: the tile's size would move the sums; the "
                  "block size is kept as written", stop.node)
        return True
    grid = [scale_divisor(rule, str(value), "P") for rule in plan.grid[:2]]
    if any(g is None for g in grid):
        plan.note("BLOCK_X", False, f"the grid rules {plan.grid[:2]} do not divide by the "
                  f"tile {value}: the block size is kept as written", decl)
        return True
    name = fresh_names(plan, ["TILE"])["TILE"]
    for use in plan.uses(macro):
        plan.rw.replace(use, name)
    plan.block[:2] = [name, name]
    for g in range(2):
        plan.grid[g] = scale_divisor(plan.grid[g], str(value), name) or plan.grid[g]
    plan.add_param(name, {"kind": "choice", "values": sorted({8, 16, 32, value}),
                          "default": value,
                          "description": f"tile edge = block x = block y (as written: "
                                         f"{macro} = {value})"},
                   f"{plan.source.line_of(decl)}: __shared__ {array}")
    plan.constrain(f"{name} * {name} <= 1024")
    plan.constrain(f"{name} * {name} >= 32")
    plan.launch_bounds = f"{name} * {name}"
    plan.note(name, True, f"{macro} sizes the block, the grid and the shared array {array} "
              f"(`{text(extent)}`): one parameter, so the tile, its halo and its load loops "
              "follow the block", decl)
    constrain_whole_tiles(plan, name)  # a kernel that bounds no index by a size
    return True


def _diagonal_refused(plan: Plan) -> Refused | None:
    """Why a loop over tiles bounded by a block index (``t <= blockIdx.y``) is not read
    (:mod:`.regtile_diagonal`): its rows then sum the terms to the end of their tile, which
    moves with the tile; one tile for the block and the depth is right only where the stores
    zero the terms past the diagonal. None where every such loop is that triangle."""
    for loop in walk(plan.body):
        if loop.type in LOOPS and "__syncthreads" in text(loop.child_by_field_name("body")) \
                and bounded_by_block(plan.body, loop):
            try:
                diagonal(plan.body, loop)
            except Refused as why:
                return why
    return None


def _counts_tiles(plan: Plan, macro: str) -> Node | None:
    """A product of ``macro`` and a scalar argument of the kernel that is also compared with
    a block index (``kBase = kb * TILE`` beside ``blockIdx.x == kb``: the pivot tile ``kb``
    of a blocked Floyd-Warshall phase, counted in tiles as the grid's blocks are), or None.
    A scalar only multiplied by the tile (``K * TILE * by``, a row's offset) counts
    elements."""
    scalars = {p.name for p in plan.kernel.params if not p.is_pointer}
    tiles = {text(strip(side)) for n in walk(plan.body)
             if n.type == "binary_expression" and
             text(n.child_by_field_name("operator")) in ("==", "!=", "<", "<=", ">", ">=")
             for side, other in ((n.child_by_field_name("left"), n.child_by_field_name("right")),
                                 (n.child_by_field_name("right"), n.child_by_field_name("left")))
             if side is not None and other is not None and
             builtin(strip(other), "blockIdx") is not None} & scalars
    for use in plan.uses(macro):
        up = use.parent
        while up is not None and up.type == "parenthesized_expression":
            up = up.parent
        if up is None or up.type != "binary_expression" or \
                text(up.child_by_field_name("operator")) != "*":
            continue
        if any(strip(side).type == "identifier" and text(strip(side)) in tiles
               for side in (up.child_by_field_name("left"), up.child_by_field_name("right"))
               if side is not None):
            return up
    return None


def _one_macro(plan: Plan, value: int) -> str | None:
    """The macro name every use of ``value`` in the kernel body is spelled with, if any."""
    names = set()
    for n in walk(plan.body):
        if n.type == "number_literal" and int_value(n) == value:
            return None  # the size also written as a literal: not one quantity by name
        if n.type == "identifier" and int_value(n) == value:
            names.add(text(n))
    return next(iter(names)) if len(names) == 1 else None


def _sum_over_tile(plan: Plan, macro: str) -> Node | None:
    """A loop bounded by ``macro`` (``for (k = 0; k < N; ++k) s += ..``) that accumulates
    into a value declared outside it, with no loop around it: a transform of the whole
    extent (a DCT's row), whose result the extent changes. Inside a loop that walks tiles
    (a tiled product's ``for (t = 0; t < K; t += TILE)``) the sum is one tile's share."""
    for loop in walk(plan.body):
        cond = loop.child_by_field_name("condition") if loop.type == "for_statement" else None
        body = loop.child_by_field_name("body")
        if cond is None or body is None or macro not in {text(n) for n in walk(cond)}:
            continue
        up = loop.parent
        while up is not None and up is not plan.body and up.type not in LOOPS:
            up = up.parent
        if up is not None and up.type in LOOPS:
            continue
        if any(n.type == "assignment_expression" and
               text(n.child_by_field_name("operator")) in ACCUMULATE for n in walk(body)):
            return loop
    return None

