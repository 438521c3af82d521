"""The 2-D tile family: tile size, rows per thread step, shared padding and block order.

Recognised shape (the classic shared-memory tiled kernel): a 2-D launch block ``(T, R)``
written as literals, a ``__shared__`` array ``[T][T]``, loops ``for (j = 0; j < T; j += R)``
and tile offsets ``blockIdx.{x,y} * T``. Then T is the tile (it also sets blockDim.x), R
the rows each loop step covers; padding the shared array's inner extent removes bank
conflicts on the column-wise pass; the block order remaps ``blockIdx`` (row-major, diagonal,
grouped swizzle), a bijection of the grid that is legal because tiles never communicate.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    block_offset,
    builtin,
    calls,
    declared_name,
    int_value,
    strip,
    text,
    walk,
)
from workbench.templater.block import _shared_arrays
from workbench.templater.plan import Plan
from workbench.templater.regtile import fresh_names
from workbench.templater.rules import literal, scale_divisor

_ORDER = """  // block order: 0 row-major, 1 diagonal, 2 grouped swizzle (a bijection of the grid)
  unsigned wb_bx = blockIdx.x, wb_by = blockIdx.y;
  if (BLOCK_ORDER == 1) {
    const unsigned bid = blockIdx.x + gridDim.x * blockIdx.y;
    wb_by = bid % gridDim.y;
    wb_bx = (bid / gridDim.y + wb_by) % gridDim.x;
  } else if (BLOCK_ORDER == 2) {
    const unsigned bid = blockIdx.x + gridDim.x * blockIdx.y;
    const unsigned per_group = SWIZZLE_GROUP * gridDim.x;
    const unsigned first = bid / per_group * SWIZZLE_GROUP;
    const unsigned rows = min(gridDim.y - first, (unsigned)SWIZZLE_GROUP);
    wb_by = first + bid % per_group % rows;
    wb_bx = bid % per_group / rows;
  }
