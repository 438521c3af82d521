"""ROWS_PER_BLOCK, PLANES_PER_BLOCK, ROW_ITEMS: a block that is one row of a named width, made
several rows a block and several elements a thread.

The family: a 1-D block of a literal ``B`` threads that the kernel never sizes by
``blockDim`` (the block *is* a row: ``B`` is a macro or constant's value, ``ROPE_PAIRS`` =
``ROPE_DIM / 2`` = 64, that the body reads as the row's width), ``threadIdx.x`` the element
of the row, ``blockIdx.x`` the row and ``blockIdx.y`` an outer index (a token), each launched
with a kernel argument's extent (``grid = (heads, tokens)``). Such a block is small and does
little (a rotary embedding's head: 64 pairs), so blocks, not bandwidth, bound it. The
template runs, in one thread of a ``(B / ROW_ITEMS, ROWS_PER_BLOCK)`` block, the threads as
written

* ``threadIdx.x + k * (B / ROW_ITEMS)`` for ``k < ROW_ITEMS`` (coalesced: a step's threads
  read one contiguous stretch of the row), ``B % ROW_ITEMS == 0`` (a constraint);
* of the block ``blockIdx.x * ROWS_PER_BLOCK + threadIdx.y`` (the rows side by side along
  y; a row past the written grid's extent returns at once);
* for each ``blockIdx.y * PLANES_PER_BLOCK + q``, ``q < PLANES_PER_BLOCK``, in turn (one
  past the extent ends the turns).

Each turn runs the body as written with those three values for ``threadIdx.x``,
``blockIdx.x`` and ``blockIdx.y`` (locals of the builtins' own ``unsigned`` type) and its
``return;`` as ``continue;`` (it ends that thread as written, not the turns after it). Legal
only where the analysis shows it (refusals name the line): the threads as written never
talk (no ``__shared__``, barrier, warp intrinsic, cooperative group), never read the
launch's shape (``blockDim``, ``gridDim``) nor ``threadIdx.y/z`` or ``blockIdx.z``, and
leave only by ``return;`` outside any loop or ``switch``. Threads that never talk, each
run whole in some order, are the kernel as written (no order between them was defined);
every thread as written runs exactly once. Offered only where nothing else lifted (the
block size could not be: no transform knows how the indexing follows it) and the body
reads a named constant of the block's size. At 1, 1, 1: the launch and the work as written.

ROW_VEC (:mod:`.row_vec`, where its analysis shows every run one path and its streams
unit-stride and aligned) makes each of a thread's ROW_ITEMS steps ROW_VEC consecutive threads
as written, ``(threadIdx.x + k * B / (ROW_ITEMS * ROW_VEC)) * ROW_VEC + v``, their streams
read and written as one vector; ``B % (ROW_ITEMS * ROW_VEC) == 0`` (a constraint).
"""

from __future__ import annotations

from collections.abc import Mapping

from tree_sitter import Node

from workbench.templater.analysis import (
    LOOPS,
    builtin,
    calls,
    in_lambda,
    int_value,
    text,
    walk,
)
from workbench.templater.apron_loads import expression_macros
from workbench.templater.plan import Plan
from workbench.templater.row_vec import KNOB as VEC
from workbench.templater.row_vec import RowVec, plan_row_vec, rewrite_row_vec
from workbench.templater.rules import literal
from workbench.templater.stencil import poly_of
from workbench.templater.vector_access import Illegal

ROWS = "ROWS_PER_BLOCK"
PLANES = "PLANES_PER_BLOCK"
ITEMS = "ROW_ITEMS"

#: Calls by which threads of a block talk (a turn of another thread's work would not wait).
_BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
_TALK = ("__syncthreads", "__syncwarp", "__shfl", "__ballot", "__any", "__all",
         "__activemask", "__reduce", "__match", "this_thread_block", "tiled_partition")


def apply_row_blocks(plan: Plan) -> bool:
    """ROWS_PER_BLOCK, PLANES_PER_BLOCK and ROW_ITEMS where legal; a note either way."""
    if plan.params or len(plan.block) != 1 or literal(plan.block[0]) is None:
        return False  # another family lifted the launch, or the block is no literal row
    try:
        width, rows_bound, planes_bound = _analyse(plan)
    except Illegal as exc:
        plan.note(ROWS, False, exc.reason, exc.node)
        return False
    try:
        vec: RowVec | None = plan_row_vec(plan, width)
    except Illegal as exc:
        plan.note(VEC, False, exc.reason, exc.node)
        vec = None
    _rewrite(plan, width, rows_bound, planes_bound, vec)
    return True


