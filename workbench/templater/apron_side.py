"""Shared arrays beside the apron tile (:mod:`.apron`): a table every thread reads at the same
positions (a filter bank's taps), filled before the tile's barrier (issue 28: set 17's
corr7x7_bank4).

An array is a side array when every read of it after the barrier is at an index free of the
thread and the block (each output reads the same entries), it is not written after the
barrier, and its extents are compile-time sizes (they do not follow the block). Its fill is
kept as written, run for every flat thread index of the written block at any block shape:

- a loop over the flat thread index strided by the written block's threads, ``for (q = tid;
  q < N; q += BX * BY) s[q] = ..``, starts at the new flat index and strides by the new
  block's threads (the same indices ``q``, now by every block shape);
- any other statement that reads the thread only through one local holding the flat index
  (``if (tid < N) s[tid] = f[tid];``) runs once for each flat index the written block had,
  ``for (wb_s = tid; wb_s < BX * BY; wb_s += BLOCK_X * BLOCK_Y) { const int tid = wb_s;
  .. }``: with fewer threads than written each thread runs it for several indices, with
  more the extra threads for none. ``tid < N`` with N beyond a smaller block's threads is so
  still filled whole.

Either reads neither the tile, nor the block index, nor the thread but through that flat
index, and writes the side arrays only (its own loop counter besides).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import binary, builtin, strip, text, walk, write_target
from workbench.templater.apron_loads import Check, Deps, base_array, indices
from workbench.templater.plan import Plan
from workbench.templater.regtile import _ELEM, Refused

_THREAD = {"threadIdx.x", "threadIdx.y", "blockIdx.x", "blockIdx.y"}


@dataclass(frozen=True)
class Side:
    """A side array and the bytes it takes."""

    name: str
    decl: Node
    nbytes: int


@dataclass(frozen=True)
class SideFill:
    """One statement filling side arrays: its nodes that follow the block (key as in
    :class:`.apron_loads.Load`: FLAT the flat thread index, BXBY the block's threads), or
    the statement run once per written flat index through ``local`` (``wrap``)."""

    stmt: Node
    edits: tuple[tuple[Node, str], ...]
    local: str = ""
    threads: int = 0


def side_arrays(plan: Plan, arrays: list[tuple[str, Node, list[Node]]], post: list[Node],
                deps: Deps) -> list[Side]:
    """The shared arrays of ``arrays`` every output reads alike after the barrier, their
    extents compile-time sizes."""
    out = []
    for name, decl, extents in arrays:
        reads = [n for s in post for n in walk(s)
                 if n.type == "subscript_expression" and base_array(n) == name]
        polys = [deps.poly(e, []) for e in extents]
        ctype = text(decl.child_by_field_name("type"))
        if not reads or any(set(p) - {()} for p in polys) or ctype not in _ELEM:
            continue
        check = Check(deps, [], set(_THREAD))
        if any(check.bad(i) is not None for r in reads for i in indices(r)):
            continue
        count = 1
        for p in polys:
            count *= p.get((), 0)
        out.append(Side(name, decl, _ELEM[ctype] * count))
    return out


def side_fill(plan: Plan, stmt: Node, sides: list[Side], tile: str | frozenset[str], bx: int,
              by: int) -> SideFill | None:
    """How ``stmt`` (before the barrier) fills side arrays at any block shape; None when it
    writes none; Refused when it does in a way not modelled."""
    names = {s.name for s in sides}
    targets = [write_target(n) for n in walk(stmt)]
    if not any(base_array(t) in names for t in targets if t is not None):
        return None
    tiles = frozenset({tile}) if isinstance(tile, str) else tile
    touched = sorted({text(n) for n in walk(stmt) if n.type == "identifier"} & tiles)
    if touched:
        raise Refused(f"`{text(stmt)}` fills a shared table and touches the tile {touched[0]}",
                      stmt)
    flat: dict[tuple[str, ...], int] = {("threadIdx.y",): bx, ("threadIdx.x",): 1}
    deps = Deps(plan, set())
    if stmt.type == "for_statement":
        loop = _strided(stmt, deps, flat, bx * by)
        if loop is not None:
            var, start, step = loop
            _check_body(stmt, names, Deps(plan, {var}), {var})
            return SideFill(stmt, ((start, "FLAT"), (step, "BXBY")))
    locals_ = {text(n) for n in walk(stmt) if n.type == "identifier"
               and text(n) in deps.values and deps.poly(deps.values[text(n)], []) == flat}
    if len(locals_) != 1:
        raise Refused(f"`{text(stmt).splitlines()[0]}` fills a shared table but reads the thread "
                      "other than through one local holding its flat index (threadIdx.y * "
                      f"{bx} + threadIdx.x)", stmt)
    local = locals_.pop()
    _check_body(stmt, names, Deps(plan, {local}), set())
    return SideFill(stmt, ((deps.values[local], "FLAT"),), local, bx * by)


def wrap(fill: SideFill, body: str, new: dict[str, str]) -> str:
    """``body`` (the statement's text) run once per flat index of the written block."""
    return (f"for (int wb_s = {new['FLAT']}; wb_s < {fill.threads}; wb_s += {new['BXBY']}) "
            f"{{ const int {fill.local} = wb_s; {body} }}")


def _strided(loop: Node, deps: Deps, flat: dict[tuple[str, ...], int], threads: int
             ) -> tuple[str, Node, Node] | None:
    """(counter, start node, step node) of ``for (q = flat; q < N; q += threads)``."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or cond is None or update is None or init.type != "declaration" or \
            len(init.children_by_field_name("declarator")) != 1:
        return None
    d = init.children_by_field_name("declarator")[0]
    var, start = text(d.child_by_field_name("declarator")), d.child_by_field_name("value")
    parts = binary(cond)
    step = update.child_by_field_name("right") if update.type == "assignment_expression" \
        and text(update.child_by_field_name("operator")) == "+=" and \
        text(update.child_by_field_name("left")) == var else None
    if start is None or step is None or parts is None or parts[1] != "<" or \
            text(strip(parts[0])) != var or deps.poly(start, []) != flat or \
            deps.poly(step, []) != {(): threads} or set(deps.poly(parts[2], [])) - {()}:
        return None
    named = strip(start)
    if named.type == "identifier" and text(named) in deps.values:  # a `tid` local
        start = deps.values[text(named)]
    return var, start, strip(step)


def _check_body(stmt: Node, names: set[str], deps: Deps, own: set[str]) -> None:
    """``stmt`` reads neither the thread (but through the kept flat local) nor the block,
    and writes only the side arrays ``names`` and its own counters ``own``."""
    for n in walk(stmt):
        if n.type in ("assignment_expression", "update_expression"):
            t = write_target(n)
            if t is None or not (base_array(t) in names or text(strip(t)) in own):
                raise Refused(f"`{text(n)}` in a shared table's fill writes other than the "
                              "table", n)
    check = Check(deps, [], set(_THREAD))
    init = stmt.child_by_field_name("initializer") if stmt.type == "for_statement" else None
    for n in walk(stmt):
        if init is not None and init.start_byte <= n.start_byte < init.end_byte:
            continue  # the strided loop's start: the flat index, followed by the block
        direct = n.type == "field_expression" and any(
            builtin(n, b) is not None for b in ("threadIdx", "blockIdx", "blockDim"))
        if direct or (n.type == "identifier" and text(n) in deps.values
                      and check.bad(deps.values[text(n)]) is not None):
            raise Refused(f"`{text(n)}` in a shared table's fill reads the thread or the "
                          "block (each entry is filled by the same code at any block shape "
                          "only through the flat thread index)", n)
