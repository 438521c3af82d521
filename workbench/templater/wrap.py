"""Work per block without vectorizing: the grid cap of grid-stride kernels (GRID_BLOCKS: at
most the cap as written where a store's index grows with blockIdx.x, :func:`apply_grid_cap`) and
items per thread by wrapping the code after ``v = ... blockIdx.d * B + threadIdx.d ...`` in
a loop over items (``ITEMS_<dim>``), with early returns turned into ``continue``. A name
declared before the index that the items assign (a parameter advanced to the item's row) is
given back its value at the index at each item's start, or the wrap is refused with the line
(:mod:`.wrap_state`).
"""

from __future__ import annotations

from collections.abc import Collection

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    block_offset,
    builtin,
    calls,
    declared_name,
    in_lambda,
    text,
    walk,
)
from workbench.templater.block_outputs import BlockStore, block_indexed_store
from workbench.templater.ilp import gave_items
from workbench.templater.plan import Plan
from workbench.templater.reduce_rewrite import bound_serial_sum, grid_values
from workbench.templater.rules import min_cap, scale_divisor
from workbench.templater.vector import Illegal, stride_loops
from workbench.templater.wrap_state import item_state


def apply_grid_cap(plan: Plan, compared_by_total: Collection[str] | None = None) -> None:
    """GRID_BLOCKS: the literal cap of a grid-stride kernel's grid (``min(X, 1024)``).

    Where the kernel stores at an index that grows with ``blockIdx.x`` (one partial a
    block: :func:`.block_outputs.block_indexed_store`), the output holds the slots of the
    grid as written and no more: the knob never exceeds the cap, and goes below it only
    where the folder compares that output by its total (``compare = "sum"`` or verify(),
    ``compared_by_total``) and its elements are floating (the sum skips the unwritten,
    poisoned slots; integer slots all count); otherwise the number of per-block outputs
    would change, and the knob is refused."""
    loops = stride_loops(plan)
    if not loops or not all(lp.grid_stride for lp in loops) or len(plan.grid) != 1:
        return
    capped = min_cap(plan.grid[0], "GRID_BLOCKS")
    if capped is None:
        plan.note("GRID_BLOCKS", False, "the grid of the grid-stride kernel has no literal cap")
        return
    rule, value = capped
    store = block_indexed_store(plan, "x")
    spec: dict[str, object] = {"kind": "pow2", "min": max(32, value // 16),
                               "max": value * 8, "default": value,
                               "description": f"most blocks launched (as written: {value})"}
    why = "every loop is grid-stride (steps by gridDim.x): any grid size covers the data"
    if store is not None:
        refusal = _per_block_refusal(plan, store, compared_by_total)
        if refusal is not None:
            plan.note("GRID_BLOCKS", False, f"`{text(store.node)}` {refusal}", store.node)
            return
        spec = {"kind": "choice", "values": grid_values(value), "default": value,
                "description": f"most blocks launched (as written: {value}, the slots of "
                               f"`{store.array}`)"}
        plan.constrain(f"GRID_BLOCKS <= {value}")
        serial = bound_serial_sum(plan, value)
        why += (f"; at most {value}, the grid as written: `{text(store.node)}` writes one "
                f"slot a block and `{store.array}` holds that grid's slots, no more; fewer "
                f"blocks write fewer slots, which the folder's sum of `{store.array}` allows; "
                f"`{serial}`: each thread's floating run at most twice the written one")
    plan.grid[0] = rule
    plan.helper("static_assert(GRID_BLOCKS >= 1, \"GRID_BLOCKS caps the grid (launch rule); "
                "the grid-stride loops cover any grid\");")
    plan.add_param("GRID_BLOCKS", spec, f"{plan.source.line_of(plan.body)}: grid cap {value}")
    plan.note("GRID_BLOCKS", True, why, store.node if store is not None else None)


def _per_block_refusal(plan: Plan, store: BlockStore,
                       compared_by_total: Collection[str] | None) -> str | None:
    """Why a block count below the as-written cap would be wrong for ``store``'s output
    (the reason, after the store's text), or None where the folder compares it by a sum
    of floating slots."""
    if compared_by_total is None or store.array not in compared_by_total:
        return (f"stores at an index that grows with blockIdx.x and the folder compares "
                f"`{store.array}` element by element: another block count would change the "
                "number of per-block outputs (more would write past the slots the grid as "
                "written fills), so the grid stays as written")
    base = next(p.base_type for p in plan.kernel.pointer_params if p.name == store.array)
    if base not in _FLOATING:
        return (f"stores at an index that grows with blockIdx.x into `{store.array}` of "
                f"{base}, compared by its sum over every slot (integer slots have no unwritten "
                "mark): fewer blocks would leave slots unwritten, so the grid stays as written")
    return None


#: Element types whose unwritten (poisoned) slots a sum comparison skips.
_FLOATING = frozenset({"float", "double", "half", "__half", "__nv_bfloat16", "nv_bfloat16"})


def apply_wrap_items(plan: Plan, done_dims: set[str]) -> None:
    """ITEMS_<dim>: several blocks' worth of work per block, by wrapping the code that
    follows ``T v = ... blockIdx.d * B + threadIdx.d ...`` in a loop over items."""
    if gave_items(plan):  # items with independent state took the statements already
        return
    stmts = [c for c in plan.body.named_children if c.type != "comment"]
    for k, decl in enumerate(stmts):
        if decl.type != "declaration":
            continue
        _var, _d, value = declared_name(decl)
        if value is None:
            continue
        offs = [n for n in walk(value) if any(_step(plan, n, d) is not None for d in "xyz")]
        dims = [d for d in "xyz" if offs and _step(plan, offs[0], d) is not None]
        if len(offs) != 1 or not dims or dims[0] in done_dims:
            continue
        dim = dims[0]
        name = "ITEMS_PER_THREAD" if len(plan.block) == 1 else f"ITEMS_{dim.upper()}"
        if name in plan.params:
            continue
        try:
            _wrap(plan, stmts[:k], stmts[k:], offs[0], dim, name)
        except Illegal as exc:
            plan.note(name, False, exc.reason, exc.node or decl)
            continue
        done_dims.add(dim)


def _wrap(plan: Plan, prefix: list[Node], rest: list[Node], off: Node, dim: str,
          name: str) -> None:
    if any(d.is_shared for d in plan.facts.defs.values()) or "__syncthreads" in calls(plan.body):
        raise Illegal("the block synchronises over shared memory; items cannot be wrapped")
    uses = [n for n in walk(plan.body) if builtin(n, "blockIdx") == dim and
            n.type == "field_expression"]
    if len(uses) != 1:
        raise Illegal(f"blockIdx.{dim} is read more than once", uses[1] if uses else None)
    divisor = _step(plan, off, dim)
    assert divisor is not None  # apply_wrap_items found the offset by it
    g = "xyz".index(dim)
    if g >= len(plan.grid):
        raise Illegal(f"no grid rule for dimension {dim}")
    new = scale_divisor(plan.grid[g], divisor, f"{divisor} * {name}")
    if new is None:
        raise Illegal(f"grid rule {plan.grid[g]!r} does not divide by the block offset "
                      f"{divisor}")
    state = item_state(plan.body, plan.kernel, prefix, rest)
    for stmt in rest:
        for n in walk(stmt):
            if in_lambda(n, stmt):
                continue  # a lambda's own return or loop exit: the items' loop never sees it
            if n.type in ("break_statement", "continue_statement", "goto_statement") and \
                    not in_loop_or_switch(n, stmt):
                raise Illegal(f"`{text(n)}` at the top level would change meaning", n)
            if n.type == "return_statement":
                if in_loop_or_switch(n, stmt):
                    raise Illegal("`return` inside a loop cannot become `continue`", n)
                plan.rw.replace(n, "continue;  // next item")
    plan.grid[g] = new
    item = f"wb_item_{dim}"
    plan.rw.replace(uses[0], f"(blockIdx.{dim} * {name} + {item})")
    start, end = rest[0].start_byte, rest[-1].end_byte
    plan.rw.replace_span(start, end, make=lambda rw: (
        f"{state.keep('index')}for (int {item} = 0; {item} < {name}; ++{item}) {{  "
        f"// items of this thread\n  {state.give('index')}{rw.render(start, end)}\n  }}"))
    plan.add_param(name, {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                          "description": f"consecutive blocks' work done by one block along "
                                         f"{dim} (as written: 1)"},
                   f"{rest[0].start_point.row + 1}: {text(rest[0])[:60]}")
    plan.note(name, True, f"the work after `{text(rest[0])}` repeats per item "
              "(early returns become `continue`" +
              (f"; each item starts from {', '.join(state.kept)} as at the index)"
               if state.kept else ")"))


def _step(plan: Plan, node: Node, dim: str) -> str | None:
    """The block offset's step as the grid rule divides by it, for ``blockIdx.dim * L``
    (L a constant: its text) or ``blockIdx.dim * blockDim.dim`` (the launch's block size
    along ``dim``: its rule, a literal or a lifted knob); None for any other node."""
    if block_offset(node, dim) is not None:
        parts = binary(node)
        assert parts is not None
        return plan.rw.text(parts[2] if builtin(parts[0], "blockIdx") else parts[0])
    parts = binary(node)
    g = "xyz".index(dim)
    if parts is None or parts[1] != "*" or g >= len(plan.block):
        return None
    left, _op, right = parts
    if {builtin(left, "blockIdx"), builtin(right, "blockDim")} == {dim} or \
            {builtin(right, "blockIdx"), builtin(left, "blockDim")} == {dim}:
        return plan.block[g]
    return None


def in_loop_or_switch(node: Node, top: Node) -> bool:
    """Whether a loop or switch inside ``top`` (``top`` included) holds ``node``."""
    up = node.parent
    while up is not None and up != top.parent:
        if up.type in ("for_statement", "while_statement", "do_statement", "switch_statement"):
            return True
        up = up.parent
    return False
