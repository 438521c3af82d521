"""Items per thread and OUTER_THREADS for the lane-inner layout (a fixed inner dimension of
K elements mapped to the lanes, the rest of the block's threads over an outer dimension):
several outer elements per thread, and the block's outer extent as a knob.

The layout, as a channels-last kernel writes it (one channel a lane, one pixel a group of
K threads):

- a 1-D block of K * P threads: ``lane = threadIdx.x % K`` (or ``& (K - 1)``) and
  ``outer = blockIdx.x * P + threadIdx.x / K`` (or ``>> log2 K``), block rule ``K * P``;
- a 2-D block (K, P): ``lane = threadIdx.x`` and ``outer = blockIdx.x * P + threadIdx.y``
  (P a constant or ``blockDim.y``), block rules ``K`` and ``P``;

with the grid's x rule ``ceil_div(N, P)``. The thread index is read nowhere else, blockIdx.x
only in ``outer``, the kernel shares no memory and has no barrier of its own.

Known practice for such kernels (a depthwise filter, a per-channel scale and shift): each
thread keeps its lane (its channel: its taps or its scale stay the same) and walks several
outer elements, which amortizes the per-thread set-up (the per-block copy of a constant
table, the lane's own table entries) over more outputs; the outer extent of the block is the
block-size knob, always a multiple of K threads. The items knob (ITEMS_PER_THREAD for a 1-D
block, ITEMS_X for a 2-D one, as the generic wrap of :mod:`.wrap` names it; where that wrap
already applied, its loop is kept) wraps the statements from the ``outer`` declaration on
in a loop over items: item i of a block takes the outer elements of block
``blockIdx.x * ITEMS + i`` as written (a warp's accesses per item are what they were),
early returns become ``continue``; a name declared before it that the items assign (a
pointer advanced to the element) starts each item from its value there, or the loop is
refused with the line (:mod:`.wrap_state`). OUTER_THREADS replaces P in the offset, the block rule
and the grid's divisor (``ceil_div(N, OUTER_THREADS * ITEMS)``). Each output is computed
by the same statements from the same values: bit-identical at every config.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    calls,
    declared_name,
    in_lambda,
    int_value,
    shares_or_syncs,
    strip,
    terms,
    text,
    walk,
)
from workbench.templater.plan import Plan
from workbench.templater.regtile_split import const_value
from workbench.templater.rules import literal, scale_divisor
from workbench.templater.vector import Illegal
from workbench.templater.wrap import in_loop_or_switch
from workbench.templater.wrap_state import ItemState, item_state

THREADS = "OUTER_THREADS"
#: The items loop's counter (the window of :mod:`.const_window` indexes by it).
ITEM = "wb_outer_item"
_MAX_BLOCK = 1024


@dataclass(frozen=True)
class LaneLayout:
    """Where the layout is written: the lane and outer declarations, K and P, the nodes the
    transform rewrites."""

    k: int
    p: int
    two_d: bool
    lane_decl: Node  # ``lane = threadIdx.x % K`` (or threadIdx.x)
    lane_name: str
    outer_decl: Node
    block_idx: Node  # the one blockIdx.x
    p_node: Node | None  # P in ``blockIdx.x * P`` (None: blockDim.y)


def apply_const_items(plan: Plan) -> LaneLayout | None:
    """Lift the items per thread and OUTER_THREADS where the kernel has the lane-inner
    layout; note why not otherwise (only kernels whose lane-indexed constant arrays brought
    them here). Where the generic wrap (:mod:`.wrap`) already made the items loop, only
    OUTER_THREADS is added. Returns the layout where both knobs apply."""
    name = items_name(plan)
    if any(literal(b) is None for b in plan.block):
        plan.note(THREADS, False, f"another transform already lifted the block ({plan.block})")
        return None
    try:
        layout = _layout(plan)
        wrapped = _wrapped(plan, layout, name)
        if name in plan.params and not wrapped:
            raise Illegal(f"another transform lifted {name} on other statements")
        divisor = text(layout.p_node) if layout.p_node is not None else str(layout.p)
        old = f"{divisor} * {name}" if wrapped else str(layout.p)
        grid = scale_divisor(plan.grid[0], old, f"{THREADS} * {name}")
        if grid is None:
            raise Illegal(f"the grid's x rule {plan.grid[0]!r} does not divide by the outer "
                          f"threads per block {divisor}", layout.outer_decl)
        prefix, rest = _split(plan, layout.outer_decl)
        if not wrapped:
            state = item_state(plan.body, plan.kernel, prefix, rest)
            _untouched(plan, rest)
            _returns(plan, rest)
    except Illegal as exc:
        plan.note(THREADS, False, exc.reason, exc.node)
        return None
    if not wrapped:
        _emit_items(plan, layout, rest, name, state)
    _emit_threads(plan, layout, grid, name)
    return layout


def lane_layout(plan: Plan) -> LaneLayout | None:
    """The lane-inner layout where the kernel has it (None: not; nothing noted)."""
    if any(literal(b) is None for b in plan.block):
        return None
    try:
        return _layout(plan)
    except Illegal:
        return None


def items_name(plan: Plan) -> str:
    """The items knob's name, as the generic wrap names it (1-D block or not)."""
    return "ITEMS_PER_THREAD" if len(plan.block) == 1 else "ITEMS_X"