def _analyse(plan: Plan) -> tuple[int, str | None, str | None]:
    """(B, the rows' bound, the planes' bound): the kernel arguments launched with the grid's
    x and y extents (None: that knob is not offered). Raises Illegal."""
    width = literal(plan.block[0])
    if width is None or not 1 < width <= 1024 or len(plan.grid) not in (1, 2):
        raise Illegal("the launch is not a literal 1-D block on a 1-D or 2-D grid")
    body = plan.body
    for n in walk(body):
        if builtin(n, "blockDim") or builtin(n, "gridDim") or builtin(n, "threadIdx") in \
                ("y", "z") or builtin(n, "blockIdx") == "z":
            raise Illegal(f"`{text(n)}` reads the launch's shape or a dimension the rows take",
                          n)
        if n.type == "declaration" and any(text(c) == "__shared__" for c in n.children):
            raise Illegal("the block shares data in __shared__ memory", n)
        if n.type in ("break_statement", "continue_statement", "goto_statement") and \
                not _inside(n, body, (*LOOPS, "switch_statement")):
            raise Illegal(f"`{text(n)}` leaves the body", n)
        if n.type == "return_statement" and (n.named_child_count or
                                             _inside(n, body, (*LOOPS, "switch_statement"))
                                             or in_lambda(n, body)):
            raise Illegal(f"`{text(n)}` is not a plain `return;` outside loops", n)
        if n.type == "lambda_expression":
            raise Illegal("the body defines a lambda", n)
    talk = sorted(c for c in calls(body) if c.split("::")[-1].startswith(_TALK) or
                  c.startswith("cg::"))
    if talk:
        raise Illegal(f"the body calls {talk[0]}: its threads talk", body)
    helpers = plan.source.function_definitions()
    called, todo = set(), sorted(calls(body) & set(helpers))
    while todo:  # the helpers the body calls, and theirs
        name = todo.pop()
        called.add(name)
        todo += sorted(calls(helpers[name]) & set(helpers) - called - set(todo))
    for name in sorted(called):
        if any(builtin(n, b) for n in walk(helpers[name]) for b in _BUILTINS):
            raise Illegal(f"`{name}` reads the thread's place itself (the turns give the "
                          "kernel's body only its own values)", helpers[name])
    if any(n.type == "declaration" and any(text(c) == "__shared__" for c in n.children)
           for n in walk(plan.source.tree.root_node)):
        raise Illegal("the file declares __shared__ memory", body)
    macros = expression_macros(plan.source.tree.root_node, divide=True)
    if not any(_named_width(n, width, macros) for n in walk(body)):
        raise Illegal(f"no named constant of the block's size {width} is read: the block is "
                      "not shown to be a row of a named width", body)
    bounds = [_launched(plan, d) for d in range(len(plan.grid))]
    if bounds[0] is None and (len(bounds) < 2 or bounds[1] is None):
        raise Illegal("no grid extent is a kernel argument's launch value")
    return width, bounds[0], bounds[1] if len(bounds) > 1 else None


def _named_width(node: Node, width: int, macros: Mapping[str, Node]) -> bool:
    """``node`` is a constant expression of ``width`` that names a macro or a file constant:
    ``ROPE_PAIRS`` (``#define ROPE_PAIRS (ROPE_DIM / 2)``), ``kPairs``, ``HEAD_DIM / 2``."""
    if node.type not in ("identifier", "binary_expression") or \
            not any(n.type == "identifier" for n in walk(node)):
        return False
    if node.type == "identifier" and text(node) not in macros:
        return int_value(node) == width  # an integer macro or constant reads as its value
    return poly_of(node, macros, divide=True) == {(): width}


def _inside(node: Node, top: Node, kinds: tuple[str, ...]) -> bool:
    up = node.parent
    while up is not None and up != top:
        if up.type in kinds:
            return True
        up = up.parent
    return False


def _launched(plan: Plan, dim: int) -> str | None:
    """The scalar kernel argument launched with the grid's extent ``dim`` (``heads``)."""
    names = [a for a, value in plan.scalars.items()
             if value.strip() == plan.grid[dim].strip() and _scalar(plan, a)]
    return names[0] if len(names) == 1 else None