"""


def _tile_loops(plan: Plan, tile: int, rows: int) -> list[tuple[Node, Node]] | None:
    """(bound literal, step literal) of every ``for (j = 0; j < tile; j += rows)``."""
    out = []
    for n in walk(plan.body):
        if n.type != "for_statement":
            continue
        init, cond = n.child_by_field_name("initializer"), n.child_by_field_name("condition")
        update = n.child_by_field_name("update")
        if init is None or cond is None or update is None or init.type != "declaration":
            continue
        var, _d, start = declared_name(init)
        if int_value(start) != 0 or cond.type != "binary_expression":
            continue
        right = cond.child_by_field_name("right")
        step = update.child_by_field_name("right")
        if text(cond.child_by_field_name("left")) == var and int_value(right) == tile and \
                text(update.child_by_field_name("operator")) == "+=" and \
                int_value(step) == rows and right is not None and step is not None:
            out.append((strip(right), strip(step)))
    return out or None


def _pad(extent: Node, tile: int) -> int | None:
    """0 for an inner extent ``T``, p for ``T + p`` or the literal ``T + p`` (p <= 1)."""
    value = int_value(extent)
    if value is not None:
        return value - tile if value - tile in (0, 1) else None
    parts = binary(extent)
    if parts and parts[1] == "+" and int_value(parts[0]) == tile and int_value(parts[2]) == 1:
        return 1
    return None


def lift_tile(plan: Plan) -> bool:
    """Apply the tile family when the kernel has the tiled shape; False when it has not."""
    if len(plan.block) != 2:
        return False
    tile, rows = literal(plan.block[0]), literal(plan.block[1])
    if tile is None or rows is None or rows >= tile:
        return False
    arrays = [(name, ext) for name, _d, ext in _shared_arrays(plan)
              if len(ext) == 2 and int_value(ext[0]) == tile and _pad(ext[1], tile) is not None]
    loops = _tile_loops(plan, tile, rows)
    offsets = [n for n in walk(plan.body)
               if block_offset(n, "x") == tile or block_offset(n, "y") == tile]
    if len(arrays) != 1 or loops is None or not offsets:
        return False
    name, extents = arrays[0]
    pad = _pad(extents[1], tile) or 0
    names = fresh_names(plan, ["TILE", "BLOCK_ROWS", "PAD"])
    t_name, rows_name, pad_name = names["TILE"], names["BLOCK_ROWS"], names["PAD"]
    for n in offsets:
        left = n.child_by_field_name("left")
        right = n.child_by_field_name("right")
        assert left is not None and right is not None
        plan.rw.replace(right if builtin(left, "blockIdx") else left, t_name)
    plan.rw.replace(strip(extents[0]), t_name)
    plan.rw.replace(strip(extents[1]), f"{t_name} + {pad_name}")
    for bound, step in loops:
        plan.rw.replace(bound, t_name)
        plan.rw.replace(step, rows_name)
    plan.block = [t_name, rows_name]
    for g, rule in enumerate(plan.grid):
        new = scale_divisor(rule, str(tile), t_name)
        plan.grid[g] = new if new is not None else rule
    where = f"{plan.source.line_of(plan.body)}"
    plan.add_param(t_name, {"kind": "choice", "values": sorted({16, 32, 64, tile}),
                            "default": tile, "description": f"tile edge (as written: {tile})"},
                   f"{where}: tile {tile}x{tile}")
    plan.add_param(rows_name, {"kind": "pow2", "min": 1, "max": 32, "default": rows,
                                  "description": "tile rows per loop step = blockDim.y "
                                                 f"(as written: {rows})"},
                   f"{where}: block y = {rows}")
    plan.add_param(pad_name, {"kind": "choice", "values": sorted({0, 1, pad}), "default": pad,
                           "description": f"extra column in the shared tile {name} "
                                          "(1 removes bank conflicts on column reads)"},
                   f"{where}: __shared__ {name}[{tile}][{tile}]")
    plan.constrain(f"{t_name} % {rows_name} == 0")
    plan.constrain(f"{t_name} * {rows_name} <= 1024")
    plan.constrain(f"{t_name} * {rows_name} >= 32")
    plan.note(t_name, True, f"tile {tile} lifted in {len(offsets)} block offsets, the shared "
              f"array {name}, {len(loops)} tile loops and the grid rules")
    plan.launch_bounds = f"{t_name} * {rows_name}"
    _block_order(plan)
    return True


def _block_order(plan: Plan) -> None:
    bad = sorted(c for c in calls(plan.body) if c.startswith("atomic") or c == "__threadfence")
    if bad:
        plan.note("BLOCK_ORDER", False, f"blocks communicate through {bad[0]}; the order of "
                  "the grid may matter, so it is kept")
        return
    for n in walk(plan.body):
        dim = builtin(n, "blockIdx")
        if dim in ("x", "y") and n.type == "field_expression":
            plan.rw.replace(n, f"wb_b{dim}")
    open_brace = plan.body.children[0]
    plan.rw.insert(open_brace.end_byte, "\n" + _ORDER)
    plan.add_param("BLOCK_ORDER", {"kind": "choice", "values": [0, 1, 2], "default": 0,
                                   "description": "order tiles are visited: 0 row-major, "
                                                  "1 diagonal, 2 grouped swizzle"},
                   f"{plan.source.line_of(plan.body)}: blockIdx.x / blockIdx.y")
    plan.add_param("SWIZZLE_GROUP", {"kind": "choice", "values": [2, 4, 8, 16], "default": 8,
                                     "description": "tile rows per group (BLOCK_ORDER 2)"},
                   f"{plan.source.line_of(plan.body)}: blockIdx.y")
    plan.constrain("BLOCK_ORDER == 2 or SWIZZLE_GROUP == 8")
    plan.note("BLOCK_ORDER", True, "tiles are independent (no atomics or fences): blockIdx "
              "remapped through a bijection of the grid")
