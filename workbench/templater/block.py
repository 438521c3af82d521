"""Lifting the block size, with every use it governs; the tile family for 2-D tiled kernels.

A launch block dimension written as a literal B (``block = ["256"]``) becomes a parameter
together with the uses of B in the kernel that mean "the block size": thread-stride loop
steps, ``blockIdx.x * B`` block offsets, shared arrays indexed by the thread, tree-reduction
starts ``B / 2``, ``__launch_bounds__`` and the grid rule's ``ceil_div(X, B)``. Any other B
in the kernel is left alone and listed, except where the lift would resize a shared array of
B: such a B (a walk over tiles ``start += B``, a loop over one ``q < B``) would not follow
the tile, so the block size stays as written. A comparison of the thread index with B or B / 2
outside a reduction loop is a dependency the analysis does not model: the block size is then
not lifted at all. A table a guard on the thread index fills (:mod:`.block_table`) keeps its
extent, constrained to stay covered; ``blockIdx.x * 4 + threadIdx.y`` (items of the grid on
the y threads) is a use of the y size. Shared slots the thread indexes (one per warp,
``slot[threadIdx.x / 32]``) follow the block with their counts and the bounds that read them,
or keep the block size as written (:mod:`.block_slots`).
"""

from __future__ import annotations

import ast

from tree_sitter import Node

from workbench.templater.analysis import (
    DIMS,
    binary,
    block_offset,
    builtin,
    declared_name,
    factors,
    int_value,
    line,
    strip,
    text,
    walk,
)
from workbench.templater.block_outputs import unfollowed
from workbench.templater.block_slots import slot_lift
from workbench.templater.block_table import (
    guarded_tables,
    row_offsets,
    table_constraints,
    table_tie,
    through_locals,
)
from workbench.templater.plan import Plan
from workbench.templater.reduce_tree import halving_update, tree_halving
from workbench.templater.regtile_blockdim import block_tie
from workbench.templater.rules import literal, scale_divisor
from workbench.templater.warp_shuffles import warp_collective


def _shared_arrays(plan: Plan) -> list[tuple[str, Node, list[Node]]]:
    """(name, declaration, extent nodes) of every ``__shared__`` array in the kernel."""
    out = []
    for d in plan.facts.defs.values():
        if not d.is_shared:
            continue
        extents: list[Node] = []
        node = d.decl.child_by_field_name("declarator")
        while node is not None and node.type == "array_declarator":
            size = node.child_by_field_name("size")
            if size is not None:
                extents.insert(0, size)
            node = node.child_by_field_name("declarator")
        out.append((d.name, d.decl, extents))
    return out


def _indexed_by_thread(plan: Plan, array: str, dim: str) -> bool:
    for n in walk(plan.body):
        if n.type == "subscript_expression" and text(n.child_by_field_name("argument")) == array:
            idx = n.child_by_field_name("indices")
            if idx is not None and plan.facts.mentions_thread(idx, dim):
                return True
    return False


def _start_literal(value: Node | None, half: int) -> Node | None:
    """The literal of a tree's start: ``half`` itself, or the block size B of ``B / 2`` /
    ``B >> 1`` written as a number (``128 / 2``) or a macro: the node the lift replaces."""
    if value is None:
        return None
    if int_value(value) == half:
        return strip(value)
    parts = binary(value)
    # a macro holding the block size reads as its literal (``BLOCK / 2``, the template
    # argument of an inlined block stage: :mod:`.inline_calls`)
    if parts is not None and strip(parts[0]).type in ("number_literal", "identifier") and \
            int_value(parts[0]) == 2 * half and (parts[1], int_value(parts[2])) in \
            (("/", 2), (">>", 1)):
        return strip(parts[0])
    return None


