"""Apron tiles: outputs per thread over a shared tile with a halo, the block apart from it.

Recognised by roles, not by one spelling: a 2-D launch block of literal sizes ``(BX, BY)``;
one ``__shared__`` 2-D array ``[EY][EX]`` (a flat one indexed by hand is read as rows before
the analysis, :mod:`.apron_flat`), or several of one geometry (the same compile-time
extents: ``ta``, ``tb`` of two images, each stored once by the same load nest or by sibling
nests of one shape, all sized, padded, loaded and read alike, each with its own register
window), beside them only tables every output reads alike, filled as
written (:mod:`.apron_side`: a filter bank); before the one top-level ``__syncthreads()``
only declarations, the tables' fills and a load nest ``for (py = threadIdx.y; py < LY; py += BY) for (px =
threadIdx.x; px < LX; px += BX) tile[py][px] = V;`` (either loop outside, braces and locals
optional, the outer loop's single-assignment locals before the inner loop); after it the
per-point work. The halo is ``H = L - B`` per dimension, the
author's padding ``E - L``. Legal when (checked on integer polynomials of the expressions,
single-assignment locals expanded, clamps and guards included):

- the loaded value ``V`` depends on the tile position and the block only through the
  global position ``blockIdx.d * B + p`` and reads no thread index, so the tile holds the
  same function of the global position at any tile size;
- the work after the barrier depends on the thread and the block only through the global
  point ``blockIdx.d * B + threadIdx.d``, and reads the tile only at ``[threadIdx.y + a][
  threadIdx.x + b]`` with ``a``, ``b`` free of the thread and the block;
- every ``blockIdx`` is a ``blockIdx.d * B`` tile offset and the block sizes are used
  nowhere else before the barrier (``blockDim.d`` reads as the written size B, and nowhere
  after it; a number equal to B in the work is only a number, the point check above ties
  the work to the block; no ``gridDim``, z index, second barrier or early return in a
  loop).

The rewrite: the block is ``(BLOCK_X, BLOCK_Y)``, the tile ``BLOCK_Y * OUT_Y + HY`` by
``BLOCK_X * OUT_X + HX (+ PAD)``, the load loops stride by the block over the new extents,
the tile offsets become ``blockIdx.d * (BLOCK_D * OUT_D)`` and the grid's divisors follow;
the work after the barrier runs once per output of the thread (rows ``threadIdx.y * OUT_Y +
oy``, columns ``threadIdx.x + ox * BLOCK_X``) with the thread's index locals re-declared for
that output and an early ``return`` made ``continue``; the columns are the outer loop, so a
column's OUT_Y rows read each tile row once from a register window where the reads allow it
(ROW_REUSE, :mod:`.apron_window`). Each output is computed by the same code from the same
tile values, so every config gives the kernel's results; the defaults are the kernel as
written. Where the window's weights factor exactly, SEPARABLE 1 shares the window rows'
horizontal sums between a thread's rows (:mod:`.apron_separable`: the float additions in
another order, within the folder's tolerances); where the taps are unit-weight sums of terms
(``s += v; ss += v * v;``, several tiles too), ROW_SUMS 1 does the same for every sum
(:mod:`.apron_rowsums`). Anything else is refused with the reason and the line.

A tile stored by per-thread branches (the point, then the halo under ``if``s on the thread
index) is read as one function of the global position (:mod:`.apron_branches`) and filled by
one nest; such a tile, and one loaded by one nest whose value reads only elements of kernel
arguments the kernel never writes nor passes on (:func:`.apron_loads.nest_load`) with no side
tables beside it, also gets USE_SMEM (1: staged, as written; 0: every tile read, the row
window's too, reads that function at its position straight from the source; no barrier
unless side tables are filled, no LOAD_FLAT).

Where the tile's value carries a bounds test of its position (``(y >= 0 && y < ny && ...) ?
u[...] : 0``), INTERIOR 1 tests it once per block at the tile's worst corners and runs the
load and the work without the per-load tests in blocks whose tile lies inside the grid
(:mod:`.apron_interior`).
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from workbench.templater import apron_interior as interior
from workbench.templater.analysis import (
    binary,
    builtin,
    in_lambda,
    int_value,
    line,
    strip,
    text,
    walk,
    write_target,
)
from workbench.templater.apron_branches import branch_load
from workbench.templater.apron_facts import ApronFacts
from workbench.templater.apron_hoist import hoisted
from workbench.templater.apron_loads import (
    Check,
    Deps,
    Load,
    Pair,
    base_array,
    flat_load,
    indices,
    is_flat,
    nest_load,
)
from workbench.templater.apron_reuse import register_window, tapped_test, window_name, window_values
from workbench.templater.apron_side import SideFill, side_arrays, side_fill, wrap
from workbench.templater.apron_window import Window, analyse_window
from workbench.templater.block import _shared_arrays
from workbench.templater.plan import Plan
from workbench.templater.regtile import (
    _ELEM,
    _MAX_SMEM,
    Refused,
    _is_sync,
    _locals,
    apply_or_note,
    fresh_names,
    render,
)
from workbench.templater.rewrite import Rewriter
from workbench.templater.rules import literal, scale_divisor
from workbench.templater.stencil import derivative, statements
from workbench.templater.warp_regs import _min_blocks_follows

KNOB = "OUT_XY"
OUT_X_VALUES = [1, 2, 4]
OUT_Y_VALUES = [1, 2, 4, 8]
#: Registers a source-read window's thread needs besides the window's values (indices,
#: bounds, the outputs' sums): wave2d_o4 at OUT_Y = 8 (44 values read) took 64 registers
#: under a 64-register cap without spilling, ptxas -v, sm_90.
WINDOW_WORKING_REGS = 16
_LOOPS = ("for_statement", "while_statement", "do_statement", "switch_statement")


def lift_apron(plan: Plan) -> bool:
    """OUT_X x OUT_Y outputs per thread over an apron tile, the block apart from the tile;
    False when the kernel is not of the family or the analysis refused (noted)."""
    if len(plan.block) != 2 or any(literal(b) is None for b in plan.block):
        return False
    tiles = [(n, d, e) for n, d, e in _shared_arrays(plan) if len(e) == 2]
    syncs = [s for s in statements(plan.body) if _is_sync(s)]
    if syncs and not tiles:
        _note_flat_tile(plan)
    if not tiles or not syncs:
        return False
    return apply_or_note(plan, KNOB, lambda: _analyse(plan))


def _note_flat_tile(plan: Plan) -> None:
    """Name a one-dimensional shared tile read at both thread coordinates (``tile[(ty + dy)
    * AW + tx + dx]`` over ``tile[AH * AW]``): an apron tile spelled by hand, which the
    family reads only as a 2-D array."""
    arrays = _shared_arrays(plan)
    for name, decl, extents in arrays:
        reads = [n for n in walk(plan.body) if n.type == "subscript_expression"
                 and text(n.child_by_field_name("argument")) == name
                 and not (n.parent is not None and n.parent.type == "assignment_expression"
                          and n.parent.child_by_field_name("left") == n)
                 and all(any(builtin(m, "threadIdx") == d for m in walk(n)) for d in "xy")]
        parts = binary(strip(extents[0])) if len(extents) == 1 else None
        if not reads or parts is None or parts[1] != "*":
            continue
        others = ", ".join(f"{o}[{']['.join(text(e) for e in oe)}] (line "
                           f"{od.start_point.row + 1})" for o, od, oe in arrays if o != name)
        plan.note(KNOB, False, f"the shared tile {name}[{text(extents[0])}] is one array "
                  f"indexed by hand (`{text(reads[0])}`): the apron tile is read as a 2-D array "
                  "[rows][columns]" + (f"; the kernel also shares {others}: one apron tile is "
                                       "modelled" if others else ""), decl)


def _analyse(plan: Plan) -> Callable[[], None] | None:
    bx, by = (literal(b) or 0 for b in plan.block)
    sizes = {"x": bx, "y": by}
    arrays = _shared_arrays(plan)
    stmts = statements(plan.body)
    syncs = [k for k, s in enumerate(stmts) if _is_sync(s)]
    all_syncs = [n for n in walk(plan.body) if n.type == "call_expression"
                 and text(n.child_by_field_name("function")) == "__syncthreads"]
    if len(syncs) != 1 or len(all_syncs) != 1:
        raise Refused("the kernel has more than one barrier (one tile load, then the work, "
                      "is modelled)", all_syncs[-1])
    for n in walk(plan.body):
        if builtin(n, "gridDim") is not None and n.type == "field_expression":
            raise Refused(f"`{text(n)}`: the grid follows the outputs per thread, so the "
                          "kernel must not read its size", n)
        for name in ("threadIdx", "blockIdx"):
            if builtin(n, name) == "z" and n.type == "field_expression":
                raise Refused(f"`{text(n)}`: a z index is not modelled", n)
    pre, post = stmts[:syncs[0]], stmts[syncs[0] + 1:]
    if not post:
        return None
    locals_ = _locals(plan.body)
    keep: set[str] = set()
    deps = Deps(plan, keep)
    # -- the tile, and the tables every output reads alike (filled as written) --------------
    sides = side_arrays(plan, arrays, post, deps)
    rest = [a for a in arrays if a[0] not in {sd.name for sd in sides}]
    if not rest or any(len(es) != 2 for _n, _d, es in rest):
        named = ", ".join(f"{n}[{']['.join(text(e) for e in es)}] (line "
                          f"{d.start_point.row + 1})" for n, d, es in rest)
        raise Refused(f"{len(rest)} shared arrays read at the thread's point ({named}): 2-D "
                      "apron tiles are modelled", (rest[-1] if rest else arrays[0])[1])
    tile, tdecl, extents = rest[0]
    others = _siblings(deps, rest)
    tiles = frozenset(n for n, _d, _e in rest)
    ctype = text(tdecl.child_by_field_name("type"))
    elem = _ELEM.get(ctype)
    if elem is None:
        raise Refused(f"the tile's element type `{ctype}` has no known size", tdecl)
    fills = [f for st in pre if (f := side_fill(plan, st, sides, tiles, bx, by)) is not None]
    pre = [st for st in pre if st not in {f.stmt for f in fills}]
    # -- the load phase: declarations and the load nest -------------------------------------
    loads: list[Load] = []
    branches = [s for s in pre if s.type not in ("declaration", "for_statement")]
    if branches:  # per-thread stores of the point and its halo: one nest over the tile
        if others:
            raise Refused(f"the tiles {', '.join(sorted(tiles))} are stored by per-thread "
                          "branches: one tile so stored is modelled", branches[0])
        if any(s.type == "for_statement" for s in pre):
            raise Refused("the tile is loaded by both loops and per-thread stores (one "
                          "spelling is modelled)", branches[0])
        ey_, ex_ = (deps.poly(e, []) for e in extents)
        if set(ey_) - {()} or set(ex_) - {()}:
            raise Refused(f"the tile {tile}'s extents are not compile-time sizes", tdecl)
        loads.append(branch_load(plan, branches, tile, sizes, deps,
                                 (ey_.get((), 0), ex_.get((), 0))))
    for s in pre:
        if s.type != "for_statement" or branches:
            continue
        loads.append(flat_load(plan, s, tiles, sizes) if is_flat(s, deps, bx)
                     else nest_load(plan, s, tiles, sizes, deps))
    if not loads:
        raise Refused(f"no loop strided by the block loads the tile {tile} before the barrier",
                      stmts[syncs[0]])
    unloaded = sorted(tiles - {t for ld in loads for t in ld.tiles}) if others else []
    if unloaded:
        raise Refused(f"the tile {unloaded[0]} is not stored by a load nest strided by the "
                      "block (tiles of one geometry are loaded by the same nest or by "
                      "sibling nests of one shape)", stmts[syncs[0]])
    load_y = {ld.extent_y for ld in loads}
    load_x = {ld.extent_x for ld in loads}
    ey, ex = (deps.poly(e, []) for e in extents)
    if len(load_y) != 1 or len(load_x) != 1 or set(ey) - {()} or set(ex) - {()}:
        raise Refused(f"the tile {tile}'s loads do not cover one compile-time extent", tdecl)
    ly, lx = load_y.pop(), load_x.pop()
    hy, hx = ly - by, lx - bx
    pad = ex.get((), 0) - lx
    if hy < 0 or hx < 0 or ey.get((), 0) != ly or not 0 <= pad <= 1:
        raise Refused(f"the tile {tile}[{text(extents[0])}][{text(extents[1])}] is not the "
                      f"block ({bx} x {by}) plus a halo, loaded whole", tdecl)
    # -- the work after the barrier ---------------------------------------------------------
    tile_reads: list[Node] = []

    def tile_index(sub: Node) -> Node | None:
        idx = indices(sub)
        if len(idx) != 2:
            return sub
        for k, (dim, other) in enumerate((("y", "x"), ("x", "y"))):
            opaque: list[Node] = []
            p = deps.poly(idx[k], opaque)
            if derivative(p, f"threadIdx.{dim}") != {(): 1} or \
                    derivative(p, f"threadIdx.{other}") or derivative(p, "blockIdx.x") or \
                    derivative(p, "blockIdx.y"):
                return idx[k]
            inner = Check(deps, [], {"threadIdx.x", "threadIdx.y", "blockIdx.x", "blockIdx.y"})
            for o in opaque:
                for child in o.named_children:
                    bad = inner.bad(child)
                    if bad is not None:
                        return bad
        tile_reads.append(sub)
        return None

    work = Check(deps, [Pair("threadIdx.y", "blockIdx.y", by),
                         Pair("threadIdx.x", "blockIdx.x", bx)], set(), tiles, tile_index)
    # arrays of values the work declares (``float acc[NF];``, not of pointers): per thread
    arrays_after = {text(d.child_by_field_name("declarator") or d) for s in post
                    for d in walk(s) if d.type == "array_declarator"
                    and d.parent is not None and d.parent.type in ("declaration",
                                                                   "init_declarator")
                    and (d.child_by_field_name("declarator") or d).type == "identifier"}
    for s in post:
        bad = work.bad(s)
        if bad is not None:
            raise Refused(f"`{text(bad)}` depends on the thread or the block other than "
                          "through the output point (or reads the tile other than at "
                          "[threadIdx.y + a][threadIdx.x + b])", bad)
        for n in walk(s):
            if n.type in ("assignment_expression", "update_expression"):
                t = write_target(n) or n
                if base_array(t) in tiles:
                    raise Refused(f"`{text(n)}` writes the tile after the barrier", n)
                base = t
                while base.type in ("subscript_expression", "pointer_expression"):
                    base = strip(base.child_by_field_name("argument") or base)
                    if base == t:
                        break
                if t.type != "identifier" and not plan.pointer(text(base)) and \
                        text(base) not in arrays_after:  # a thread's own array: no alias
                    raise Refused(f"`{text(n)}` writes through `{text(base)}`, not a kernel "
                                  "argument (it may point into the tile)", n)
            if n.type in ("goto_statement",):
                raise Refused(f"`{text(n)}` leaves the work", n)
            if n.type == "return_statement" and in_loop_or_switch(n, s):
                raise Refused(f"`{text(n)}` returns from inside a loop", n)
    # pre-barrier locals the work reads: single-assignment only (re-declared per output)
    post_reads = {text(n) for s in post for n in walk(s) if n.type == "identifier"}
    redeclare: list[Node] = []
    needed = set(post_reads)  # read after the barrier, or by a local that is
    for s in reversed(pre):
        if s.type == "declaration" and needed & {
                text(d.child_by_field_name("declarator") or d)
                for d in s.children_by_field_name("declarator")}:
            needed |= {text(n) for n in walk(s) if n.type == "identifier"}
    for s in pre:
        if s.type != "declaration" or s == tdecl or any(s == o[1] for o in others):
            continue
        names = [text(d.child_by_field_name("declarator") or d)
                 for d in s.children_by_field_name("declarator")]
        threaded = any(_mentions_thread(deps, d) for d in s.children_by_field_name("declarator"))
        if not threaded or not needed & set(names):
            continue
        for name in names:
            if name not in deps.values and name in post_reads:
                raise Refused(f"`{name}` (read after the barrier) is assigned more than once",
                              s)
        redeclare.append(s)  # in order: a later one may read it
    # every blockIdx is a tile offset blockIdx.d * B; the block sizes are used nowhere else
    offsets: dict[tuple[int, int], str] = {}
    for n in walk(plan.body):
        dim = builtin(n, "blockIdx") if n.type == "field_expression" else None
        if dim is None:
            continue
        parent = n.parent
        while parent is not None and parent.type in ("parenthesized_expression",
                                                     "cast_expression"):
            parent = parent.parent
        parts = binary(parent) if parent is not None else None
        size = None
        if parts is not None and parts[1] == "*":
            other = parts[2] if strip(parts[0]) == n else parts[0]  # n: one operand
            size = other if int_value(other) == sizes[dim] or \
                builtin(other, "blockDim") == dim else None
        if size is None:
            raise Refused(f"`{text(parent or n)}` is not a tile offset blockIdx.{dim} * "
                          f"{sizes[dim]}", n)
        offsets[(strip(size).start_byte, strip(size).end_byte)] = dim
    replaced = [(e.start_byte, e.end_byte) for e in extents] + \
        [(e.start_byte, e.end_byte) for o in others for e in o[2]] + \
        [(n.start_byte, n.end_byte) for ld in loads for n, _key in ld.edits] + \
        [(n.start_byte, n.end_byte) for ld in loads for n in ld.fill_nodes] + \
        [(n.start_byte, n.end_byte) for fl in fills for n, _key in fl.edits] + \
        list(offsets)
    # after the barrier the work's check ties every read of the thread and the block to the
    # output point (and the tile to it plus an offset), so a number there that equals a block
    # size (ncc_patch8's 8 x 8 template beside its 32 x 8 block) is only that number
    work_spans = [(s.start_byte, s.end_byte) for s in post]
    for n in walk(plan.body):
        size_like = (n.type in ("number_literal", "identifier") and int_value(n) in (bx, by)
                     and int_value(n) not in (0, 1)
                     and not any(a <= n.start_byte < b for a, b in work_spans)) or \
            (n.type == "field_expression" and builtin(n, "blockDim") is not None)
        if size_like and not any(a <= n.start_byte and n.end_byte <= b for a, b in replaced):
            raise Refused(f"`{text(n)}` (a block size) is used where the analysis does not "
                          "know its meaning", n)
    grid_x = scale_divisor(plan.grid[0], str(bx), "BLOCK_X * OUT_X")
    grid_y = scale_divisor(plan.grid[1], str(by), "BLOCK_Y * OUT_Y")
    if grid_x is None or grid_y is None:
        raise Refused(f"the grid {plan.grid} does not divide by the block {plan.block} "
                      "(ceil_div)", plan.body)
    del locals_
    # INTERIOR: from the tile's first load to the end of the work, copied for interior blocks
    # (it opens in the gap before that statement: an edit of the statement itself, the nest
    # made a flat loop, starts at the statement and renders inside each copy)
    first = next(st for st in pre if st.type != "declaration")
    region = first.prev_sibling.end_byte if first.prev_sibling is not None else first.start_byte
    bounds: tuple[interior.Bound, ...] | Refused = interior.analyse_bounds(plan, deps, loads,
                                                                           region)
    shared = [d for st in [*pre, *post] if st.start_byte >= region for d in walk(st)
              if d.type == "declaration" and "__shared__" in text(d).split("]")[0]]
    if shared and isinstance(bounds, tuple):
        bounds = Refused(f"`{text(shared[0])[:50]}` declares shared memory inside the span an "
                         "interior block would copy", shared[0])
    if others and isinstance(bounds, tuple) and bounds:
        bounds = Refused(f"{len(others) + 1} shared tiles of one geometry: the interior copy "
                         "is modelled for one tile", tdecl)

    unique = list({n.start_byte: n for n in tile_reads}.values())
    unread = next((n for s in post for n in walk(s) if text(n) in tiles and n.type in (
        "identifier", "type_identifier") and not any(
        r.start_byte <= n.start_byte < r.end_byte for r in unique)), None)
    if unread is not None:  # (tile[r][c]) + v parsed as a cast to a type `tile[r][c]`
        raise Refused(f"`{text(unread.parent or unread)[:60]}` names the tile {tile} other than "
                      "as a read at the thread's point", unread)
    try:
        window: Window | Refused = analyse_window(deps, unique, post, hy, hx)
    except Refused as exc:
        window = exc  # the lift stands; the rows are read as written

    def emit() -> None:
        _emit(plan, ApronFacts(tile, tdecl, extents, elem, bx, by, hx, hy, pad, loads, offsets,
                           pre, post, redeclare, len(unique), window, tuple(unique),
                           tuple(fills), sum(sd.nbytes for sd in sides), bounds, region,
                           others),
              grid_x, grid_y)
    return emit


def _siblings(deps: Deps, rest: list[tuple[str, Node, list[Node]]]
              ) -> tuple[tuple[str, Node, tuple[Node, ...], int], ...]:
    """The shared tiles after the first, each of its geometry: extents of the same
    compile-time values (``float ta[TH][TW], tb[TH][TW];``), an element type of known size.
    Refused, naming the tile and its line, where one differs."""
    first, decl0, ext0 = rest[0]
    want = [deps.poly(e, []) for e in ext0]
    out = []
    for name, decl, extents in rest[1:]:
        got = [deps.poly(e, []) for e in extents]
        ctype = text(decl.child_by_field_name("type"))
        if got != want or any(set(p) - {()} for p in got):
            shape0 = "][".join(text(e) for e in ext0)
            shape = "][".join(text(e) for e in extents)
            raise Refused(f"the shared tiles {first}[{shape0}] (line {decl0.start_point.row + 1})"
                          f" and {name}[{shape}] differ in extents: several apron tiles are "
                          "modelled with one geometry", decl)
        if ctype not in _ELEM:
            raise Refused(f"the tile {name}'s element type `{ctype}` has no known size", decl)
        out.append((name, decl, tuple(extents), _ELEM[ctype]))
    return tuple(out)


def in_loop_or_switch(node: Node, top: Node) -> bool:
    """Whether a loop or switch of ``top`` (``top`` included) holds ``node``."""
    p = node.parent
    while p is not None:
        if p.type in _LOOPS:
            return True
        if p == top:
            return False
        p = p.parent
    return False


def _mentions_thread(deps: Deps, node: Node) -> bool:
    value = node.child_by_field_name("value") if node.type == "init_declarator" else None
    if value is None:
        return False
    seen: set[str] = set()
    stack = [value]
    while stack:
        n = stack.pop()
        for m in walk(n):
            if builtin(m, "threadIdx") is not None and m.type == "field_expression":
                return True
            if m.type == "identifier" and text(m) in deps.values and text(m) not in seen:
                seen.add(text(m))
                stack.append(deps.values[text(m)])
    return False


def _emit(plan: Plan, f: ApronFacts, grid_x: str, grid_y: str) -> None:
    rw, data = plan.rw, plan.source.data
    names = fresh_names(plan, ["BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "PAD"])
    bx_n, by_n, ox_n, oy_n, pad_n = (names[k] for k in ("BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y",
                                                         "PAD"))
    ext_y = f"{by_n} * {oy_n} + {f.hy}"
    ext_x = f"{bx_n} * {ox_n} + {f.hx}"
    # a tile of one load may also be read straight from its source: one stored by per-thread
    # branches, or by a nest where the tile is the block's only shared data (side tables
    # keep the block staging and waiting at any USE_SMEM)
    branch = f.loads[0] if len(f.loads) == 1 and f.loads[0].direct is not None and \
        (f.loads[0].nest is None or not f.fills) and not f.others and not any(
            r.parent is not None and text(r.parent).startswith("&") for r in f.read_nodes) \
        else None  # (`&tile[..]`: the tile's address is taken, so it must be there)
    smem = fresh_names(plan, ["USE_SMEM"])["USE_SMEM"] if branch is not None else ""
    if smem:
        rw.replace(f.extents[0], f"{smem} ? {ext_y} : 1")
        rw.replace(f.extents[1], f"{smem} ? {ext_x} + {pad_n} : 1")
    else:
        for extents in (f.extents, *(es for _n, _d, es, _e in f.others)):
            rw.replace(extents[0], ext_y)
            rw.replace(extents[1], f"{ext_x} + {pad_n}")
    new = {"EY": ext_y, "EX": ext_x, "BY": by_n, "BX": bx_n,
           "EYEX": f"({ext_y}) * ({ext_x})", "BXBY": f"{bx_n} * {by_n}",
           "FLAT": f"(int)threadIdx.y * {bx_n} + (int)threadIdx.x", "WX": f"({ext_x})",
           "OY": oy_n, "OX": ox_n}
    for ld in f.loads:
        for node, key in ld.edits:
            rw.replace(node, new[key])
    for fl in f.fills:
        for node, key in fl.edits:
            rw.replace(node, new[key])
        if fl.local:
            def wrapped(r: Rewriter, fl: SideFill = fl) -> str:
                return wrap(fl, r.render(fl.stmt.start_byte, fl.stmt.end_byte), new)
            rw.replace_span(fl.stmt.start_byte, fl.stmt.end_byte, make=wrapped)
    origin = {"x": f"({bx_n} * {ox_n})", "y": f"({by_n} * {oy_n})"}
    spans = {span: origin[dim] for span, dim in f.offsets.items()}
    copy = interior.Copy()
    bounds = f.bounds if isinstance(f.bounds, tuple) else ()
    for ld in f.loads:
        if ld.fill is None:
            continue

        def filled(_r: Rewriter, ld: Load = ld) -> str:
            assert ld.fill is not None
            fill = ld.fill(interior.known(copy, bounds,
                                          lambda m: spans.get((m.start_byte, m.end_byte))), new)
            return f"\n#if {smem}\n  {fill}\n#endif\n" if smem else fill
        rw.replace_span(ld.fill_nodes[0].start_byte, ld.fill_nodes[0].end_byte, make=filled)
        for n in ld.fill_nodes[1:]:
            rw.replace(n, "")
    nests = [(ld.nest, ld.nest_decls) for ld in f.loads if ld.nest is not None]
    flat_n = fresh_names(plan, ["LOAD_FLAT"])["LOAD_FLAT"] if nests else ""
    for (loop, body, yv, xv), decls in nests:
        def both(r: Rewriter, loop: Node = loop, body: Node = body, yv: str = yv,
                 xv: str = xv, decls: tuple[Node, ...] = decls) -> str:
            outer = "".join(f"    {r.render(d.start_byte, d.end_byte)}\n" for d in decls)
            flat = (f"for (int wb_e = (int)threadIdx.y * {bx_n} + (int)threadIdx.x; "
                    f"wb_e < ({ext_y}) * ({ext_x}); wb_e += {bx_n} * {by_n}) {{\n"
                    f"    const int {yv} = wb_e / ({ext_x}), {xv} = wb_e % ({ext_x});\n"
                    f"{outer}    {r.render(body.start_byte, body.end_byte)}\n  }}")
            nest = (f"\n#if {flat_n}  // one loop over the tile's elements, every thread "
                    f"busy\n  {flat}\n#else\n  {r.render(loop.start_byte, loop.end_byte)}\n"
                    "#endif\n")
            return f"\n#if {smem}{nest}#endif\n" if smem else nest
        rw.replace_span(loop.start_byte, loop.end_byte, make=both)
    if smem and not f.fills:  # the side tables' fills need the barrier at any USE_SMEM
        sync = next(st for st in statements(plan.body) if _is_sync(st))
        rw.replace(sync, f"\n#if {smem}\n  {text(sync)}\n#endif\n")
    done: set[tuple[int, int]] = set()
    for n in walk(plan.body):
        span = (n.start_byte, n.end_byte)
        if span in spans and span not in done:
            done.add(span)
            rw.replace(n, spans[span])
    local = {"x": "wb_lx", "y": "wb_ly"}

    def sub(n: Node) -> str | None:
        if (n.start_byte, n.end_byte) in spans:
            return spans[(n.start_byte, n.end_byte)]
        d = builtin(n, "threadIdx") if n.type == "field_expression" else None
        return local[d] if d is not None else None

    for s in f.post:
        for n in walk(s):
            d = builtin(n, "threadIdx") if n.type == "field_expression" else None
            if d is not None:
                rw.replace(n, local[d])
            if n.type == "return_statement" and not in_lambda(n, s):  # a lambda's its own
                rw.replace(n, "continue;  // this output is outside: the next one")
    again = "\n    ".join(render(data, s, sub) for s in f.redeclare)
    ctype = text(f.decl.child_by_field_name("type")).replace("__shared__", "").strip()
    offs = interior.known(copy, bounds, lambda n: spans.get((n.start_byte, n.end_byte)))

    def read(r: Rewriter, n: Node) -> str:
        """A tile read: as written, or (USE_SMEM = 0) the value at that position."""
        as_written = r.render(n.start_byte, n.end_byte)
        if branch is None or branch.direct is None:
            return as_written
        # each index as the outputs' loop sees it (`threadIdx.x` -> wb_lx): rendering an
        # index whose whole span is one edit would give the text as written
        iy, ix = (render(data, i, sub) for i in indices(n))
        return f"({smem} ? {as_written} : ({ctype})({branch.direct(offs, iy, ix)}))"

    def window_load(row: str, col: str, tapped: str) -> str:
        at_tile = " ".join(f"{window_name(f, t)}[wb_r][wb_c] = {t}[{row}][{col}];"
                           for t in (f.tile, *(o[0] for o in f.others)))
        if f.others:  # one statement under the loops: every tile's window at the position
            at_tile = f"{{ {at_tile} }}"
        if branch is None or branch.direct is None:
            return at_tile
        value = f"({ctype})({branch.direct(offs, 'wb_py', 'wb_px')})"
        # Straight from the source, only the positions some output reads (`tapped`: a
        # compile-time test once unrolled), each as the tile would hold it. A read of the
        # kernel as written takes those positions from the tile, so the tile stores them
        # (as the reads outside the window assume): no test of the stored regions per value,
        # which would cost a dozen compares for each of the window's loads.
        return (f"\n#if {smem}\n          {at_tile}\n#else\n"
                f"          if ({tapped}) {{ const int wb_py = {row}, wb_px = {col};\n"
                f"            wb_win[wb_r][wb_c] = {value}; }}\n"
                "#endif\n")
    # the window's loads as the general copy and as the interior one (known tests) render them
    marker = "\x00wb_window\x00"
    reuse = register_window(plan, f, oy_n, ctype, read, lambda *_: marker)
    window_args: tuple[str, str, str] = ("", "", "")
    if reuse:
        w = f.window
        assert isinstance(w, Window)
        window_args = (f"(int)threadIdx.y * {oy_n} + {w.row0} + wb_r",
                       f"(int)threadIdx.x + wb_ox * BX + {w.col0} + wb_c",
                       tapped_test(w.taps, oy_n))
    if branch is not None and not reuse:
        for n in f.read_nodes:
            plan.rw.replace_span(n.start_byte, n.end_byte,
                                 make=lambda r, n=n: read(r, n))  # type: ignore[misc]
    head = (f"// {oy_n} x {ox_n} outputs per thread: rows threadIdx.y * {oy_n} + oy, columns "
            f"threadIdx.x + ox * {bx_n} of the tile\n"
            f"#pragma unroll\n  for (int wb_ox = 0; wb_ox < {ox_n}; ++wb_ox) {{\n"
            + (reuse.replace("BX", bx_n) if reuse else "") +
            f"#pragma unroll\n  for (int wb_oy = 0; wb_oy < {oy_n}; ++wb_oy) {{\n"
            f"    const int wb_ly = (int)threadIdx.y * {oy_n} + wb_oy;\n"
            f"    const int wb_lx = (int)threadIdx.x + wb_ox * {bx_n};\n"
            f"    {again}\n  ")
    head_both = (head.replace(marker, window_load(*window_args).replace("BX", bx_n))
                 if reuse else head, "")
    if reuse and bounds:
        copy.interior = True
        head_both = (head_both[0], head.replace(marker, window_load(*window_args)
                                                .replace("BX", bx_n)))
        copy.interior = False
    # the work no output changes, once a thread before the outputs' loops (.apron_hoist)
    once = hoisted(plan, f.post)
    for s in once:
        rw.replace(s, "")

    def hoist(r: Rewriter) -> str:
        return "".join(f"{r.render(s.start_byte, s.end_byte)}\n    " for s in once)
    rw.replace_span(f.post[0].start_byte, f.post[0].start_byte,
                    make=lambda r: hoist(r) + (head_both[1] if copy.interior and head_both[1]
                                               else head_both[0]))
    rw.insert(f.post[-1].end_byte, "\n  }\n  }")
    where = f"{line(f.decl)}: {text(f.decl)}"
    shown = ", ".join((f.tile, *(o[0] for o in f.others)))
    for axis, written, hi in (("X", f.bx, 128), ("Y", f.by, 32)):
        lo = min(8 if axis == "X" else 1, written)
        spec: dict[str, object] = {"kind": "pow2", "min": lo, "max": max(hi, written)} \
            if written & (written - 1) == 0 else {"kind": "choice", "values": sorted(
                {written} | {1 << e for e in range(11) if lo <= 1 << e <= max(hi, written)})}
        plan.add_param(names[f"BLOCK_{axis}"], {
            **spec, "default": written,
            "description": f"threads per block along {axis.lower()} (as written: {written}); "
                           "the tile follows the block and the outputs per thread"}, where)
    plan.add_param(ox_n, {"kind": "choice", "values": OUT_X_VALUES, "default": 1,
                          "description": f"outputs per thread along x, {bx_n} apart (as "
                                         "written: 1)"}, where)
    plan.add_param(oy_n, {"kind": "choice", "values": OUT_Y_VALUES, "default": 1,
                          "description": "consecutive output rows per thread (as written: 1)"},
                   where)
    plan.add_param(pad_n, {"kind": "choice", "values": sorted({0, 1, f.pad}), "default": f.pad,
                           "description": "extra column in the shared tile"
                                          + (f"s {shown}" if f.others else f" {f.tile}") +
                                          f" (as written: {f.pad})"}, where)
    if flat_n:
        plan.add_param(flat_n, {"kind": "choice", "values": [0, 1], "default": 0,
                                "description": "1: the tile loaded by one loop over its "
                                               "elements (no idle threads on the halo's "
                                               "extra rows and columns); 0: the author's "
                                               "nested loops (as written)"}, where)
    plan.block = [bx_n, by_n]
    plan.grid = [grid_x, grid_y]
    plan.launch_bounds = f"{bx_n} * {by_n}"
    plan.constrain(f"{bx_n} * {by_n} >= 32")
    plan.constrain(f"{bx_n} * {by_n} <= 1024")
    plan.constrain(f"{ox_n} * {oy_n} <= 16")
    elems = f.elem + sum(o[3] for o in f.others)  # bytes of one position, every tile
    plan.constrain(("" if not smem else f"{smem} == 0 or ") +
                   f"{elems} * ({ext_y}) * ({ext_x} + {pad_n})" +
                   (f" + {f.side_bytes}" if f.side_bytes else "") + f" <= {_MAX_SMEM}")
    if smem and isinstance(f.window, Window):
        # read from the source, the window's values are all loaded before the outputs use
        # them, the OUT_X columns' windows together (from the tile the compiler streams
        # them): a register cap below them spills, the block's own (65536 registers over
        # its threads) or a minimum of resident blocks' (a 5 x 5 box at OUT_Y = 8, 60
        # values, under 64 registers: 80 bytes; a y-derivative at OUT_Y = 8, OUT_X = 2,
        # 2 x 12 values, under 32: 44 bytes; ptxas -v, sm_90)
        blocks = "max(1, MIN_BLOCKS_PER_SM)" if _min_blocks_follows(plan) else "1"
        plan.constrain(f"{smem} == 1 or {oy_n} == 1 or {window_values(f.window, oy_n)} * "
                       f"{ox_n} + {WINDOW_WORKING_REGS} <= 65536 // (({bx_n} * {by_n}) * "
                       f"{blocks})")
    if smem:
        plan.add_param(smem, {"kind": "choice", "values": [0, 1], "default": 1,
                              "description": f"1: the tile {f.tile} staged in shared memory "
                                             "(as written); 0: each value read where it is "
                                             "needed, straight from its source (the same "
                                             "function of the position the tile holds)"},
                       where)
        how = "loaded by one nest" if branch is not None and branch.nest is not None else \
            "stored by per-thread branches" if branch is not None and branch.fill else \
            "loaded by one flat loop"
        plan.note("USE_SMEM", True, f"the tile {f.tile} is one function of the global "
                  f"position ({how}): USE_SMEM = 0 reads each value from its source instead ("
                  + ("the barrier kept for the side tables" if f.fills else "no barrier") +
                  "), the row window too", f.decl)
        plan.constrain(f"{smem} == 1 or {pad_n} == 0")  # no tile to pad: one config
        if flat_n:
            plan.constrain(f"{smem} == 1 or {flat_n} == 0")  # no tile to load
    _interior(plan, f, copy, offs, ext_y, ext_x, where)
    plan.note(KNOB, True, (f"apron tiles {shown} of one geometry" if f.others else
                           f"apron tile {f.tile}") + f" (halo {f.hy} x {f.hx}): block "
              f"({bx_n}, {by_n}) apart from the tile ({ext_y}) x ({ext_x} + {pad_n}); "
              f"{len(f.loads)} load nest(s) stride by the block, each thread computes {oy_n} x "
              f"{ox_n} outputs from the tile ({f.reads} tile read(s) at the thread's point); "
              "the grid's divisors follow", f.decl)


def _interior(plan: Plan, f: ApronFacts, copy: interior.Copy, offs: Callable[[Node], str | None],
              ext_y: str, ext_x: str, where: str) -> None:
    """INTERIOR (:mod:`.apron_interior`): the tile's loads without their bounds tests in
    blocks whose tile lies inside the grid; or the reason there is no such knob."""
    if isinstance(f.bounds, Refused):
        plan.note(interior.KNOB, False, f"{f.bounds.reason}: every block keeps the loads' "
                  "tests", f.bounds.node if f.bounds.node is not None else f.decl)
        return
    if not f.bounds:
        return
    knob = fresh_names(plan, [interior.KNOB])[interior.KNOB]
    test = interior.block_test(f.bounds, offs, ext_y, ext_x)
    interior.emit_copies(plan, copy, f.bounds, f.region, f.post[-1].end_byte, knob, test)
    plan.add_param(knob, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: a block whose tile with its halo lies inside the "
                                         "grid loads it without the bounds tests (a copy of "
                                         "the work for those blocks); 0: every load tested "
                                         "(as written)"}, where)
    tests = sorted({text(b.cond) for b in f.bounds})
    plan.note(interior.KNOB, True, f"{len(f.bounds)} bounds test(s) of the tile {f.tile}'s "
              f"value (`{tests[0][:60]}`) take one value over a block's tile where they take "
              "it at the tile's worst corners: INTERIOR = 1 tests those once per block and "
              "runs an interior copy of the load and the work without them", f.decl)
