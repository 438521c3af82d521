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
* no warp collective (the lanes it combines are fixed by the block's shape);
* a loop bounded by a name that sums (``for (k = 0; k < ROWS; ++k) s += part[k][tx]``) adds
  the block's partial sums: it reads a shared array at ``k`` where every store writes
  ``[threadIdx.y]`` an accumulator whose terms come from loops starting at the thread index
  and stepping by the name (or ``blockDim``), so the rows are split among the thread rows
  and the sum is the same sum at every size (in another order);
* another named constant sizing a 1-D shared array (a staged tile ``xs[X_TILE]``, its
  value the block's thread count) is filled at the flat thread index by one store of a
  side-effect-free value: the store becomes a loop over the tile
  (``for (t' = t; t' < X_TILE; t' += blockDim.x * blockDim.y)``), one trip as written, and
  the tile its own knob ``TILE``; a tile so sized that is filled otherwise refuses the lift.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import (
    LOOPS,
    binary,
    builtin,
    declared_name,
    identifiers,
    int_value,
    single_values,
    strip,
    text,
    walk,
)
from workbench.templater.block import _shared_arrays
from workbench.templater.plan import Plan
from workbench.templater.purity import side_effect_free
from workbench.templater.regtile import Refused, fresh_names, subscript
from workbench.templater.rules import literal, scale_divisor
from workbench.templater.warp_shuffles import warp_collective

_XY = ("x", "y")
#: The compound assignments that accumulate into a value (a loop holding one sums).
ACCUMULATE = ("+=", "-=", "*=", "|=", "^=", "&=")


def lift_rect_block(plan: Plan) -> Refused | None:
    """Lift a 2-D block spelled by two names (see the module doc); None where lifted, else
    why not (the block then stays as written)."""
    sizes = [literal(b) for b in plan.block]
    if len(sizes) < 2 or any(s not in (None, 1) for s in sizes[2:]):
        raise Refused("the block has a third dimension")
    bx, by = sizes[0], sizes[1]
    if bx is None or by is None or bx < 2 or by < 2:
        raise Refused("the block's x and y sizes are not both literals above 1")
    names = _dim_names(plan, {"x": bx, "y": by})
    collective = warp_collective(plan)
    if collective is not None:
        raise Refused(f"`{text(collective)[:40]}` combines the lanes of a warp, whose threads "
                      "the block's shape fixes", collective)
    params = fresh_names(plan, ["BLOCK_X", "BLOCK_Y", "TILE"])
    grid = _grid_rules(plan, names, {"x": bx, "y": by}, params)
    for loop in _summing_loops(plan, set(names.values())):
        _partials_fold(plan, loop, names)
    tile = _staged_tile(plan, names, bx * by)
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
        _lift_tile(plan, tile, params["TILE"], bx * by)
    smem = _smem_bytes(plan, params, names, tile)
    if smem is not None:
        plan.constrain(f"{smem} <= 49152")
    plan.note("BLOCK_X", True, f"{names['x']} sizes block x and {names['y']} block y: their "
              "uses (the grid's divisor, the shared extents, the steps) follow BLOCK_X and "
              "BLOCK_Y")
    return None


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
            if init is not None and _steps_by(n, name):
                starts = [d for d in _XY if facts.mentions_thread(init, d)]
                if len(starts) == 1:
                    dims.add(starts[0])
    for array, _decl, extents in _shared_arrays(plan):
        for pos, extent in enumerate(extents):
            if name not in {text(i) for i in identifiers(extent)}:
                continue
            for sub in _accesses(plan, array, len(extents)):
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


def _accesses(plan: Plan, array: str, rank: int) -> list[list[Node]]:
    """The index lists of every full subscript of ``array`` in the body."""
    out = []
    for n in walk(plan.body):
        if n.type == "subscript_expression" and (n.parent is None or
                                                 n.parent.type != "subscript_expression"):
            read = subscript(n)
            if read is not None and read[0] == array and len(read[1]) == rank:
                out.append(read[1])
    return out


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


def _summing_loops(plan: Plan, names: set[str]) -> list[Node]:
    """Loops bounded by one of ``names`` that accumulate (``s += ..``)."""
    out = []
    for loop in walk(plan.body):
        cond = loop.child_by_field_name("condition") if loop.type == "for_statement" else None
        body = loop.child_by_field_name("body")
        if cond is None or body is None or not names & {text(n) for n in identifiers(cond)}:
            continue
        if any(n.type == "assignment_expression" and
               text(n.child_by_field_name("operator")) in ACCUMULATE
               for n in walk(body)):
            out.append(loop)
    return out


def _partials_fold(plan: Plan, loop: Node, names: dict[str, str]) -> None:
    """Refuse unless ``loop`` (``for (k = 0; k < N; ++k) s += part[k][tx]``) adds the
    block's partial sums: N a dimension's name, ``part`` shared, read at ``k`` in the
    position of that dimension, every store to it writing there the thread index an
    accumulator whose every update adds terms in a loop from the thread index stepping by
    the name (or ``blockDim``): the rows split among the threads, the total the same."""
    init = loop.child_by_field_name("initializer")
    cond = binary(loop.child_by_field_name("condition"))  # type: ignore[arg-type]
    var = declared_name(init)[0] if init is not None and init.type == "declaration" else ""
    dim = next((d for d, n in names.items() if cond is not None and cond[1] == "<" and
                text(strip(cond[0])) == var and text(strip(cond[2])) == n), None)
    body = loop.child_by_field_name("body")
    why = f"`{text(loop.child_by_field_name('condition'))}` sums over a block size's name"
    if dim is None or body is None:
        raise Refused(f"{why}, not as a count of the block's partial sums", loop)
    shared = {a: len(e) for a, _d, e in _shared_arrays(plan)}
    for n in walk(body):
        if n.type != "assignment_expression" or \
                text(n.child_by_field_name("operator")) not in ACCUMULATE:
            continue
        if text(n.child_by_field_name("operator")) != "+=":
            raise Refused(f"{why}, combining them by other than +=", n)
        reads = [r for r in walk(n.child_by_field_name("right"))  # type: ignore[arg-type]
                 if r.type == "subscript_expression" and r.parent is not None and
                 r.parent.type != "subscript_expression"]
        if len(reads) != 1 or (read := subscript(reads[0])) is None or \
                read[0] not in shared or text(strip(reads[0])) != text(
                    strip(n.child_by_field_name("right"))):  # type: ignore[arg-type]
            raise Refused(f"{why}, adding no one shared partial sum", n)
        positions = [i for i, idx in enumerate(read[1]) if text(idx) == var]
        if len(positions) != 1:
            raise Refused(f"{why}, not reading the partial sums at {var}", n)
        _stored_partials(plan, read[0], shared[read[0]], positions[0], dim, names[dim])


def _stored_partials(plan: Plan, array: str, rank: int, pos: int, dim: str,
                     name: str) -> None:
    """Every store to ``array`` writes at ``pos`` the thread index ``dim`` a local whose
    updates all add in a loop from that thread index stepping by ``name`` or blockDim."""
    stores = [n for n in walk(plan.body) if n.type == "assignment_expression" and
              (t := subscript(n.child_by_field_name("left"))) is not None and  # type: ignore[arg-type]
              t[0] == array]
    if not stores:
        raise Refused(f"{array}'s partial sums are never stored")
    for store in stores:
        target = subscript(store.child_by_field_name("left"))  # type: ignore[arg-type]
        assert target is not None
        value = strip(store.child_by_field_name("right"))  # type: ignore[arg-type]
        if text(store.child_by_field_name("operator")) != "=" or \
                not plan.facts.is_thread(target[1][pos], dim) or value.type != "identifier":
            raise Refused(f"`{text(store)[:50]}` stores no thread's partial sum at its "
                          f"thread index {dim}", store)
        _split_accumulator(plan, text(value), dim, name)


def _split_accumulator(plan: Plan, acc: str, dim: str, name: str) -> None:
    """Every write of ``acc`` adds inside a loop from the thread index ``dim`` stepping by
    ``name`` or ``blockDim.dim`` (its declaration starts it at zero)."""
    d = plan.facts.defs.get(acc)
    if d is None or d.value is None or not _zero(d.value):
        raise Refused(f"{acc} does not start at zero", d.decl if d else None)
    for n in walk(plan.body):
        if n.type not in ("assignment_expression", "update_expression") or \
                text(strip(n.child_by_field_name("left") or  # type: ignore[arg-type]
                           n.child_by_field_name("argument"))) != acc:
            continue
        if n.type != "assignment_expression" or \
                text(n.child_by_field_name("operator")) != "+=" or \
                not _in_thread_stride(plan, n, dim, name):
            raise Refused(f"`{text(n)[:50]}`: {acc} is not a sum of a loop the thread rows "
                          "split", n)


def _zero(value: Node) -> bool:
    """``0``, ``0.0f``, ``0.``: a literal zero."""
    value = strip(value)
    try:
        return value.type == "number_literal" and float(text(value).rstrip("fFuUlL")) == 0
    except ValueError:
        return False


def _in_thread_stride(plan: Plan, node: Node, dim: str, name: str) -> bool:
    up = node.parent
    while up is not None and up != plan.body:
        if up.type == "for_statement":
            init, update = up.child_by_field_name("initializer"), up.child_by_field_name("update")
            step = update.child_by_field_name("right") if update is not None and \
                update.type == "assignment_expression" and \
                text(update.child_by_field_name("operator")) == "+=" else None
            if init is not None and step is not None and init.type == "declaration" and \
                    plan.facts.is_thread(declared_name(init)[2] or init, dim) and \
                    (text(strip(step)) == name or builtin(strip(step), "blockDim") == dim):
                return True
        elif up.type in LOOPS:
            return False
        up = up.parent
    return False


def _staged_tile(plan: Plan, names: dict[str, str], threads: int) -> tuple[str, Node] | None:
    """(the tile's name, its one store) of a 1-D shared array sized by another named
    constant of ``threads`` (the block's thread count) and filled at the flat thread index
    by one store; None where no shared extent is named otherwise."""
    dims = set(names.values())
    for array, _decl, extents in _shared_arrays(plan):
        named = {text(i) for e in extents for i in identifiers(e)} - dims
        if not named:
            continue
        if len(extents) != 1 or len(named) != 1:
            raise Refused(f"the shared array {array}'s extents name "
                          f"{', '.join(sorted(named))} beside the block's sizes")
        tile = named.pop()
        if text(strip(extents[0])) != tile or int_value(extents[0]) != threads:
            raise Refused(f"the shared array {array}[{text(extents[0])}] is no tile of the "
                          f"block's {threads} threads")
        if not any(_steps_by(loop, tile) and "__syncthreads" in text(loop)
                   for loop in walk(plan.body) if loop.type == "for_statement"):
            raise Refused(f"{tile} sizes {array} but steps no walk over tiles (a loop "
                          f"`+= {tile}` with a barrier)")
        stores = [n for n in walk(plan.body) if n.type == "assignment_expression" and
                  (t := subscript(n.child_by_field_name("left"))) is not None  # type: ignore[arg-type]
                  and t[0] == array]
        if len(stores) != 1:
            raise Refused(f"{array} is stored {len(stores)} times, not once a thread")
        return tile, _fill(plan, array, stores[0], names)
    return None


def _steps_by(loop: Node, name: str) -> bool:
    """``loop``'s update is ``v += name``."""
    update = loop.child_by_field_name("update")
    return update is not None and update.type == "assignment_expression" and \
        text(update.child_by_field_name("operator")) == "+=" and \
        text(strip(update.child_by_field_name("right"))) == name  # type: ignore[arg-type]


def _fill(plan: Plan, array: str, store: Node, names: dict[str, str]) -> Node:
    """The statement of ``store`` (``xs[t] = v;``, ``t`` a local of the flat thread index
    read nowhere else, ``v`` free of effects, the statement in a block): refused else."""
    stmt = store.parent
    target = subscript(store.child_by_field_name("left"))  # type: ignore[arg-type]
    assert target is not None
    index = target[1][0]
    value = store.child_by_field_name("right")
    flat = single_values(plan.body).get(text(index))
    where = f"`{text(store)[:50]}`"
    if stmt is None or stmt.type != "expression_statement" or stmt.parent is None or \
            stmt.parent.type != "compound_statement" or index.type != "identifier" or \
            flat is None or not _flat_index(plan, flat, names["x"]):
        raise Refused(f"{where} fills {array} at no local holding the flat thread index "
                      "(threadIdx.y * width + threadIdx.x), as a statement of its own", store)
    if value is None or not side_effect_free(plan.source, value):
        raise Refused(f"{where}: the value stored has effects", store)
    private = _thread_value(plan, value, text(index))
    if private is not None:
        raise Refused(f"{where}: the value stored reads `{text(private)}`, a thread's own "
                      f"value beside {text(index)}: a longer tile would repeat it", private)
    elsewhere = [u for u in plan.uses(text(index)) if not (
        stmt.start_byte <= u.start_byte < stmt.end_byte) and u.parent is not None and
        u.parent.type != "init_declarator"]
    if elsewhere:
        raise Refused(f"{text(index)} is read beside the fill of {array} "
                      f"(`{text(elsewhere[0].parent)[:40]}`)", elsewhere[0])
    return stmt


def _thread_value(plan: Plan, value: Node, index: str) -> Node | None:
    """A name ``value`` reads that depends on the thread other than through ``index``: a
    thread or block index, or a local whose declaration reads one; None where it reads the
    index, parameters, constants and thread-free locals only (the tile's element at any
    index, whichever thread loads it)."""
    for n in walk(value):
        if builtin(n, "threadIdx") is not None:
            return n
        if n.type != "identifier" or text(n) == index:
            continue
        d = plan.facts.defs.get(text(n))
        if any(plan.facts.is_thread(n, dim) for dim in ("x", "y", "z")) or (
                d is not None and (d.value is None or any(
                    plan.facts.mentions_thread(d.value, dim) for dim in ("x", "y", "z")))):
            return n
    return None


def _flat_index(plan: Plan, value: Node, width: str) -> bool:
    """``threadIdx.y * W + threadIdx.x`` (either order), W ``width`` or ``blockDim.x``."""
    parts = binary(value)
    if parts is None or parts[1] != "+":
        return False
    for a, b in ((parts[0], parts[2]), (parts[2], parts[0])):
        prod = binary(a)
        if plan.facts.is_thread(b, "x") and prod is not None and prod[1] == "*" and any(
                plan.facts.is_thread(y, "y") and (text(strip(w)) == width or
                                                 builtin(strip(w), "blockDim") == "x")
                for y, w in ((prod[0], prod[2]), (prod[2], prod[0]))):
            return True
    return False


def _lift_tile(plan: Plan, tile: tuple[str, Node], param: str, threads: int) -> None:
    """The tile its own knob: the fill a loop over the tile by the block's thread count."""
    name, stmt = tile
    store = stmt.named_children[0]
    index = text(subscript(store.child_by_field_name("left"))[1][0])  # type: ignore[arg-type,index]
    fresh = fresh_names(plan, [f"wb_{index}"])[f"wb_{index}"]
    for use in plan.uses(index):
        if stmt.start_byte <= use.start_byte < stmt.end_byte:
            plan.rw.replace(use, fresh)
    plan.rw.insert(stmt.start_byte, f"for (int {fresh} = {index}; {fresh} < {name}; "
                   f"{fresh} += blockDim.x * blockDim.y) ")
    for use in plan.uses(name):
        plan.rw.replace(use, param)
    plan.add_param(param, {"kind": "choice", "values": sorted({128, 256, 512, 1024, threads}),
                           "default": threads,
                           "description": f"elements of the staged tile = {name} (as "
                                          f"written: {threads}, the block's threads)"},
                   f"{stmt.start_point.row + 1}: {name}")
    plan.note(param, True, f"{name} sizes the staged tile: its fill at the flat thread index "
              "is a loop over the tile by the block's threads (one trip as written)", stmt)


def _smem_bytes(plan: Plan, params: dict[str, str], names: dict[str, str],
                tile: tuple[str, Node] | None) -> str | None:
    """The static shared memory the arrays hold, as an expression of the parameters (their
    extents with the names made parameters), or None where an element size is unknown."""
    swap = {names["x"]: params["BLOCK_X"], names["y"]: params["BLOCK_Y"]}
    if tile is not None:
        swap[tile[0]] = params["TILE"]
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