def _wrapped(plan: Plan, layout: LaneLayout, name: str) -> bool:
    """Whether the generic wrap already put the statements in an items loop over this
    blockIdx.x (its edit replaces that node with one naming ``name``)."""
    bx = layout.block_idx
    return name in plan.params and any(
        (e.start, e.end) == (bx.start_byte, bx.end_byte) and name in e.text
        for e in plan.rw.edits)


def _layout(plan: Plan) -> LaneLayout:
    block = [literal(b) for b in plan.block]
    if len(plan.grid) < 1 or not plan.block or any(b is None for b in block):
        raise Illegal("the launch block is not literal extents")
    if shares_or_syncs(plan.body) or "__syncthreads" in calls(plan.body):
        raise Illegal("the kernel shares memory or synchronises its block: its work per "
                      "thread is not modelled here")
    tx = [n for n in walk(plan.body) if builtin(n, "threadIdx") is not None
          and n.type == "field_expression"]
    bx = [n for n in walk(plan.body) if n.type == "field_expression" and
          builtin(n, "blockIdx") == "x"]
    if any(builtin(n, "blockDim") in ("x", "z") for n in walk(plan.body)
           if n.type == "field_expression"):
        raise Illegal("the kernel reads blockDim.x or .z: its indexing may follow the block")
    grid_reads = [n for n in walk(plan.body) if n.type == "field_expression" and
                  builtin(n, "gridDim") is not None]
    if grid_reads:
        raise Illegal("the kernel reads gridDim (a grid-stride walk would keep the block's "
                      "outer extent as written)", grid_reads[0])
    if len(bx) != 1:
        raise Illegal(f"blockIdx.x is read {len(bx)} times (once: the outer index)",
                      bx[1] if len(bx) > 1 else None)
    decls = [c for c in plan.body.named_children if c.type == "declaration"]
    two_d = len(block) == 2
    if len(block) > 2:
        raise Illegal("the block is neither 1-D nor (lanes, outer)")
    sizes = [b for b in block if b is not None]
    k, lane_decl = _lane(tx, decls, two_d, sizes)
    outer_decl, p_node, p = _outer(plan, bx[0], decls, two_d, k)
    total = sizes[0] if not two_d else sizes[1]
    p = total if p < 0 else p  # blockDim.y: the block's outer extent
    if (not two_d and k * p != total) or (two_d and p != total):
        raise Illegal(f"the block of {plan.block} is not {k} lanes x {p} outer threads",
                      outer_decl)
    return LaneLayout(k, p, two_d, lane_decl, declared_name(lane_decl)[0], outer_decl, bx[0],
                      p_node)


