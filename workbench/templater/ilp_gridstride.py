"""A grid-stride loop that the launch runs at most once per thread, read as the guarded item
it is, so items with independent state (:mod:`.ilp`) apply to it.

``for (T i = blockIdx.x * B + threadIdx.x; i < n; i += S) BODY`` with ``S`` every thread of
the grid (``blockDim.x * gridDim.x``, ``B * gridDim.x``, in either order, through a
``const`` local holding it) launched on ``ceil_div(n, B)`` blocks of ``B`` threads: the
first ``i`` of a thread is below ``gridDim.x * B``, the next at least ``S = gridDim.x * B >=
n``, so the loop runs ``BODY`` once where ``i < n`` and never again; it means exactly
``T i = blockIdx.x * B + threadIdx.x; if (i < n) BODY``. Authors write the loop so any grid
covers the data; the folder's launch rule says which grid runs. Legal only where the analysis
shows it (each refusal names the line): the loop is the body's last statement, its bound is
a kernel argument the grid's ``ceil_div`` divides (the same shape, the same block size), or a
local never assigned whose value is that count (the same polynomial of the sizes), the
body neither assigns ``i`` nor leaves the loop (``break``/``continue``), and ``gridDim`` is read
only by the step.

Launched on ``ceil_div(n, L)`` blocks with ``L`` a literal ``S`` times the block (issue 28, set
20's crspline_rotmean: ``ceil_div(n, 2048)`` blocks of 256, eight values a thread), a thread
takes ``S`` trips: its items then run in rounds (:func:`in_rounds`), a round's ``ITEMS`` items
at ``((blockIdx.x + r * gridDim.x) * ITEMS + it) * B + threadIdx.x`` while the round's first
is below the bound, which covers every element once at any grid; ``SPAN`` (the expert's
name: values a thread) makes the grid ``ceil_div(n, B * SPAN)``, ``S`` as written, with
``ITEMS <= SPAN``. Such a loop holds no ``return`` (it would end the later trips too).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    LOOPS,
    binary,
    builtin,
    declared_name,
    int_value,
    strip,
    text,
    walk,
)
from workbench.templater.item_state import assigned_names, statements
from workbench.templater.plan import Plan
from workbench.templater.rules import scale_divisor
from workbench.templater.vector import Illegal


@dataclass(frozen=True)
class OnceLoop:
    """The loop, its index declaration (the initializer), its test, and the statement's
    position among the body's top-level statements."""

    loop: Node
    decl: Node
    index: str
    start: Node
    cond: Node
    position: int
    span: int = 1  # trips a thread takes at the launch as written (grid ceil_div(n, B * span))


def once_loop(plan: Plan, index_start: object) -> OnceLoop | None:
    """The body's last statement when it is a grid-stride loop whose initializer
    ``index_start`` (a callable: value node -> block-offset node or None) accepts; None when
    it is no such loop; raises :class:`Illegal` (with the line) where it is one the launch
    may run more than once, or whose body is not one item's work."""
    stmts = statements(plan.body)
    if not stmts or stmts[-1].type != "for_statement":
        return None
    loop = stmts[-1]
    init = loop.child_by_field_name("initializer")
    cond = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or init.type != "declaration" or cond is None or update is None:
        return None
    index, _d, start = declared_name(init)
    if start is None or not callable(index_start) or index_start(start) is None:
        return None
    if not _grid_step(plan, update, index):
        return None  # not a grid-stride loop (a walk of its own: other transforms)
    bound = _bound(cond, index)
    if bound is None:
        raise Illegal(f"the grid-stride loop's test `{text(cond)}` is not `{index} < n`", loop)
    span = _covered(plan, bound, loop)
    body = loop.child_by_field_name("body")
    assert body is not None
    if span > 1 and any(n.type == "return_statement" for n in walk(body)):
        raise Illegal("a `return` in the grid-stride loop ends the thread's later trips, "
                      f"{span} a thread as launched (a trip is not one item)", loop)
    if index in assigned_names(body):
        raise Illegal(f"the grid-stride loop's body assigns its index `{index}`", loop)
    for n in walk(body):
        if n.type in ("break_statement", "continue_statement") and _owner(n) == loop:
            raise Illegal(f"`{text(n)}` leaves the grid-stride loop (its trip is the item)", n)
    readers = [n for n in walk(plan.body) if builtin(n, "gridDim") is not None and
               not _inside(n, update) and not _in_stride_local(plan, n)]
    if readers:
        raise Illegal("the kernel reads gridDim other than in the grid-stride step",
                      readers[0])
    return OnceLoop(loop, init, index, start, cond, len(stmts) - 1, span)


def _owner(jump: Node) -> Node | None:
    up = jump.parent
    while up is not None and up.type not in (*LOOPS, "switch_statement"):
        up = up.parent
    return up


def _inside(node: Node, outer: Node) -> bool:
    return outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def _bound(cond: Node, index: str) -> Node | None:
    parts = binary(cond)
    if parts is None or parts[1] != "<" or text(strip(parts[0])) != index:
        return None
    return strip(parts[2])


