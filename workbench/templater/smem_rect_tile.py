"""The staged tile of a 2-D block spelled by two names (:mod:`.smem_rect`): a 1-D shared
array sized by its own named constant, stepping a walk over tiles, made the knob TILE. Filled
at the flat thread index (its size the block's threads, a tie), the store becomes a loop over
the tile by the block's threads, one trip as written; a fill that loops so already needs
nothing. The value stored must be free of effects and read the thread only through the
index (the tile's element whichever thread loads it)."""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
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
from workbench.templater.smem_rect_partials import steps_by


def _first_line(plan: Plan, name: str) -> int:
    uses = plan.uses(name)
    return uses[0].start_point.row + 1 if uses else 0


@dataclass(frozen=True)
class StagedTile:
    """A 1-D shared tile sized by its own named constant: ``name``, its value as written,
    and the statement storing its element at the flat thread index that becomes a loop over
    the tile (None: the author's fill loops over the tile by the block's threads already)."""

    name: str
    value: int
    fill: Node | None


def staged_tile(plan: Plan, names: dict[str, str], threads: int) -> StagedTile | None:
    """The 1-D shared array sized by another named constant than the block's, stepping a
    walk over tiles, stored once a thread: at the flat thread index (its value then the
    block's ``threads``) or in a loop from it over the tile by the block's threads; None
    where no shared extent is named otherwise."""
    dims = set(names.values())
    for array, _decl, extents in _shared_arrays(plan):
        named = {text(i) for e in extents for i in identifiers(e)} - dims
        if not named:
            continue
        if len(extents) != 1 or len(named) != 1:
            raise Refused(f"the shared array {array}'s extents name "
                          f"{', '.join(sorted(named))} beside the block's sizes")
        tile = named.pop()
        value = int_value(extents[0])
        if text(strip(extents[0])) != tile or value is None:
            raise Refused(f"the shared array {array}[{text(extents[0])}] is no tile of "
                          f"{tile} elements")
        if not any(steps_by(loop, tile) and "__syncthreads" in text(loop)
                   for loop in walk(plan.body) if loop.type == "for_statement"):
            raise Refused(f"{tile} sizes {array} but steps no walk over tiles (a loop "
                          f"`+= {tile}` with a barrier)")
        stores = [n for n in walk(plan.body) if n.type == "assignment_expression" and
                  (t := subscript(n.child_by_field_name("left"))) is not None  # type: ignore[arg-type]
                  and t[0] == array]
        if len(stores) != 1:
            raise Refused(f"{array} is stored {len(stores)} times, not once a thread")
        if _fill_loop(plan, stores[0], tile, names):
            return StagedTile(tile, value, None)
        if value != threads:
            raise Refused(f"the shared array {array}[{tile}] is no tile of the block's "
                          f"{threads} threads, nor filled by a loop over it")
        return StagedTile(tile, value, _fill(plan, array, stores[0], names))
    return None


def _fill_loop(plan: Plan, store: Node, tile: str, names: dict[str, str]) -> bool:
    """``store`` is the one statement of ``for (int v = flat; v < tile; v += NX * NY)``
    (the step ``blockDim.x * blockDim.y`` too; ``flat`` the flat thread index, or a local
    holding it), stores at ``v`` a thread-free value: the tile filled whatever its size."""
    stmt = store.parent
    loop = stmt.parent if stmt is not None else None
    if loop is not None and loop.type == "compound_statement" and loop.named_child_count == 1:
        loop = loop.parent
    if loop is None or loop.type != "for_statement":
        return False
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or init.type != "declaration" or cond is None or update is None:
        return False
    var, _d, start = declared_name(init)
    start = single_values(plan.body).get(text(start), start) if start is not None else None
    parts = binary(cond)
    target = subscript(store.child_by_field_name("left"))  # type: ignore[arg-type]
    step = update.child_by_field_name("right") \
        if update.type == "assignment_expression" and \
        text(update.child_by_field_name("operator")) == "+=" and \
        text(update.child_by_field_name("left")) == var else None
    value = store.child_by_field_name("right")
    return start is not None and flat_index(plan, start, names["x"]) and \
        parts is not None and parts[1] == "<" and text(strip(parts[0])) == var and \
        text(strip(parts[2])) == tile and target is not None and \
        text(target[1][0]) == var and step is not None and _all_threads(step, names) and \
        value is not None and side_effect_free(plan.source, value) and \
        _thread_value(plan, value, var) is None


def _all_threads(step: Node, names: dict[str, str]) -> bool:
    """``step`` is the block's thread count: ``NX * NY`` or ``blockDim.x * blockDim.y``
    (either order, a dimension by name or by blockDim)."""
    parts = binary(step)
    if parts is None or parts[1] != "*":
        return False
    seen = set()
    for f in (strip(parts[0]), strip(parts[2])):
        dim = builtin(f, "blockDim") or next((d for d, n in names.items() if text(f) == n), None)
        seen.add(dim)
    return seen == {"x", "y"}


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
            flat is None or not flat_index(plan, flat, names["x"]):
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


def flat_index(plan: Plan, value: Node, width: str) -> bool:
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


def lift_tile(plan: Plan, tile: StagedTile, param: str) -> None:
    """The tile its own knob: the fill a loop over the tile by the block's thread count."""
    name, stmt = tile.name, tile.fill
    for use in plan.uses(name):
        plan.rw.replace(use, param)
    plan.add_param(param, {"kind": "choice",
                           "values": sorted({128, 256, 512, 1024, tile.value}),
                           "default": tile.value,
                           "description": f"elements of the staged tile = {name} (as "
                                          f"written: {tile.value})"},
                   f"{_first_line(plan, name)}: {name}")
    if stmt is None:
        plan.note(param, True, f"{name} sizes the staged tile, which its fill loops over by "
                  "the block's threads")
        return
    store = stmt.named_children[0]
    index = text(subscript(store.child_by_field_name("left"))[1][0])  # type: ignore[arg-type,index]
    fresh = fresh_names(plan, [f"wb_{index}"])[f"wb_{index}"]
    for use in plan.uses(index):
        if stmt.start_byte <= use.start_byte < stmt.end_byte:
            plan.rw.replace(use, fresh)
    plan.rw.insert(stmt.start_byte, f"for (int {fresh} = {index}; {fresh} < {name}; "
                   f"{fresh} += blockDim.x * blockDim.y) ")
    plan.note(param, True, f"{name} sizes the staged tile: its fill at the flat thread index "
              "is a loop over the tile by the block's threads (one trip as written)", stmt)