def _reduction_start(plan: Plan, loop: Node, half: int, dim: str) -> Node | None:
    """The literal starting ``for (s = half; s > 0; s >>= 1 | s /= 2)`` (``half`` or
    ``2 * half / 2``, declared in the loop or assigned there) with a ``threadIdx < s`` test
    in its body: the ``half`` literal, or the block size's of ``B / 2``."""
    init, update = loop.child_by_field_name("initializer"), loop.child_by_field_name("update")
    if init is None or update is None:
        return None
    if init.type == "declaration":
        var, _d, value = declared_name(init)
    elif init.type == "assignment_expression" and \
            text(init.child_by_field_name("operator")) == "=":
        var, value = text(init.child_by_field_name("left")), init.child_by_field_name("right")
    else:
        return None
    start = _start_literal(value, half)
    if start is None:
        return None
    op = text(update.child_by_field_name("operator"))
    if text(update.child_by_field_name("left")) != var or not (
            (op == ">>=" and int_value(update.child_by_field_name("right")) == 1) or
            (op == "/=" and int_value(update.child_by_field_name("right")) == 2)):
        return None
    body = loop.child_by_field_name("body")
    for n in walk(body) if body is not None else []:
        parts = binary(n)
        if parts and parts[1] == "<" and plan.facts.is_thread(parts[0], dim) and \
                text(strip(parts[2])) == var:
            return start
    return None


def _thread_compare(plan: Plan, values: set[int]) -> Node | None:
    """A comparison of a thread index with one of ``values`` written as a literal (a hidden
    block-size use; a macro's name follows the macro, :mod:`.macros`)."""
    for n in walk(plan.body):
        parts = binary(n)
        if parts and parts[1] in ("<", "<=", ">", ">=", "==", "!=") and any(
                plan.facts.is_thread(parts[0], d) for d in DIMS) and \
                strip(parts[2]).type == "number_literal" and int_value(parts[2]) in values:
            return n
    return None