def _scalar(plan: Plan, name: str) -> bool:
    try:
        return plan.kernel.param(name).is_scalar
    except KeyError:
        return False


def _rewrite(plan: Plan, width: int, rows: str | None, planes: str | None,
             vec: RowVec | None) -> None:
    body = plan.body
    per = f"({ITEMS} * {VEC})" if vec is not None else ITEMS
    lanes = f"({width} / {per})"
    for n in walk(body):
        if builtin(n, "threadIdx") == "x":
            plan.rw.replace(n, "wb_lane")
        elif builtin(n, "blockIdx") == "x" and rows is not None:
            plan.rw.replace(n, "wb_row")
        elif builtin(n, "blockIdx") == "y" and planes is not None:
            plan.rw.replace(n, "wb_plane")
        elif n.type == "return_statement":
            plan.rw.replace(n, "continue;")
    head = ""
    if rows is not None:
        head += (f"\n  const unsigned int wb_row = blockIdx.x * {ROWS} + threadIdx.y;  "
                 f"// the block as written\n  if (wb_row >= ({rows})) return;")
    if planes is not None:
        head += (f"\n#pragma unroll\n  for (int wb_q = 0; wb_q < {PLANES}; ++wb_q) {{\n"
                 f"  const unsigned int wb_plane = blockIdx.y * {PLANES} + wb_q;\n"
                 f"  if (wb_plane >= ({planes})) break;")
    head += (f"\n#pragma unroll\n  for (int wb_k = 0; wb_k < {ITEMS}; ++wb_k) {{  "
             f"// the threads as written, {lanes} apart\n")
    if vec is None:
        head += f"  const unsigned int wb_lane = threadIdx.x + wb_k * {lanes};"
    else:  # runs of VEC consecutive threads as written, their streams moved as vectors
        head += (rewrite_row_vec(plan, vec) +
                 f"#pragma unroll\n  for (int wb_v = 0; wb_v < {VEC}; ++wb_v) {{\n"
                 f"  const unsigned int wb_lane = (threadIdx.x + wb_k * {lanes}) * {VEC} + "
                 "wb_v;")
    tail = "\n  }" + ("\n  }" if planes is not None else "") + \
        ("\n  }" if vec is not None else "") + "\n"
    plan.rw.replace_span(body.start_byte + 1, body.start_byte + 1, head)
    plan.rw.replace_span(body.end_byte - 1, body.end_byte - 1, tail)
    line = f"{body.start_point.row + 1}: a block of one {width}-wide row"
    values = [v for v in (1, 2, 4, 8) if width % v == 0]
    plan.add_param(ITEMS, {"kind": "choice", "values": values, "default": 1,
                           "description": f"threads as written a thread, {lanes} apart along "
                                          "the row (as written: 1)"}, line)
    plan.constrain(f"{width} % {ITEMS} == 0")
    if vec is not None:
        plan.add_param(VEC, {"kind": "choice", "values": vec.values, "default": 1,
                             "description": "consecutive threads as written a thread, their "
                                            "elements read and written as one vector (as "
                                            "written: 1)"}, line)
        plan.constrain(f"{width} % ({ITEMS} * {VEC}) == 0")
    block_y = "1"
    if rows is not None:
        plan.add_param(ROWS, {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                              "description": "rows (blocks as written along x) a block, "
                                             "on threadIdx.y (as written: 1)"}, line)
        plan.grid[0] = f"ceil_div({plan.grid[0]}, {ROWS})"
        block_y = ROWS
    if planes is not None:
        plan.add_param(PLANES, {"kind": "choice", "values": [1, 2, 4, 8, 16], "default": 1,
                                "description": "blocks as written along y a block, one after "
                                               "another (as written: 1)"}, line)
        plan.grid[1] = f"ceil_div({plan.grid[1]}, {PLANES})"
    plan.block = [f"{width} / {per}", block_y] if rows is not None else [f"{width} / {per}"]
    threads = f"{width} / {per} * {block_y}"
    plan.constrain(f"{threads} <= 1024")
    if rows is not None and width >= 32:
        plan.constrain(f"{threads} >= 32")
    plan.note(ROWS, True, f"the block is one row of {width} (a named constant's value): "
              "threads as written run as rows of a block, planes in turn and elements a "
              "thread; they never talk, so any order of them is the kernel as written", body)
