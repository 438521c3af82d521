"""Z_ITEMS: a thread marches several of the grid's z planes (a 3-D grid, one plane per block z).

Recognised on the parse, whatever the spelling: a 3-D launch whose grid's z is one kernel
scalar argument's shape (``grid = [..., ..., "nz"]``: block z ``b`` handles plane ``b``),
``blockIdx.z`` read in the kernel (``const int k = blockIdx.z;``, or in place), and neither
``gridDim.z`` nor ``blockIdx.z`` read by another function of the file.

The rewrite runs the whole kernel body in a loop over ``Z_ITEMS`` consecutive planes: a
block of the new grid (z = ``ceil(nz / Z_ITEMS)``) does, one after another, what blocks
``blockIdx.z * Z_ITEMS + 0 .. Z_ITEMS - 1`` of the kernel as written did, each plane with
the written body and ``blockIdx.z`` replaced by the plane (an ``unsigned`` local, as
``blockIdx.z`` is), planes past the grid's last stop the loop, and each ``return`` ends the
plane (``continue``). Each output is computed by the same statements in the same order as
written (bit-identical); known practice for 3-D stencils (z marching, as in 2.5-D
blocking): consecutive planes of one thread share 2R of their 2R + 1 input planes, so the
planes a box or star reads again are still in L1 / registers when the next plane runs, and
the per-block index arithmetic is paid once per Z_ITEMS planes.

Legal where the blocks as written are independent: no barrier or shared memory (a plane
would wait for threads that march other planes), and every ``return`` outside any loop of
the body (a ``return`` inside a loop cannot become ``continue``). Anything else is refused
with the reason and the line.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

from workbench.templater.analysis import builtin, inside_loop, line, shares_or_syncs, text, walk
from workbench.templater.block import lift_block
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, apply_or_note, fresh_names
from workbench.templater.rules import literal
from workbench.templater.stencil_zsums import lift_zsums

Z_ITEMS = "Z_ITEMS"
BLOCK_Y = "BLOCK_Y"
#: planes per thread: up to 32, the depth z-marching stencil kernels commonly walk per
#: thread (beyond, the grid's z gets too few blocks to fill the machine at moderate nz)
VALUES = [1, 2, 4, 8, 16, 32]


def reads_block_z(plan: Plan) -> list[Node]:
    """Every ``blockIdx.z`` of the kernel body."""
    return [n for n in walk(plan.body)
            if n.type == "field_expression" and builtin(n, "blockIdx") == "z"]


def plane_scalar(plan: Plan) -> str | None:
    """The kernel scalar argument whose shape expression is the grid's z, if any."""
    if len(plan.grid) != 3:
        return None
    want = "".join(str(plan.grid[2]).split())
    for name, shape in plan.scalars.items():
        if "".join(str(shape).split()) == want:
            return name
    return None


def lift_zgrid(plan: Plan) -> bool:
    """Z_ITEMS for a 3-D grid with one plane per block z; False when the kernel is not of
    the family (no ``blockIdx.z`` read) or the analysis refused (the finding says why)."""
    uses = reads_block_z(plan)
    if len(plan.grid) != 3 or not uses:
        return False

    def analyse() -> Callable[[], None] | None:
        nz = _analyse(plan, uses)
        return lambda: _emit(plan, uses, nz)
    return apply_or_note(plan, Z_ITEMS, analyse)


def _analyse(plan: Plan, uses: list[Node]) -> str:
    nz = plane_scalar(plan)
    if nz is None:
        threads = literal(plan.block[2]) if len(plan.block) == 3 else None
        if threads is not None and threads > 1:
            raise Refused(f"the grid's z `{plan.grid[2]}` counts blocks of {threads} threads "
                          "along z, not planes (one plane per block z is modelled: a 3-D "
                          "block's own z items march its planes)", uses[0])
        raise Refused(f"the grid's z `{plan.grid[2]}` is not one kernel argument's shape (one "
                      "plane per block z)", uses[0])
    if shares_or_syncs(plan.body):
        raise Refused("the kernel uses a barrier or shared memory: its blocks are not "
                      "independent planes", uses[0])
    root = plan.source.tree.root_node
    for n in walk(root):
        if n.type == "preproc_def" and re.search(r"\b(blockIdx|gridDim)\s*\.\s*z\b", text(n)):
            # an object-like macro's text is not parsed: it reads the block's own z
            raise Refused(f"the macro `{text(n.child_by_field_name('name'))}` reads the grid's z "
                          "in its text", n)
        if n.type != "field_expression":
            continue
        if builtin(n, "gridDim") == "z":
            raise Refused(f"`{text(n)}` is read; the grid's z would change", n)
        if builtin(n, "blockIdx") == "z" and not (
                plan.body.start_byte <= n.start_byte < plan.body.end_byte):
            raise Refused(f"`{text(n)}` is read outside the kernel body", n)
    for n in walk(plan.body):
        if n.type == "return_statement" and inside_loop(n, plan.body):
            raise Refused(f"`{text(n)}` inside a loop cannot end one plane alone", n)
    return nz