def _is_total_threads(plan: Plan, node: Node) -> bool:
    """``node`` is the grid's thread count: gridDim.x times the block (blockDim.x or the
    launch's literal block size), in either order, under casts."""
    parts = binary(node)
    if parts is None or parts[1] != "*":
        return False
    left, _op, right = parts
    return any(builtin(a, "gridDim") == "x" and is_block(plan, b)
               for a, b in ((left, right), (right, left)))


def is_block(plan: Plan, node: Node) -> bool:
    """``node`` is the block's size: ``blockDim.x``, or the launch's block (its literal, or
    the literal a lifted block size stands for)."""
    if builtin(node, "blockDim") == "x":
        return True
    if not plan.block:
        return False
    block = plan.block[0]
    value = int_value(node)
    lifted = plan.params.get(block)
    written = int(lifted.spec["default"]) if lifted is not None else \
        int(block) if block.isdigit() else None
    return text(strip(node)) == block or (value is not None and value == written)


def _stride_local(plan: Plan, node: Node) -> Node | None:
    """The declaration of a never-assigned local ``node`` names whose value is the grid's
    thread count."""
    node = strip(node)
    if node.type != "identifier":
        return None
    d = plan.facts.defs.get(text(node))
    if d is None or d.assigned or d.value is None or d.is_pointer or d.is_shared:
        return None
    return d.decl if _is_total_threads(plan, d.value) else None


def _in_stride_local(plan: Plan, node: Node) -> bool:
    """``node`` sits in the initializer of a const local holding the grid's thread count."""
    up = node.parent
    while up is not None and up.type != "declaration":
        up = up.parent
    if up is None:
        return False
    name, _d, value = declared_name(up)
    d = plan.facts.defs.get(name)
    return value is not None and d is not None and not d.assigned and \
        _is_total_threads(plan, value)


def _grid_step(plan: Plan, update: Node, index: str) -> bool:
    """``index += S`` (or ``index = index + S``) with S the grid's thread count."""
    if update.type != "assignment_expression":
        return False
    left, right = update.child_by_field_name("left"), update.child_by_field_name("right")
    op = text(update.child_by_field_name("operator"))
    if left is None or right is None or text(strip(left)) != index:
        return False
    if op == "=":
        parts = binary(right)
        if parts is None or parts[1] != "+":
            return False
        if text(strip(parts[0])) == index:
            right = parts[2]
        elif text(strip(parts[2])) == index:
            right = parts[0]
        else:
            return False
    elif op != "+=":
        return False
    return _is_total_threads(plan, strip(right)) or _stride_local(plan, right) is not None


def _covered(plan: Plan, bound: Node, loop: Node) -> int:
    """The trips a thread takes: 1 where the launch's grid is ``ceil_div(N, B)`` with N the
    shape ``bound`` is launched with and B the block (the grid's threads cover the bound, so
    no thread takes a second trip); S where it is ``ceil_div(N, L)`` with ``L`` a literal S
    times the block as written (each thread's trips ``S`` items, ``gridDim.x * B`` apart)."""
    name = text(bound)
    shape = plan.scalars.get(name) or _grid_count(plan, bound)
    block = plan.block[0] if plan.block else ""
    if shape is None or len(plan.grid) != 1 or not block:
        raise Illegal(f"the grid-stride loop's bound `{name}` is not a kernel argument the "
                      "1-D grid is known to cover", loop)
    rule = scale_divisor(plan.grid[0], block, block)  # (X + L - 1) // L read as ceil_div
    want = f"ceil_div({shape}, {block})"
    if rule is not None and ast.dump(ast.parse(rule, mode="eval")) == \
            ast.dump(ast.parse(want, mode="eval")):
        return 1
    span = grid_span(plan, block, shape)
    if span is None:
        raise Illegal(f"the grid `{plan.grid[0]}` is not {want}: a thread may take more than "
                      "one trip of the grid-stride loop", loop)
    return span


def _grid_count(plan: Plan, bound: Node) -> str | None:
    """The grid rule's ``ceil_div`` count (its text) where ``bound`` is a local never assigned
    whose value is that count over the kernel's sizes (round 31b's ``const int total = N * C *
    oh * ow;`` with ``oh = H * 2``, launched on ``ceil_div(n * c * 4 * h * w, 256)``): the
    same integer polynomial of the launch's shape names; None otherwise."""
    from workbench.templater.vector_access import size_expression  # it reads .vector

    if strip(bound).type != "identifier" or len(plan.grid) != 1:
        return None
    size = size_expression(plan, bound)
    rule = scale_divisor(plan.grid[0], plan.block[0], plan.block[0]) if plan.block else None
    tree = ast.parse(rule or plan.grid[0], mode="eval").body
    if size is None or not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and
                            tree.func.id == "ceil_div" and len(tree.args) == 2):
        return None
    count = _polynomial(tree.args[0])
    same = count is not None and count == _polynomial(ast.parse(size, mode="eval").body)
    return ast.unparse(tree.args[0]) if same else None


