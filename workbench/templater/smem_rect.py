"""A 2-D block whose x and y sizes are two named constants, lifted with what they size.

:mod:`.smem_tiles` lifts a square block spelled by one macro. A kernel whose block is
``(32, 8)`` spells its sizes with two names (``#define STRIP 32``, ``#define ROWS_PER_PASS
8``; ``constexpr int``): a tiled transposed GEMV whose block owns a strip of columns, its
thread rows each summing every ``ROWS_PER_PASS``-th row of a column, the partial sums
added from ``part[ROWS_PER_PASS][STRIP + 1]``. Which name is which size is read from the
launch's literals and the names' uses, never from the names: ``blockIdx.x * STRIP`` (a
block offset), a loop from ``threadIdx.y`` stepping by ``ROWS_PER_PASS``, a flat index
``threadIdx.y * STRIP + threadIdx.x``, a shared array's extent at the position a thread
index subscripts. Each name then becomes ``BLOCK_X`` / ``BLOCK_Y`` with every use (the
block, the grid's divisor, the extents, the steps), as the square tile's macro does.

Legal only where the analysis shows it (else refused with the line, the block kept):

* the sizes are written with the names only (no literal of either size in the body), and
  each name's uses point at one block dimension;
* every ``blockIdx`` of a dimension the grid divides is offset by that dimension's name
  (or ``blockDim``), and that grid rule divides by the size as written;
* no warp collective (the lanes it combines are fixed by the block's shape), no literal
  but 0 and 1 beside a thread index (``tx & 31``, ``ty < 4``), no halving loop (a tree over
  the thread rows) starting from anything but a block size's name or blockDim;
* a loop bounded by a name that sums (``for (k = 0; k < ROWS; ++k) s += part[k][tx]``) adds
  the block's partial sums: it reads a shared array at ``k`` where every store writes
  ``[threadIdx.y]`` an accumulator whose terms come from loops starting at the thread index
  and stepping by the name (or ``blockDim``), so the rows are split among the thread rows
  and the sum is the same sum at every size (in another order); so does every shared array
  read across the threads of a dimension its extent is named by (a halving tree's
  ``part[ty + s][tx]``, whose steps add one slot to another);
* another named constant sizing a 1-D shared array (a staged tile ``xs[X_TILE]``, its
  value the block's thread count) is filled at the flat thread index by one store of a
  side-effect-free value: the store becomes a loop over the tile
  (``for (t' = t; t' < X_TILE; t' += blockDim.x * blockDim.y)``), one trip as written, and
  the tile its own knob ``TILE``; a tile so sized that is filled otherwise refuses the lift.

The partial sums' rules live in :mod:`.smem_rect_partials`, the staged tile's in
:mod:`.smem_rect_tile`.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import (
    LOOPS,
    binary,
    builtin,
    identifiers,
    int_value,
    single_values,
    strip,
    text,
    walk,
)
from workbench.templater.block import _shared_arrays
from workbench.templater.plan import Plan
from workbench.templater.reduce_tree import halving_update
from workbench.templater.regtile import Refused, fresh_names
from workbench.templater.rules import literal, scale_divisor
from workbench.templater.smem_rect_partials import (
    accesses,
    combined_partials,
    partials_fold,
    steps_by,
    summing_loops,
)
from workbench.templater.smem_rect_tile import StagedTile, lift_tile, staged_tile
from workbench.templater.warp_shuffles import warp_collective

_XY = ("x", "y")


def lift_rect_block(plan: Plan) -> None:
    """Lift a 2-D block spelled by two names (see the module doc); raises Refused with why
    not (the block then stays as written)."""
    sizes = [literal(b) for b in plan.block]
    if len(sizes) < 2 or any(s not in (None, 1) for s in sizes[2:]):
        raise Refused("the block has a third dimension")
    bx, by = sizes[0], sizes[1]
    if bx is None or by is None or bx < 2 or by < 2:
        raise Refused("the block's x and y sizes are not both literals above 1")
    names = _dim_names(plan, {"x": bx, "y": by})
    hidden = _thread_literal(plan)
    if hidden is not None:
        raise Refused(f"`{text(hidden)[:40]}` reads a thread index with a literal: a block "
                      "shape it may assume (a warp's lanes, half the block) is not modelled",
                      hidden)
    _tree_starts(plan, set(names.values()))
    collective = warp_collective(plan)
    if collective is not None:
        raise Refused(f"`{text(collective)[:40]}` combines the lanes of a warp, whose threads "
                      "the block's shape fixes", collective)
    params = fresh_names(plan, ["BLOCK_X", "BLOCK_Y", "TILE"])
    grid = _grid_rules(plan, names, {"x": bx, "y": by}, params)
    for loop in summing_loops(plan, set(names.values())):
        partials_fold(plan, loop, names)
    combined_partials(plan, names)
    tile = staged_tile(plan, names, bx * by)
    for dim, name in names.items():
        param = params[f"BLOCK_{dim.upper()}"]
        for use in plan.uses(name):
            plan.rw.replace(use, param)
    plan.block[:2] = [params["BLOCK_X"], params["BLOCK_Y"]]
    plan.grid[:len(grid)] = grid
    for dim, size in (("x", bx), ("y", by)):
        param = params[f"BLOCK_{dim.upper()}"]
        plan.add_param(param, {"kind": "pow2", "min": 4 if dim == "x" else 1,
                               "max": 256 if dim == "x" else 32, "default": size,
                               "description": f"threads per block along {dim} = "
                                              f"{names[dim]} (as written: {size})"},
                       f"{_line(plan, names[dim])}: {names[dim]} = block {dim}")
    plan.constrain(f"{params['BLOCK_X']} * {params['BLOCK_Y']} <= 1024")
    plan.constrain(f"{params['BLOCK_X']} * {params['BLOCK_Y']} >= 32")
    plan.launch_bounds = f"{params['BLOCK_X']} * {params['BLOCK_Y']}"
    if tile is not None:
        lift_tile(plan, tile, params["TILE"])
    smem = _smem_bytes(plan, params, names, tile)
    if smem is not None:
        plan.constrain(f"{smem} <= 49152")
    plan.note("BLOCK_X", True, f"{names['x']} sizes block x and {names['y']} block y: their "
              "uses (the grid's divisor, the shared extents, the steps) follow BLOCK_X and "
              "BLOCK_Y")


def _line(plan: Plan, name: str) -> int:
    uses = plan.uses(name)
    return uses[0].start_point.row + 1 if uses else 0


def _dim_names(plan: Plan, sizes: dict[str, int]) -> dict[str, str]:
    """dim -> the one named constant each block size is written with in the body, read by
    its uses (:func:`_roles`)."""
    for n in walk(plan.body):
        if n.type == "number_literal" and int_value(n) in sizes.values():
            raise Refused(f"the block size {int_value(n)} is also written as a literal "
                          f"(`{text(n.parent)[:40]}`): not one quantity by name", n)
    found: dict[str, str] = {}
    candidates = {text(n) for n in identifiers(plan.body)
                  if int_value(n) in sizes.values() and text(n) not in plan.facts.defs}
    for name in sorted(candidates):
        roles = _roles(plan, name)
        value = int_value(plan.uses(name)[0])
        fits = {d for d in roles if sizes[d] == value}
        if len(fits) != 1 or roles - fits:
            raise Refused(f"{name} = {value}: its uses "
                          + (f"point at block {' and '.join(sorted(roles))}" if roles else
                             "point at no block dimension (a block offset, a thread step, an "
                             "extent a thread index subscripts)"), plan.uses(name)[0])
        dim = fits.pop()
        if dim in found:
            raise Refused(f"{found[dim]} and {name} both size block {dim}", plan.uses(name)[0])
        found[dim] = name
    missing = [d for d in _XY if d not in found]
    if missing:
        raise Refused(f"no named constant spells block {missing[0]} = {sizes[missing[0]]}")
    return found


def _thread_literal(plan: Plan) -> Node | None:
    """A binary expression of a number other than 0 and 1 with a thread index, or a local
    holding one (``tx & 31``, ``ty < 4``, ``t / 32``), else None."""
    values = single_values(plan.body)

    def threaded(node: Node, depth: int = 0) -> bool:
        for n in walk(node):
            if any(plan.facts.is_thread(n, d) for d in ("x", "y", "z")):
                return True
            if n.type == "identifier" and text(n) in values and depth < 3 and \
                    threaded(values[text(n)], depth + 1):
                return True
        return False

    for n in walk(plan.body):
        parts = binary(n)
        if parts is None:
            continue
        for a, b in ((parts[0], parts[2]), (parts[2], parts[0])):
            if strip(a).type == "number_literal" and int_value(a) not in (0, 1) and \
                    threaded(b):
                return n
    return None


def _tree_starts(plan: Plan, names: set[str]) -> None:
    """Refuse a loop halving a count (``s >>= 1``, ``s /= 2``) whose start reads no block
    size (a name of one, or blockDim): a tree over the thread rows that would not follow."""
    for loop in walk(plan.body):
        if loop.type not in LOOPS:
            continue
        update = loop.child_by_field_name("update")
        steps = [update] if update is not None else [
            m for m in walk(loop) if m.type == "assignment_expression"]
        halved = {h for u in steps if u is not None and (h := halving_update(u)) is not None}
        if not halved:
            continue
        init = loop.child_by_field_name("initializer")
        starts = [init] if init is not None else []
        starts += [d.decl for v in halved if (d := plan.facts.defs.get(v)) is not None]
        if not any(text(n) in names or builtin(n, "blockDim") is not None
                   for s in starts for n in walk(s)):
            raise Refused(f"the loop at line {loop.start_point.row + 1} halves a count from "
                          "no block size", loop)


def _roles(plan: Plan, name: str) -> set[str]:
    """The block dimensions ``name``'s uses point at: ``blockIdx.d * name``, a loop from
    the thread index ``d`` stepping by ``name``, ``threadIdx.y * name + threadIdx.x`` (x),
    a shared extent holding ``name`` at the position a thread index ``d`` subscripts."""
    facts = plan.facts
    dims: set[str] = set()
    for n in walk(plan.body):
        parts = binary(n)
        if parts is not None and parts[1] == "*":
            for a, b in ((parts[0], parts[2]), (parts[2], parts[0])):
                if text(strip(b)) != name:
                    continue
                grid_dim = builtin(strip(a), "blockIdx")
                if grid_dim is not None:
                    dims.add(grid_dim)
                if facts.is_thread(a, "y") and _plus_thread_x(plan, n):
                    dims.add("x")
        if n.type == "for_statement":
            init = n.child_by_field_name("initializer")
            if init is not None and steps_by(n, name):
                starts = [d for d in _XY if facts.mentions_thread(init, d)]
                if len(starts) == 1:
                    dims.add(starts[0])
    for array, _decl, extents in _shared_arrays(plan):
        for pos, extent in enumerate(extents):
            if name not in {text(i) for i in identifiers(extent)}:
                continue
            for sub in accesses(plan, array, len(extents)):
                dims |= {d for d in _XY if facts.is_thread(sub[pos], d)}
    return dims


def _plus_thread_x(plan: Plan, product: Node) -> bool:
    """``product`` (``threadIdx.y * W``) is a term of a sum with ``threadIdx.x``."""
    up = product.parent
    while up is not None and up.type == "parenthesized_expression":
        up = up.parent
    parts = binary(up) if up is not None else None
    return parts is not None and parts[1] == "+" and any(
        plan.facts.is_thread(p, "x") for p in (parts[0], parts[2]))


def _grid_rules(plan: Plan, names: dict[str, str], sizes: dict[str, int],
                params: dict[str, str]) -> list[str]:
    """The grid rules with each block dimension's divisor made its parameter; every ``blockIdx.d`` of a launched grid
    dimension must be offset by the dimension's name or ``blockDim.d``."""
    out = list(plan.grid[:2])
    for g, rule in enumerate(out):
        dim = _XY[g]
        reads = [n for n in walk(plan.body) if builtin(n, "blockIdx") == dim]
        if not reads:
            if literal(rule) != 1:
                raise Refused(f"the grid's {dim} rule `{rule}` launches blocks the kernel "
                              f"does not tell apart (no blockIdx.{dim})")
            continue
        for read in reads:
            parts = binary(read.parent) if read.parent is not None else None
            other = None if parts is None or parts[1] != "*" else \
                parts[2] if strip(parts[0]) == read else parts[0]
            if other is None or (text(strip(other)) != names[dim] and
                                 builtin(strip(other), "blockDim") != dim):
                raise Refused(f"`{text(read.parent)[:40]}` does not offset blockIdx.{dim} by "
                              f"the block's {dim} size", read)
        new = scale_divisor(rule, str(sizes[dim]), params[f"BLOCK_{dim.upper()}"])
        if new is None:
            raise Refused(f"the grid's {dim} rule `{rule}` does not divide by the block's "
                          f"{dim} size {sizes[dim]}")
        out[g] = new
    return out


def _smem_bytes(plan: Plan, params: dict[str, str], names: dict[str, str],
                tile: StagedTile | None) -> str | None:
    """The static shared memory the arrays hold, as an expression of the parameters (their
    extents with the names made parameters), or None where an element size is unknown."""
    swap = {names["x"]: params["BLOCK_X"], names["y"]: params["BLOCK_Y"]}
    if tile is not None:
        swap[tile.name] = params["TILE"]
    terms = []
    for _array, decl, extents in _shared_arrays(plan):
        kind = text(decl.child_by_field_name("type"))
        size = {"float": 4, "int": 4, "unsigned": 4, "double": 8}.get(kind)
        if size is None:
            return None
        dims = []
        for e in extents:
            words = [swap.get(text(n), text(n)) if n.type == "identifier" else text(n)
                     for n in walk(e) if n.child_count == 0]
            if any(w not in swap.values() and not w.isdigit() and w not in "+-*()"
                   for w in words):
                return None
            dims.append(f"({' '.join(words)})")
        terms.append(f"{size} * {' * '.join(dims)}")
    return " + ".join(terms) if terms else None