def _rows(plan: Plan) -> tuple[str, list[Node]] | None:
    """The kernel scalar whose shape is the grid's y and the body's ``blockIdx.y`` reads,
    where a 1-D block's row is ``blockIdx.y`` alone (block y, ``threadIdx.y``,
    ``blockDim.y`` and ``gridDim.y`` never read; ``blockIdx.y`` read in the body only)."""
    if len(plan.block) != 1:
        return None
    want = "".join(str(plan.grid[1]).split())
    ny = next((n for n, s in plan.scalars.items() if "".join(str(s).split()) == want), None)
    uses = [n for n in walk(plan.body)
            if n.type == "field_expression" and builtin(n, "blockIdx") == "y"]
    if ny is None or not uses:
        return None
    for n in walk(plan.source.tree.root_node):
        if n.type != "field_expression":
            continue
        if any(builtin(n, b) == "y" for b in ("threadIdx", "blockDim", "gridDim")) or (
                builtin(n, "blockIdx") == "y" and not
                plan.body.start_byte <= n.start_byte < plan.body.end_byte):
            plan.note(BLOCK_Y, False, f"`{text(n)}` is read: the block's rows are not "
                      "independent of it", n)
            return None
    return ny, uses


def _lift_rows(plan: Plan, rows: tuple[str, list[Node]]) -> None:
    """A 1-D block's row per block y becomes ``BLOCK_Y`` rows per block (``blockIdx.y`` ->
    ``blockIdx.y * BLOCK_Y + threadIdx.y``; rows past the grid's last return at once).
    Known practice for stencils on a plane: a 2-D block's tile shares the rows its
    neighbour reads reach in L1 (2.5-D blocking uses 2-D tiles of 4 to 8 rows)."""
    ny, uses = rows
    by = fresh_names(plan, [BLOCK_Y])[BLOCK_Y]
    plan.rw.insert(plan.body.start_byte + 1, (
        f"\n  const unsigned wb_yp = blockIdx.y * {by} + threadIdx.y;  // this row's "
        "blockIdx.y as written\n"
        f"  if (wb_yp >= (unsigned)({ny})) return;  // past the grid's last row\n"))
    for n in uses:
        plan.rw.replace(n, "wb_yp")
    threads = plan.block[0]
    plan.block.append(by)
    plan.grid[1] = f"ceil_div({plan.grid[1]}, {by})"
    plan.launch_bounds = f"{threads} * {by}"
    plan.add_param(by, {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                        "description": "rows of the grid's y per block (block y; as "
                                       "written: 1)"},
                   f"{line(uses[0])}: {text(uses[0])}")
    plan.constrain(f"{threads} * {by} <= 1024")
    plan.note(BLOCK_Y, True, f"{by} rows per block (`blockIdx.y` -> the row, grid y = "
              f"ceil({ny} / {by}))", uses[0])


def _emit(plan: Plan, uses: list[Node], nz: str) -> None:
    lift_block(plan)
    rows = _rows(plan)
    rw = plan.rw
    zi = fresh_names(plan, [Z_ITEMS])[Z_ITEMS]
    body = plan.body
    if rows is not None:
        _lift_rows(plan, rows)
    close_sums = lift_zsums(plan, zi, nz)  # its march goes before the planes' loop
    rw.insert(body.start_byte + 1, (
        f"\n  for (int wb_zi = 0; wb_zi < {zi}; ++wb_zi) {{  // {zi} planes of the grid's z "
        "per block, one after another\n"
        f"  const unsigned wb_zp = blockIdx.z * {zi} + wb_zi;  // this plane's blockIdx.z "
        "as written\n"
        f"  if (wb_zp >= (unsigned)({nz})) break;  // past the grid's last plane\n"))
    for n in uses:
        rw.replace(n, "wb_zp")
    for n in walk(body):
        if n.type == "return_statement":
            rw.replace(n, "continue;  // next plane")
    rw.insert(body.end_byte - 1, "  }\n")
    plan.grid[2] = f"ceil_div({plan.grid[2]}, {zi})"
    plan.add_param(zi, {"kind": "choice", "values": VALUES, "default": 1,
                        "description": "consecutive planes of the grid's z marched by one "
                                       "thread, one after another (as written: 1)"},
                   f"{line(uses[0])}: {text(uses[0])}")
    plan.note(Z_ITEMS, True, f"the body repeats for {zi} consecutive planes per block "
              f"(`blockIdx.z` -> the plane, grid z = ceil({nz} / {zi}), returns become "
              "`continue`)", uses[0])
    if close_sums is not None:
        close_sums()