def _lane(tx: list[Node], decls: list[Node], two_d: bool,
          block: list[int]) -> tuple[int, Node]:
    """K of the lane declaration; every thread-index read is one of the two declarations."""
    for n in tx:
        decl = _top_decl(n, decls)
        if decl is None:
            raise Illegal(f"`{text(n.parent or n)[:50]}` reads the thread index outside the "
                          "lane and outer declarations", n)
    lanes: list[tuple[int, Node]] = []
    for d in decls:
        _name, _dn, value = declared_name(d)
        if value is None:
            continue
        v = strip(value)
        if two_d and builtin(v, "threadIdx") == "x":
            lanes.append((block[0], d))
            continue
        parts = binary(v)
        if parts is not None and builtin(parts[0], "threadIdx") == "x":
            k = const_value(parts[2])  # `& (CH - 1)`: the expression's value
            if k is not None and parts[1] == "%" and k > 0:
                lanes.append((k, d))
            elif k is not None and parts[1] == "&" and k > 0 and (k + 1) & k == 0:
                lanes.append((k + 1, d))
    if len(lanes) != 1:
        raise Illegal("no single lane declaration (`lane = threadIdx.x % K`, or threadIdx.x "
                      "over a (K, P) block)")
    return lanes[0]


def _outer(plan: Plan, bx: Node, decls: list[Node], two_d: bool,
           k: int) -> tuple[Node, Node | None, int]:
    """The outer declaration ``blockIdx.x * P + (threadIdx.x / K | threadIdx.y)``."""
    decl = _top_decl(bx, decls)
    if decl is None:
        raise Illegal("blockIdx.x is read outside a top-level declaration", bx)
    name, _d, value = declared_name(decl)
    local = plan.facts.defs.get(name)
    if local is None or local.assigned:
        raise Illegal(f"`{name}` (the outer index) is assigned after its declaration", decl)
    parts = terms(value) if value is not None else []
    if len(parts) != 2 or any(s < 0 for s, _t in parts):
        raise Illegal(f"`{text(decl)[:60]}` is not blockIdx.x * P + the thread's outer "
                      "index", decl)
    offset = next((t for _s, t in parts if _mentions(t, bx)), None)
    thread = next((t for _s, t in parts if not _mentions(t, bx)), None)
    mul = binary(offset) if offset is not None else None
    if mul is None or mul[1] != "*" or thread is None:
        raise Illegal(f"`{text(decl)[:60]}`: no blockIdx.x * P term", decl)
    p_node = mul[2] if strip(mul[0]) == strip(bx) or _mentions(mul[0], bx) else mul[0]
    if _mentions(p_node, bx):
        raise Illegal(f"`{text(decl)[:60]}`: no blockIdx.x * P term", decl)
    if not _outer_thread(thread, two_d, k):
        raise Illegal(f"`{text(thread)}` is not the thread's outer index (threadIdx.x / {k} "
                      "or threadIdx.y)", decl)
    if two_d and builtin(p_node, "blockDim") == "y":
        return decl, None, -1
    p = int_value(p_node)
    if p is None or p <= 0:
        raise Illegal(f"the block offset `{text(p_node)}` is no constant", decl)
    named = strip(p_node)
    if named.type == "identifier":
        others = [n for n in walk(plan.source.tree.root_node) if n.type == "identifier"
                  and text(n) == text(named) and n != named and
                  (n.parent is None or n.parent.type != "preproc_def") and
                  not _defines(n)]
        if others:
            raise Illegal(f"`{text(named)}` (the block offset) is used elsewhere too: that use "
                          "would keep or change with the block's outer extent", others[0])
    return decl, p_node, p


def _defines(node: Node) -> bool:
    """``node`` is the name a file-scope constant's declaration defines."""
    up = node.parent
    return up is not None and up.type == "init_declarator" and \
        up.child_by_field_name("declarator") == node


def _outer_thread(node: Node, two_d: bool, k: int) -> bool:
    node = strip(node)
    if two_d:
        return builtin(node, "threadIdx") == "y"
    parts = binary(node)
    if parts is None or builtin(parts[0], "threadIdx") != "x":
        return False
    v = const_value(parts[2])
    return (parts[1] == "/" and v == k) or (parts[1] == ">>" and v is not None and
                                            1 << v == k)


def _mentions(node: Node, target: Node) -> bool:
    return any(n.start_byte == target.start_byte and n.end_byte == target.end_byte
               for n in walk(node))


