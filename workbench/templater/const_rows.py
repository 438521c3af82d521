"""OUT_Y: consecutive rows per thread of the lane-inner layout, where a block row is one row.

A channels-last depthwise filter launched with ``grid.y`` = the image's rows takes its row
as ``y = blockIdx.y``: every block computes one row and loads the rows above and below it
again, so each input row is loaded by three blocks (a 3 x 3 filter). Known practice for
such filters is to give a thread several consecutive output rows and keep the input rows
they share in registers (:mod:`.const_window` indexes its window by the row counter too):
the thread's channel and pixels stay, ``y`` becomes ``blockIdx.y * OUT_Y + r`` for ``r <
OUT_Y``, and the grid's y extent ``ceil_div(rows, OUT_Y)``.

Legal where: ``y``'s declaration (a top-level statement at or after the items' outer
declaration, never assigned) is exactly ``blockIdx.y`` and blockIdx.y is read nowhere else;
the grid's y rule is a kernel argument's own value (the kernel bounds its rows by the
launch: ``grid = [..., "h"]`` with the argument ``h``), so the added rows past it are
skipped by ``if (y >= h) continue;``. The statements from ``y``'s declaration on run once
per row, as written (an early exit already made ``continue`` by the items loop now skips
that row's output, which is what it skipped as written); a name declared before ``y`` that
those statements assign (a pointer advanced to the row) starts each row from its value
there, or OUT_Y is refused with the line (:mod:`.wrap_state`). Each output is computed by the
same statements from the same values: bit-identical at every value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.templater.analysis import builtin, declared_name, text, walk
from workbench.templater.const_items import LaneLayout
from workbench.templater.plan import Plan
from workbench.templater.vector import Illegal
from workbench.templater.wrap_state import ItemState, item_state

KNOB = "OUT_Y"
ROW = "wb_row"


@dataclass
class Rows:
    """The row's local and the rows loop's counter (the window's y axis), the argument that
    bounds the rows, and whether the copy being rendered knows every row inside it
    (:mod:`.const_inner` sets ``inside[0]`` while it renders its interior copy)."""

    name: str
    decl: Node
    counter: str = ROW
    knob: str = KNOB
    bound: str = ""
    inside: list[bool] = field(default_factory=lambda: [False])


def apply_lane_rows(plan: Plan, layout: LaneLayout) -> Rows | None:
    """Lift OUT_Y where the lane-inner layout's row is the block's row; note why not."""
    try:
        decl, bound = _row(plan, layout)
        stmts = [c for c in plan.body.named_children if c.type != "comment"]
        at = stmts.index(decl)
        state = item_state(plan.body, plan.kernel, stmts[:at], stmts[at:])
    except Illegal as exc:
        plan.note(KNOB, False, exc.reason, exc.node)
        return None
    rows = Rows(name=declared_name(decl)[0], decl=decl, bound=bound)
    _emit(plan, rows, state)
    kept = f"; each row starts from {', '.join(state.kept)} as at the row" \
        if state.kept else ""
    plan.note(KNOB, True, f"`{rows.name}` is the block's row (grid y = `{bound}`): each "
              f"thread walks {KNOB} consecutive rows (those past `{bound}` skipped{kept})",
              decl)
    return rows


def _row(plan: Plan, layout: LaneLayout) -> tuple[Node, str]:
    if KNOB in plan.params:
        raise Illegal(f"another transform lifted {KNOB}")
    if len(plan.grid) < 2:
        raise Illegal("the grid has no y extent")
    reads = [n for n in walk(plan.body) if n.type == "field_expression" and
             builtin(n, "blockIdx") == "y"]
    if len(reads) != 1:
        raise Illegal(f"blockIdx.y is read {len(reads)} times (once: the row)",
                      reads[1] if len(reads) > 1 else None)
    stmts = [c for c in plan.body.named_children if c.type != "comment"]
    decl = next((s for s in stmts if s.start_byte <= reads[0].start_byte < s.end_byte), None)
    if decl is None or decl.type != "declaration" or \
            decl.start_byte < layout.outer_decl.start_byte:
        raise Illegal("blockIdx.y is not read by a top-level declaration after the outer "
                      "index", reads[0])
    name, _d, value = declared_name(decl)
    local = plan.facts.defs.get(name)
    if value is None or builtin(value, "blockIdx") != "y" or value.type != "field_expression" \
            or local is None or local.assigned or len(decl.children_by_field_name(
                "declarator")) != 1:
        raise Illegal(f"`{text(decl)[:60]}` is not the row alone (`y = blockIdx.y`, never "
                      "assigned)", decl)
    bound = next((a for a, e in plan.scalars.items()
                  if e.replace(" ", "") == plan.grid[1].replace(" ", "")), None)
    if bound is None:
        raise Illegal(f"the grid's y extent `{plan.grid[1]}` is not a kernel argument: the "
                      "added rows past it could not be skipped", decl)
    edits = [e for e in plan.rw.edits if decl.start_byte < e.start < decl.end_byte or
             decl.start_byte < e.end < decl.end_byte]
    if edits:
        raise Illegal("another transform rewrote the row's declaration", decl)
    return decl, bound


def _emit(plan: Plan, rows: Rows, state: ItemState) -> None:
    decl = rows.decl
    value = decl.child_by_field_name("declarator")
    assert value is not None
    init = value.child_by_field_name("value")
    assert init is not None
    plan.rw.replace(init, f"(blockIdx.y * {KNOB} + {ROW})")
    body = plan.body
    last = [c for c in body.named_children][-1]
    start, end = decl.start_byte, last.end_byte
    plan.rw.replace_span(start, end, make=lambda rw: (
        f"{state.keep('row')}#pragma unroll\n  for (int {ROW} = 0; {ROW} < {KNOB}; ++{ROW}) "
        f"{{  // consecutive rows of this thread\n  {state.give('row')}"
        f"{rw.render(decl.start_byte, decl.end_byte)}\n"
        f"  if ({_skip(rows)}) continue;  // a row past the image\n"
        f"  {rw.render(decl.end_byte, end)}\n  }}"))
    plan.grid[1] = f"ceil_div({plan.grid[1]}, {KNOB})"
    plan.add_param(KNOB, {"kind": "choice", "values": [1, 2, 4], "default": 1,
                          "description": "consecutive rows per thread (as written: 1, the "
                          "block's row)"}, f"{decl.start_point.row + 1}: {text(decl)[:60]}")


def _skip(rows: Rows) -> str:
    """The test of a row past the image (known false in :mod:`.const_inner`'s interior
    copy, whose thread tested every row of its own first)."""
    test = f"{rows.name} >= {rows.bound}"
    return f"false && ({test})" if rows.inside[0] else test