def _polynomial(node: ast.expr) -> dict[tuple[str, ...], int] | None:
    """A launch expression of names, integers, ``+``, ``-`` and ``*`` as monomial ->
    coefficient; None for anything else (a division, a call)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return {(): node.value} if node.value else {}
    if isinstance(node, ast.Name):
        return {(node.id,): 1}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _polynomial(node.operand)
        return None if inner is None else {m: -c for m, c in inner.items()}
    if not isinstance(node, ast.BinOp) or not isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        return None
    a, b = _polynomial(node.left), _polynomial(node.right)
    if a is None or b is None:
        return None
    out: dict[tuple[str, ...], int] = {}
    if isinstance(node.op, ast.Mult):
        for ma, ca in a.items():
            for mb, cb in b.items():
                m = tuple(sorted(ma + mb))
                out[m] = out.get(m, 0) + ca * cb
    else:
        sign = -1 if isinstance(node.op, ast.Sub) else 1
        out = dict(a)
        for m, c in b.items():
            out[m] = out.get(m, 0) + sign * c
    return {m: c for m, c in out.items() if c}


def grid_span(plan: Plan, block: str, shape: str | None = None) -> int | None:
    """S where the grid is ``ceil_div(shape, L)`` (any count where ``shape`` is None) with
    ``L`` a literal S > 1 times the block as written (its literal, or the literal a lifted
    block size stands for)."""
    lifted = plan.params.get(block)
    written = int(lifted.spec["default"]) if lifted is not None else \
        int(block) if block.isdigit() else None
    tree = ast.parse(plan.grid[0], mode="eval").body
    if written is None or not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name)
                               and tree.func.id == "ceil_div" and len(tree.args) == 2):
        return None
    num, den = tree.args
    if (shape is not None and ast.unparse(num) != shape) or not isinstance(den, ast.Constant) or \
            type(den.value) is not int or den.value % written or den.value // written < 2:
        return None
    return den.value // written


#: The lifted trips a thread takes (a multi-trip grid-stride loop's grid divisor) and the
#: local counting a thread's rounds of items.
SPAN = "SPAN"
TRIP = "wb_trip"


def add_span(plan: Plan, span: int, divisor: str, loop: Node) -> None:
    """The ``SPAN`` knob of a grid-stride ``loop`` launched for ``span`` trips a thread: the
    grid's divisor over ``divisor`` (each rule that names it: any grid is covered)."""
    plan.add_param(SPAN, {"kind": "choice", "values": sorted({1, 2, 4, 8, 16, span}),
                          "default": span,
                          "description": f"items per thread over the grid-stride loop, the "
                                         f"grid's divisor over {divisor} (as written: "
                                         f"{span})"},
                   f"{loop.start_point.row + 1}: grid-stride loop")


def items_grid(plan: Plan, once: OnceLoop | None, divisor: str, items: str) -> str | None:
    """The grid rule for ``items`` items a thread: the block's divisor scaled by ``items``
    (one trip a thread), or, for a loop of ``once.span`` trips, ``ceil_div(n, B * SPAN)``
    (every grid is covered: the thread's rounds of items step by the grid); None where the
    rule does not divide so."""
    if not plan.grid:
        return None
    if once is None or once.span == 1:
        return scale_divisor(plan.grid[0], divisor, f"{divisor} * {items}")
    written = plan.params[divisor].spec["default"] if divisor in plan.params else divisor
    return scale_divisor(plan.grid[0], str(int(written) * once.span), f"{divisor} * {SPAN}")


def item_block(once: OnceLoop | None, items: str, it: str) -> str:
    """What ``blockIdx.x`` becomes in an item's place: the item's block of ``items`` (in the
    thread's round ``TRIP`` of a multi-trip loop: ``gridDim.x`` blocks further a round)."""
    block = "blockIdx.x" if once is None or once.span == 1 else \
        f"(blockIdx.x + {TRIP} * gridDim.x)"
    return f"({block} * {items} + {it})"


def in_rounds(plan: Plan, once: OnceLoop | None, divisor: str, items: str, body: str) -> str:
    """``body`` (the items' statements) as written for one trip, or in rounds of ``items``
    items while the round's first item is below the loop's bound, with the SPAN knob and
    its constraint added (a multi-trip loop)."""
    if once is None or once.span == 1:
        return body
    parts = binary(once.cond)
    assert parts is not None
    bound = text(strip(parts[2]))
    add_span(plan, once.span, divisor, once.loop)
    plan.constrain(f"{items} <= {SPAN}")
    return (f"for (int {TRIP} = 0; (long long)(blockIdx.x + {TRIP} * gridDim.x) * ({items} * "
            f"{divisor}) < ({bound}); ++{TRIP}) {{  // the thread's rounds of items\n  "
            f"{body}\n  }}")