def _top_decl(node: Node, decls: list[Node]) -> Node | None:
    return next((d for d in decls if d.start_byte <= node.start_byte < d.end_byte), None)


def _split(plan: Plan, outer_decl: Node) -> tuple[list[Node], list[Node]]:
    """The body's statements before the outer declaration, and from it on (the items')."""
    stmts = [c for c in plan.body.named_children if c.type != "comment"]
    return stmts[:stmts.index(outer_decl)], stmts[stmts.index(outer_decl):]


def _untouched(plan: Plan, rest: list[Node]) -> None:
    """No edit of another transform straddles the statements the item loop wraps."""
    start, end = rest[0].start_byte, rest[-1].end_byte
    for e in plan.rw.edits:
        if e.start < start < e.end or e.start < end < e.end:
            raise Illegal("another transform rewrote code across the statements the item "
                          "loop would wrap", rest[0])


def _returns(plan: Plan, rest: list[Node]) -> None:
    """Early returns become ``continue``; a top-level break or continue is refused (a
    lambda's own are the lambda's)."""
    exits = [(stmt, n) for stmt in rest for n in walk(stmt) if not in_lambda(n, stmt)]
    for stmt, n in exits:
        inner = in_loop_or_switch(n, stmt)
        if n.type in ("break_statement", "continue_statement", "goto_statement") and \
                not inner:
            raise Illegal(f"`{text(n)}` at the top level would change meaning", n)
        if n.type == "return_statement" and inner:
            raise Illegal("`return` inside a loop cannot become `continue`", n)
    for _stmt, n in exits:
        if n.type == "return_statement":
            plan.rw.replace(n, "continue;  // the next outer item")


def _emit_items(plan: Plan, lay: LaneLayout, rest: list[Node], name: str,
                state: ItemState) -> None:
    item = ITEM
    plan.rw.replace(lay.block_idx, f"(blockIdx.x * {name} + {item})")
    start, end = rest[0].start_byte, rest[-1].end_byte
    plan.rw.replace_span(start, end, make=lambda rw: (
        f"{state.keep('outer')}#pragma unroll\n  for (int {item} = 0; {item} < {name}; "
        f"++{item}) {{  // outer items of this thread, its lane kept\n  "
        f"{state.give('outer')}{rw.render(start, end)}\n  }}"))
    where = f"{lay.outer_decl.start_point.row + 1}: {text(lay.outer_decl)[:60]}"
    plan.add_param(name, {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                          "description": "outer elements per thread, the lane kept (as "
                          "written: 1)"}, where)
    kept = f"; each item starts from {', '.join(state.kept)} as at the index" \
        if state.kept else ""
    plan.note(name, True, f"{lay.k} lanes x {lay.p} outer threads a block: each thread "
              f"keeps its lane and walks {name} outer elements (early returns become "
              f"`continue`{kept})", lay.outer_decl)


def _emit_threads(plan: Plan, lay: LaneLayout, grid: str, name: str) -> None:
    if lay.p_node is not None:
        plan.rw.replace(lay.p_node, THREADS)
    plan.grid[0] = grid
    where = f"{lay.outer_decl.start_point.row + 1}: {text(lay.outer_decl)[:60]}"
    p = lay.p
    if lay.two_d:
        plan.block[1] = THREADS
    else:
        plan.block[0] = f"{lay.k} * {THREADS}"
    plan.launch_bounds = f"{lay.k} * {THREADS}"
    top = max(1, _MAX_BLOCK // lay.k)
    values = sorted({1 << i for i in range(top.bit_length()) if 1 << i <= top} | {p})
    plan.add_param(THREADS, {"kind": "choice", "values": values, "default": p,
                             "description": f"outer elements a block covers at once, {lay.k} "
                             f"threads each (as written: {p})"}, where)
    plan.constrain(f"{lay.k} * {THREADS} <= {_MAX_BLOCK}")
    plan.note(THREADS, True, f"{lay.k} lanes x {p} outer threads a block: the block is "
              f"{lay.k} * {THREADS} threads (a multiple of the lanes), the grid's x "
              f"divides by {THREADS} * {name}", lay.outer_decl)