def _governed(plan: Plan, dim: str,
              sizes: dict[str, int | None]) -> tuple[list[Node], list[Node]]:
    """(literal nodes meaning "block size", reduction-start literals meaning size / 2)."""
    size = sizes[dim]
    assert size is not None
    uses: list[Node] = []
    halves: list[Node] = []
    for n in walk(plan.body):
        if block_offset(n, dim) == size:
            parts = binary(n)
            assert parts is not None
            uses.append(parts[2] if builtin(parts[0], "blockIdx") == dim else parts[0])
        if n.type == "for_statement":
            uses += _stride_factor(plan, n, dim, sizes)
        if n.type == "for_statement" and dim == "x":
            start = _reduction_start(plan, n, size // 2, dim)
            if start is not None:
                (uses if int_value(start) == size else halves).append(start)
    tables = guarded_tables(plan)  # an extent its fill's guard gives, not the block
    for name, _decl, extents in _shared_arrays(plan):
        if len(extents) == 1 and int_value(extents[0]) == size and name not in tables and \
                _indexed_by_thread(plan, name, dim):
            uses.append(strip(extents[0]))
    return uses + row_offsets(plan, dim, size)[0], halves


def _stride_factor(plan: Plan, loop: Node, dim: str,
                   sizes: dict[str, int | None]) -> list[Node]:
    """The factor of a thread-stride loop's step (``for (t = tid; ..; t += STEP)``) that is
    the block's ``dim`` size. A flat index over a 2-D block (``threadIdx.y * TW +
    threadIdx.x``) steps by the block's thread count, one factor a dimension (``TW * TH``):
    x takes the first factor of its size and y the last other one of its size, so a square
    block's two factors follow BLOCK_X and BLOCK_Y, not BLOCK_X twice (a step missing either
    is read by neither); an index of x alone takes every factor of x's size as before."""
    update = loop.child_by_field_name("update")
    init = loop.child_by_field_name("initializer")
    if dim not in ("x", "y") or update is None or init is None or \
            text(update.child_by_field_name("operator")) != "+=" or \
            not plan.facts.mentions_thread(init, dim):
        return []
    step = update.child_by_field_name("right")
    found = [] if step is None else [strip(f) for f in _factors_of(step)]
    if not plan.facts.mentions_thread(init, "y" if dim == "x" else "x"):
        return [f for f in found if int_value(f) == sizes[dim]] if dim == "x" else []
    x = next((f for f in found if int_value(f) == sizes["x"]), None)
    y = next((f for f in reversed(found) if f is not x and int_value(f) == sizes.get("y")),
             None)
    if x is None or y is None:
        return []
    return [x if dim == "x" else y]


def _factors_of(node: Node) -> list[Node]:
    from workbench.templater.analysis import factors

    return factors(node)


def _look_alikes(plan: Plan, values: set[int], taken: list[Node]) -> list[Node]:
    spans = {(n.start_byte, n.end_byte) for n in taken}
    return [n for n in walk(plan.body) if n.type == "number_literal" and
            int_value(n) in values and (n.start_byte, n.end_byte) not in spans]


def lift_block(plan: Plan, keeps_grid: bool = False) -> dict[str, str]:
    """Lift each literal block dimension; returns dim -> parameter name for those lifted.
    ``keeps_grid``: the caller launches the grid as written whatever the block size (the
    reduction family's grid-stride loop covers any grid: :func:`.reduce_rewrite.
    lift_grid_blocks`), so a store of one element a block (``partial[blockIdx.x]``) keeps
    its count and does not refuse the lift. A macro equal to the block size (``#define
    BLOCK 256``, an inlined helper's template argument) whose uses follow the block is made
    to read BLOCK_THREADS by :func:`.macros.lift_macros`, so all its uses follow."""
    sizes = {DIMS[i]: literal(b) for i, b in enumerate(plan.block)}
    multi = sum(1 for s in sizes.values() if s is not None and s > 1) > 1 or len(plan.block) > 1
    lifted: dict[str, str] = {}
    claimed: list[Node] = []
    later: list[tuple[str, int]] = []
    for i, dim in enumerate(DIMS[:len(plan.block)]):
        size = sizes[dim]
        if size is None or size <= 1:
            continue
        name = f"BLOCK_{dim.upper()}" if multi else "BLOCK_THREADS"
        hidden = _thread_compare(plan, {size, size // 2})
        if hidden is not None:
            plan.note(name, False, f"`{text(hidden)}` compares the thread index with the block "
                      f"size (or half of it) outside a reduction loop; the dependency is not "
                      "modelled, so the block size stays as written", hidden)
            continue
        collective = warp_collective(plan) if dim == "x" and size <= 32 else None
        if collective is not None:
            plan.note(name, False, f"`{text(collective)[:50]}` combines the 32 lanes of a warp, "
                      f"which hold {32 // size} whole x row(s) of the block: another x size "
                      "regroups the threads it combines, which this lift does not model",
                      collective)
            continue
        uses, halves = _governed(plan, dim, sizes)
        unread = _unread_tree_start(plan, size, uses + halves)
        if unread is not None:
            plan.note(name, False, f"`{_context(unread)}` starts a halving loop from the literal "
                      f"{int_value(unread)} (the block size {size} or half of it) in a shape "
                      "the lift does not read as the block's tree; the block size stays as "
                      "written", unread)
            continue
        stray = _half_lifted_tile(plan, dim, sizes, uses + halves + claimed)
        if stray is not None:
            plan.note(name, False, f"`{_context(stray)}` keeps the literal {size} in a kernel "
                      f"whose shared array of {size} would follow the block: the tile would "
                      "be lifted without it, so the block size stays as written", stray)
            continue
        tie = block_tie(plan, dim) or table_tie(plan, dim, size, uses + halves)
        if tie is not None:
            plan.note(name, False, tie.reason, tie.node)
            continue
        tables = guarded_tables(plan)
        slots = slot_lift(plan, dim, size, [a for a in _shared_arrays(plan) if a[0] not in tables],
                          uses + halves + claimed, multi)
        if slots.refusal is not None:
            plan.note(name, False, slots.refusal[1], slots.refusal[0])
            continue
        reads_dim = any(builtin(n, "blockDim") == dim for n in walk(plan.body))
        crossed = _cross_grids(plan, dim, size)
        if isinstance(crossed, Node):
            plan.note(name, False, f"`{_context(crossed)}` offsets blocks by the block's {dim} "
                      f"size along another grid dimension, whose grid rule does not divide by "
                      f"{size}: the grid would not follow the block size, so it stays as "
                      "written", crossed)
            continue
        wrong = unfollowed(plan, dim, plan.grid[i], size) \
            if i < len(plan.grid) and i not in crossed and not keeps_grid else None
        if wrong is not None:
            plan.note(name, False, f"`{_context(wrong[0])}` {wrong[1]}, so it stays as written",
                      wrong[0])
            continue
        if not uses and not halves and not slots.ties and not reads_dim:
            plan.note(name, False, f"the block size {size} appears nowhere in the kernel and "
                      f"blockDim.{dim} is not read: the kernel does not say how its indexing "
                      "depends on the block size")
            continue
        for n in uses:
            plan.rw.replace(n, name)
        for n in halves:
            plan.rw.replace(n, f"({name} / 2)")
        for n, d in slots.ties:
            plan.rw.replace(n, f"({name} / {d})" if d > 1 else name)
        for most in slots.bounds:
            plan.constrain(f"{name} <= {most}")
        for d in sorted(slots.multiples):
            plan.constrain(f"{name} % {d} == 0")
        claimed += uses + halves + [m for n, _d in slots.ties for m in walk(n)
                                    if m.type == "number_literal"]
        later.append((name, size))
        plan.block[i] = name
        for g, rule in enumerate(plan.grid):
            new = _scaled(rule, size, name) if g in crossed else \
                scale_divisor(rule, str(size), name) if g == i else None
            plan.grid[g] = new if new is not None else rule
        if multi:
            plan.add_param(name, {"kind": "pow2", "min": 1 if dim != "x" else 4,
                                  "max": 1024 if dim == "x" else 64, "default": size,
                                  "description": f"threads per block along {dim} "
                                                 f"(as written: {size})"},
                           f"{line(plan.body)}: block {dim} = {size}")
        else:
            halving = halves or _halving_loop(plan, size) or \
                tree_halving(plan, size, frozenset(_block_macros(size)))
            if size % 32 == 0 and halving is None:
                spec: dict[str, object] = {"kind": "int", "min": 32, "max": 1024, "step": 32}
                why = "any multiple of 32"
            else:
                spec = {"kind": "pow2", "min": 32, "max": 1024}
                why = ("powers of two: the tree reduction at line "
                       f"{line(halving[0] if isinstance(halving, list) else halving)} halves "
                       "the block" if halving is not None else "powers of two")
            plan.add_param(name, {**spec, "default": size,
                                  "description": f"threads per block (as written: {size})"},
                           f"{line(plan.body)}: block = {size}")
            plan.note(name, True, f"block sizes: {why}")
        what = [f"{len(uses)} use(s)"] + ([f"{len(halves)} reduction start(s)"] if halves else []) \
            + ([f"{len(slots.ties)} shared slot count(s)"] if slots.ties else [])
        plan.note(name, True, f"block size {size} lifted with {', '.join(what)}")
        lifted[dim] = name
    for name, size in later:
        for other in _look_alikes(plan, {size}, claimed):
            plan.note(name, False, f"literal {size} in `{_context(other)}` is not governed "
                      "by the block size; left as written", other)
    if lifted and len(plan.block) > 1:  # a launch holds at most 1024 threads
        product = " * ".join(b for b in plan.block if literal(b) != 1)
        plan.constrain(f"{product} <= 1024")
    if len(lifted) > 1:
        plan.constrain(f"{' * '.join(lifted[d] for d in DIMS if d in lifted)} >= 32")
    for covered in table_constraints(plan, guarded_tables(plan)):
        plan.constrain(covered)
    if lifted:
        plan.launch_bounds = " * ".join(plan.block[i] for i in range(len(plan.block))
                                        if literal(plan.block[i]) != 1)
    return lifted


def _half_lifted_tile(plan: Plan, dim: str, sizes: dict[str, int | None],
                      taken: list[Node]) -> Node | None:
    """A literal block size the lift would leave as written (no use it governs in any
    dimension of that size) in a kernel where it lifts a shared array of that extent: a loop
    over the tile (``q < 128``) or a walk over tiles (``start += 128``) that would not
    follow the tile, wrong at every other size. None when no shared extent is lifted."""
    size = sizes[dim]
    assert size is not None
    extents = {(strip(e).start_byte, strip(e).end_byte)
               for _name, _decl, found in _shared_arrays(plan) for e in found}
    if not any((n.start_byte, n.end_byte) in extents for n in taken):
        return None
    governed: list[Node] = []
    for other, other_size in sizes.items():
        if other != dim and other_size == size:
            uses, halves = _governed(plan, other, sizes)
            governed += uses + halves
    stray = _look_alikes(plan, {size}, [*taken, *governed])
    return stray[0] if stray else None


def _cross_grids(plan: Plan, dim: str, size: int) -> set[int] | Node:
    """The grid dimensions whose blocks are offset by ``blockDim.dim`` times a linear block
    id over other dimensions: ``blockIdx.y * blockDim.x`` (each block's x extent is its y
    size) or a flattened grid's ``(blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x`` (the
    linear block id times the block size, its x included), whose grid rules then divide by
    the block size as written (``ceil_div(n, size)``, or a product holding it: ``ceil_div(n,
    64 * size)``, the grid's x times the block), so the grid follows the lifted size; a
    flattened dimension's literal rule is a fixed count of blocks that needs no change where
    another one follows. The offending node where a rule would not follow (neither divides
    by the size, or a rule that is no literal does not)."""
    out: set[int] = set()
    for n in walk(plan.body):
        fs = [through_locals(plan, f) for f in factors(n)] if n.type == "binary_expression" else []
        rest = [f for f in fs if builtin(f, "blockDim") != dim]
        flat = _linear_product(rest, plan) if len(rest) == len(fs) - 1 else set()
        if not flat or flat == {dim}:
            continue
        grids = {DIMS.index(g) for g in flat}
        follow = {g for g in grids if g < len(plan.grid) and
                  _scaled(plan.grid[g], size, "B") is not None}
        fixed = {g for g in grids if len(flat) > 1 and g < len(plan.grid) and
                 literal(plan.grid[g]) is not None}
        if not follow or grids - follow - fixed:
            return n
        out |= follow
    return out | row_offsets(plan, dim, size)[1]


def _linear_block_id(node: Node, plan: Plan) -> set[str]:
    """The grid dimensions of a linear block id (``blockIdx.y * gridDim.x + blockIdx.x``: a
    sum of block indices each times grid sizes, ``gridDim`` or literals; a local never
    assigned is read through its value), empty for anything else (a thread index, a size, a
    constant term)."""
    node = through_locals(plan, node)
    grid_dim = builtin(node, "blockIdx")
    if grid_dim is not None:
        return {grid_dim}
    parts = binary(node)
    if parts is not None and parts[1] == "+":
        left, right = _linear_block_id(parts[0], plan), _linear_block_id(parts[2], plan)
        return left | right if left and right else set()
    if parts is not None and parts[1] == "*":
        return _linear_product([through_locals(plan, f) for f in factors(node)], plan)
    return set()


def _linear_product(fs: list[Node], plan: Plan) -> set[str]:
    """The grid dimensions of a product of one linear block id and grid sizes (``gridDim``,
    literals), empty for any other product."""
    ids = [_linear_block_id(f, plan) for f in fs if builtin(f, "gridDim") is None and
           f.type != "number_literal"]
    return ids[0] if len(ids) == 1 else set()


def _scaled(rule: str, size: int, name: str) -> str | None:
    """``rule`` with its divisor ``size`` made ``name`` (:func:`.rules.scale_divisor`), or
    the factor ``size`` of a product divisor (``ceil_div(n, 64 * 256)``: the grid's x times
    the block); None where no divisor holds the size."""
    direct = scale_divisor(rule, str(size), name)
    if direct is not None:
        return direct
    for call in ast.walk(ast.parse(rule, mode="eval")):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and \
                call.func.id == "ceil_div" and len(call.args) == 2:
            factors = _product(call.args[1])
            at = next((i for i, f in enumerate(factors) if isinstance(f, ast.Constant) and
                       f.value == size), None)
            if at is not None and len(factors) > 1:
                new = [ast.unparse(f) for f in factors]
                new[at] = name
                return scale_divisor(rule, ast.unparse(call.args[1]), " * ".join(new))
    return None


def _product(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _product(node.left) + _product(node.right)
    return [node]


def _halving_loop(plan: Plan, size: int) -> Node | None:
    """A loop that halves a count starting from the block size (``s = blockDim.x / 2``,
    ``s = B / 2``, ``s >>= 1``): a tree over the block, correct for powers of two only."""
    for n in walk(plan.body):
        if n.type != "for_statement" and n.type != "while_statement":
            continue
        update = n.child_by_field_name("update")
        ops = [update] if update is not None else [
            m for m in walk(n) if m.type == "assignment_expression"]
        halves = any(text(u.child_by_field_name("operator")) in (">>=", "/=") and
                     int_value(u.child_by_field_name("right")) in (1, 2) for u in ops
                     if u.type == "assignment_expression")
        init = n.child_by_field_name("initializer")
        if halves and init is not None and any(
                builtin(m, "blockDim") == "x" or text(m) in _block_macros(size)
                for m in walk(init)):
            return n
    return None


def _unread_tree_start(plan: Plan, size: int, claimed: list[Node]) -> Node | None:
    """A number literal equal to ``size`` or ``size / 2`` in the start of a loop that halves
    its count (the ``for`` initializer, or the halved name's declaration) that ``claimed``
    does not hold: a tree start the lift would leave as written at other block sizes."""
    spans = {(n.start_byte, n.end_byte) for n in claimed}
    for n in walk(plan.body):
        if n.type not in ("for_statement", "while_statement", "do_statement"):
            continue
        update = n.child_by_field_name("update")
        steps = [update] if update is not None else [
            m for m in walk(n) if m.type == "assignment_expression"]
        halved = [text(u.child_by_field_name("left")) for u in steps
                  if u.type == "assignment_expression" and (
                      (text(u.child_by_field_name("operator")) in (">>=", "/=") and
                       int_value(u.child_by_field_name("right")) in (1, 2)) or
                      halving_update(u) is not None)]  # h = h / 2, h = h >> 1 too
        starts = [n.child_by_field_name("initializer")] + [
            d.decl for d in (plan.facts.defs.get(v) for v in halved) if d is not None]
        for start in (s for s in starts if s is not None and halved):
            for lit in walk(start):
                if lit.type == "number_literal" and int_value(lit) in (size, size // 2) and \
                        (lit.start_byte, lit.end_byte) not in spans:
                    return lit
    return None


def _block_macros(size: int) -> set[str]:
    """Names of integer macros equal to the launch block size (read as literals)."""
    from workbench.templater.analysis import _CONSTANTS

    values = _CONSTANTS.get() or {}
    return {k for k, v in values.items() if v == size}


def _context(node: Node) -> str:
    parent = node.parent
    while parent is not None and parent.type in ("number_literal", "binary_expression") and \
            parent.parent is not None and parent.parent.type == "binary_expression":
        parent = parent.parent
    return " ".join(text(parent if parent is not None else node).split())[:60]
