"""Warp-per-item kernels (a warp per row or group): LANES per item, items per block, VEC.

Recognised on the parse, whatever the spelling: an item ``r = blockIdx.x * F + w`` (terms in
either order) where the warp ``w`` is ``threadIdx.x / 32`` (or ``>> 5``) in a launch block of
``32 * F`` threads, or ``threadIdx.y`` in a (32, F) block, written in place or through a local
used nowhere else (F a literal, a macro, a file-scope constant such as a ``constexpr`` in a
namespace, or ``blockDim.x / 32``: :mod:`.reduce_consts`); or the global warp index ``r =
(blockIdx.x * blockDim.x + threadIdx.x) / 32`` (:mod:`.warp_global`: F is then the launch
block's warps, which the kernel never names); ``warpSize`` read as 32; a grid rule dividing
by F; the lane ``threadIdx.x % 32`` (or ``& 31``; in a
(32, F) block ``threadIdx.x`` itself), as a local or in place, used only to start lane loops
``for (c = l; c < n; c += 32)`` or segment loops ``for (c = base + l; c < end; c += 32)``
whose base and end are the same for every lane of the item (:mod:`.warp_segments`; ILP and
LDG over them: :mod:`.warp_chains`, :mod:`.warp_ldg`) and in ``l == 0`` / ``!l`` tests; warp shuffles only in the
shapes of :mod:`.warp_shuffles` (halving or doubling offset loops, a broadcast from lane 0).
No other ``threadIdx`` or ``blockDim`` read, no shared memory, barrier or vote.

The transform gives each item ``LANES`` lanes (32 / LANES items per warp): the lane and the
item index divide by LANES, lane loops step by LANES, the offset loops start at LANES / 2,
and every shuffle names only its group (mask and width), so a group that returns early
never waits for another. ``WARPS_PER_BLOCK`` (the author's macro where F is one) sets the
block (``32 * W`` threads, or (32, W) with row ``threadIdx.y * (32 / LANES) + threadIdx.x /
LANES`` of the block's rows); ``VEC`` vectorizes lane loops (:func:`.vector.vectorize`), a loop writing a pointer
that is not ``__restrict__`` behind a run-time test per item (its written and read ranges the
same elements or disjoint, the loop as written otherwise). Items are assumed independent (the
warp-to-item mapping changes with LANES). LANES = 32 and the written F are the kernel as
written.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    calls,
    declared_name,
    int_value,
    integer_macros,
    line,
    strip,
    terms,
    text,
    walk,
)
from workbench.templater.macros import IntegerMacro, guard_define
from workbench.templater.plan import Plan
from workbench.templater.reduce_consts import constant
from workbench.templater.rules import literal, scale_divisor
from workbench.templater.vector import Illegal, Region, vectorize
from workbench.templater.warp_chains import apply_chains
from workbench.templater.warp_global import GlobalItem, find_global_item
from workbench.templater.warp_ldg import apply_ldg
from workbench.templater.warp_regs import (
    REG_ROW,
    RowCache,
    apply_row_cache,
    find_row_cache,
)
from workbench.templater.warp_segments import SEGMENT_LANES_MIN, segment_lane
from workbench.templater.warp_shuffles import shuffle_loops

LANES = "LANES"
_UNSAFE = ("__syncthreads", "__ballot", "__any", "__all", "__activemask", "__match",
           "__reduce", "__syncwarp")
GROUP_MASK = ("__device__ __forceinline__ unsigned wb_group_mask() {  // the lanes of this "
              "thread's group\n  return LANES == 32 ? 0xffffffffu : ((1u << (LANES % 32)) - 1u)"
              " << ((threadIdx.x & 31u) & ~(unsigned)(LANES - 1));\n}")


def _lane_split(node: Node, op_div: bool) -> Node | None:
    """The literal of ``threadIdx.x / 32`` | ``>> 5`` (op_div) or ``% 32`` | ``& 31``."""
    parts = binary(node)
    if parts is None or builtin(parts[0], "threadIdx") != "x":
        return None
    value = int_value(parts[2])
    ops = {("/", 32), (">>", 5)} if op_div else {("%", 32), ("&", 31)}
    return strip(node) if (parts[1], value) in ops else None


def _lane_value(node: Node, two_d: bool) -> Node | None:
    """``node`` when it is the lane: ``threadIdx.x % 32`` (or ``& 31``), or, in a block of
    (32, R) threads, ``threadIdx.x`` itself."""
    if _lane_split(node, op_div=False) is not None:
        return strip(node)
    if two_d and strip(node).type == "field_expression" and builtin(node, "threadIdx") == "x":
        return strip(node)
    return None


def _warp_term(plan: Plan, node: Node, two_d: bool) -> tuple[Node, Node | None] | None:
    """(the node naming the warp, the local warp index's declaration or None): in a 1-D
    block ``threadIdx.x / 32`` (``>> 5``), in a (32, R) block ``threadIdx.y``; directly or
    through an unassigned local."""
    local = None
    if node.type == "identifier":
        wd = plan.facts.defs.get(text(node))
        if wd is None or wd.value is None or wd.assigned:
            return None
        local, node = wd.decl, wd.value
    if two_d:
        inner = strip(node)
        return (inner, local) if builtin(inner, "threadIdx") == "y" and \
            inner.type == "field_expression" else None
    div = _lane_split(node, op_div=True)
    return (div, local) if div is not None else None


def apply_warp(plan: Plan, macros: dict[str, IntegerMacro]) -> bool:
    """Apply where the kernel has the shape above; notes why not where it almost has
    (``warpSize`` read as the 32 it is on every NVIDIA GPU)."""
    known = {m.name: m.value for m in macros.values()}
    if "warpSize" in known or not plan.uses("warpSize"):
        return _apply_warp(plan, macros)
    with integer_macros({**known, "warpSize": 32}):
        return _apply_warp(plan, macros)


def _apply_warp(plan: Plan, macros: dict[str, IntegerMacro]) -> bool:
    sizes = [literal(b) for b in plan.block]
    if not plan.grid or not plan.block or any(s is None for s in sizes):
        return False
    two_d = len(sizes) == 2 and sizes[0] == 32 and (sizes[1] or 0) > 1
    if len(sizes) != 1 and not two_d:
        return False
    defs = [(d, d.value) for d in plan.facts.defs.values()
            if d.value is not None and not d.assigned]
    lane_def = next((d for d, v in reversed(defs) if _lane_value(v, two_d) is not None), None)
    item_def = None
    for d, value in defs:
        for _s, t in terms(value):
            if _block_factor(plan, t) is None:
                continue
            others = [u for _s2, u in terms(value) if u.start_byte != t.start_byte]
            # the item: a block offset plus the warp (threadIdx.y in a (32, R) block,
            # threadIdx.x / 32 in a 1-D one; the lane may be written in place)
            if any(_warp_term(plan, u, two_d) is not None for u in others) or \
                    (not two_d and lane_def is not None):
                item_def = (d, t)
    try:
        if item_def is not None:
            shape = _offset_shape(plan, macros, item_def, two_d)
        else:
            found = None if two_d else find_global_item(plan)
            if found is None:
                return False
            shape = _global_shape(plan, found)
            lane_def = lane_def or found.lane_def
        return _apply(plan, lane_def, shape, two_d)
    except Illegal as exc:
        decl = item_def[0].decl if item_def is not None else None
        plan.note(LANES, False, exc.reason, exc.node or decl)
        return False


def _block_factor(plan: Plan, node: Node) -> int | None:
    """F of ``blockIdx.x * F`` (either order): a literal, a macro, a file constant, or the
    launch block's warps read as ``blockDim.x / 32`` (``>> 5``)."""
    parts = binary(node)
    if parts is None or parts[1] != "*":
        return None
    if builtin(parts[0], "blockIdx") == "x":
        return _factor_value(plan, parts[2])
    if builtin(parts[2], "blockIdx") == "x":
        return _factor_value(plan, parts[0])
    return None


def _block_warps(node: Node) -> bool:
    """``node`` is ``blockDim.x / 32`` or ``blockDim.x >> 5``."""
    parts = binary(node)
    return parts is not None and builtin(parts[0], "blockDim") == "x" and \
        (parts[1], int_value(parts[2])) in (("/", 32), (">>", 5))


def _factor_value(plan: Plan, node: Node) -> int | None:
    if _block_warps(node):
        size = literal(plan.block[0]) if len(plan.block) == 1 else None
        return size // 32 if size is not None and size % 32 == 0 else None
    return constant(plan, node)


@dataclass(frozen=True)
class _Shape:
    """How the kernel names its item: its declaration; the node that becomes the item's
    index within the block (``threadIdx.x / 32``) or, in the global form, the whole global
    warp index; the factor F written for the items per block (None in the global form), its
    value, the macro it is, the nodes whose ``threadIdx.x`` / ``blockDim.x`` reads the
    shape accounts for, and lanes spelled from the global thread index."""

    decl: Node
    warp: Node
    factor: Node | None
    f_value: int
    macro: IntegerMacro | None
    allowed: tuple[Node, ...]
    lanes: tuple[Node, ...]
    index: Node | None  # X of the global form's X / 32


def _offset_shape(plan: Plan, macros: dict[str, IntegerMacro], item: tuple,
                  two_d: bool) -> _Shape:
    d, offset = item
    parts = [t for _s, t in terms(d.value)]
    shape = "threadIdx.y" if two_d else "threadIdx.x / 32"
    if len(parts) != 2 or any(s < 0 for s, _t in terms(d.value)):
        raise Illegal(f"`{text(d.value)}` is not blockIdx.x * F + {shape}", d.decl)
    found = _warp_term(plan, next(t for t in parts if t.start_byte != offset.start_byte), two_d)
    if found is None:
        raise Illegal(f"`{text(d.value)}` is not blockIdx.x * F + {shape}", d.decl)
    warp, warp_local = found
    if warp_local is not None:
        wname, _n, _v = declared_name(warp_local)
        if len([u for u in plan.uses(wname) if not _declares(u)]) != 1:
            raise Illegal(f"the warp index `{wname}` is used beyond the item index; its "
                          "meaning with fewer lanes per item is not modelled", warp_local)
    factor_parts = binary(offset)
    assert factor_parts is not None
    factor = strip(factor_parts[2] if builtin(factor_parts[0], "blockIdx") == "x"
                   else factor_parts[0])
    f_value = _factor_value(plan, factor)
    allowed = (factor,) if _block_warps(factor) else ()  # blockDim.x / 32: the block's warps
    if two_d:
        if f_value is None or literal(plan.block[1]) != f_value:
            raise Illegal(f"the block ({', '.join(plan.block)}) is not (32, `{text(factor)}`)",
                          d.decl)
    elif f_value is None or literal(plan.block[0]) != 32 * f_value:
        raise Illegal(f"the block ({plan.block[0]}) is not 32 x `{text(factor)}` warps", d.decl)
    macro = macros.get(text(factor)) if factor.type == "identifier" else None
    if macro is not None and len(plan.uses(macro.name)) != 1:
        raise Illegal(f"`{macro.name}` has other uses; its meaning with fewer lanes per item "
                      "is not modelled", macro.definition)
    if macro is None and factor.type == "identifier" and len(plan.uses(text(factor))) != 1:
        raise Illegal(f"`{text(factor)}` has other uses in the kernel; its meaning with fewer "
                      "lanes per item is not modelled", factor)
    return _Shape(d.decl, warp, factor, f_value, macro, allowed, (), None)


def _global_shape(plan: Plan, found: GlobalItem) -> _Shape:
    """The global warp index: F is the launch block's warps (the kernel never names it)."""
    size = literal(plan.block[0])
    if size is None or size % 32:
        raise Illegal(f"the block ({plan.block[0]}) is not whole warps", found.item.decl)
    allowed = [found.index] + ([found.thread.value] if found.thread is not None and
                               found.thread.value is not None else [])
    return _Shape(found.item.decl, found.division, None, size // 32, None, tuple(allowed),
                  found.lanes, found.index)


def _inline_lanes(plan: Plan, two_d: bool, skip: list[Node]) -> list[Node]:
    """Lane expressions written in place (``threadIdx.x % 32`` or, in a (32, R) block,
    ``threadIdx.x``) outside the spans in ``skip``."""
    spans = [(n.start_byte, n.end_byte) for n in skip]
    out: list[Node] = []
    for n in walk(plan.body):
        if n.type != "field_expression" or builtin(n, "threadIdx") != "x" or \
                any(a <= n.start_byte and n.end_byte <= b for a, b in spans):
            continue
        up = n.parent
        while up is not None and up.type == "parenthesized_expression":
            up = up.parent
        if up is not None and _lane_split(up, op_div=False) is not None:
            out.append(strip(up))
        elif two_d:
            out.append(n)
    return out


def _apply(plan: Plan, lane_def: object, shape: _Shape, two_d: bool) -> bool:
    warp, factor, f_value, macro = shape.warp, shape.factor, shape.f_value, shape.macro
    spans = [(n.start_byte, n.end_byte) for n in shape.allowed]
    bad = sorted(c for c in calls(plan.body) if c.startswith(_UNSAFE))
    if bad or any(x.is_shared for x in plan.facts.defs.values()):
        raise Illegal(f"the warps cooperate through {bad[0] if bad else '__shared__ memory'}")
    for n in walk(plan.body):
        if n.type == "field_expression" and builtin(n, "blockDim") is not None and \
                not (builtin(n, "blockDim") == "x" and
                     any(a <= n.start_byte and n.end_byte <= b for a, b in spans)):
            raise Illegal(f"`{text(n)}` is read; the block's shape changes with "
                          "WARPS_PER_BLOCK and LANES, which this lift does not model", n)
        if n.type == "field_expression" and builtin(n, "threadIdx") in ("y", "z") and \
                not (two_d and n.start_byte == warp.start_byte):
            raise Illegal(f"`{text(n)}` is read in `{text(n.parent)[:50]}` (only the item "
                          "index is modelled)", n)
    lane_value = lane_def.value if lane_def is not None else None  # type: ignore[attr-defined]
    lane = lane_def.name if lane_def is not None else None  # type: ignore[attr-defined]
    skip = [n for n in (lane_value, warp, *shape.allowed) if n is not None]
    inline = [*_inline_lanes(plan, two_d, skip), *shape.lanes]
    allowed = {(n.start_byte, n.end_byte) for n in [*skip, *inline]}
    for n in walk(plan.body):
        if n.type != "field_expression" or builtin(n, "threadIdx") != "x":
            continue
        up: Node | None = n
        while up is not None and (up.start_byte, up.end_byte) not in allowed and up != plan.body:
            up = up.parent
        if up is None or up == plan.body:
            raise Illegal(f"threadIdx.x is read in `{text(n.parent)[:50]}` (only the lane and "
                          "the warp index are modelled)", n)
    item, _n, _v = declared_name(shape.decl)
    loops, steps, starts, segments = _lane_loops(plan, lane, inline, item)
    offsets, widths, broadcasts = shuffle_loops(plan)
    # grid: ceil_div(X, F) -> ceil_div(X, W * (32 // LANES))
    name = macro.name if macro is not None else "WARPS_PER_BLOCK"
    per_block = f"{name} * (32 / {LANES})"
    grid = scale_divisor(plan.grid[0], str(f_value), f"{name} * (32 // {LANES})")
    if grid is None and macro is not None:
        grid = scale_divisor(plan.grid[0], macro.name, f"{name} * (32 // {LANES})")
    if grid is None:
        raise Illegal(f"grid rule {plan.grid[0]!r} does not divide by the items per block "
                      f"({f_value})")
    # edits
    plan.grid[0] = grid
    if two_d:
        plan.block[1] = name
        plan.rw.replace(warp, f"(threadIdx.y * (32 / {LANES}) + threadIdx.x / {LANES})")
    elif shape.index is not None:  # the global warp index: the global thread / LANES
        plan.block[0] = f"32 * {name}"
        index = shape.index
        plan.rw.replace_span(warp.start_byte, warp.end_byte, make=lambda rw: (
            f"(({rw.render(index.start_byte, index.end_byte)}) / {LANES})"))
    else:
        plan.block[0] = f"32 * {name}"
        plan.rw.replace(warp, f"(threadIdx.x / {LANES})")
    plan.launch_bounds = f"32 * {name}"
    if factor is not None:
        plan.rw.replace(factor, f"({per_block})")
    for n in [*([strip(lane_value)] if lane_value is not None else []), *inline]:
        plan.rw.replace(n, f"(threadIdx.x % {LANES})")
    for step in steps:
        plan.rw.replace(step, LANES)
    for start in offsets:
        plan.rw.replace(start.node, start.replacement)
    for call in [*(c for s in offsets for c in s.shuffles), *broadcasts]:
        args = call.child_by_field_name("arguments")
        assert args is not None
        plan.rw.replace(args.named_children[0], "wb_group_mask()")
        if len(args.named_children) == 3:
            plan.rw.insert(args.end_byte - 1, f", {LANES}")
    for width in widths:
        plan.rw.replace(width, LANES)
    plan.helper(GROUP_MASK)
    if macro is not None:
        guard_define(plan, macro, f_value)
    what = "block's y size, " if two_d else ""
    plan.add_param(name, {"kind": "pow2", "min": 1, "max": 32, "default": f_value,
                          "description": f"warps per block, the {what}32 / LANES items a "
                                         f"warp (as written: {f_value})"},
                   f"{line(shape.decl)}: {text(shape.decl)[:60]}")
    # 2 lanes an item only where every lane loop walks a segment (warp_segments' practice)
    fewest = SEGMENT_LANES_MIN if segments and len(segments) == len(loops) else 4
    plan.add_param(LANES, {"kind": "pow2", "min": fewest, "max": 32, "default": 32,
                           "description": "lanes per item, 32 / LANES items per warp "
                                          "(as written: 32, a warp per item)"},
                   f"{line(lane_value if lane_value is not None else shape.decl)}: lane")
    plan.note(LANES, True, f"{len(loops)} lane loop(s), {len(offsets)} shuffle loop(s) and "
              f"{len(broadcasts)} broadcast(s) follow the lanes per item; shuffles name only "
              "the item's group (mask and width)", shape.decl)
    for seg in segments:
        plan.note("VEC", False, f"the lane loop `{text(seg).splitlines()[0][:50]}` walks a "
                  "segment from a run-time offset (its vectors' alignment is not known)", seg)
    if segments:
        apply_chains(plan, segments, LANES)
        apply_ldg(plan, segments)
    cut = {s.start_byte for s in segments}
    whole = [(lp, st) for lp, st in zip(loops, starts, strict=True) if lp.start_byte not in cut]
    loops, starts = [lp for lp, _st in whole], [st for _lp, st in whole]
    cache = _row_cache(plan, loops, starts) if not segments else None
    before = len(plan.rw.edits)
    vectorized = _vectorize_lane_loops(plan, loops, starts)
    if cache is not None:
        apply_row_cache(plan, cache, lanes=LANES, vectorized=vectorized,
                        foreign=plan.rw.edits[before:], threads=f"32 * {name}")
    return True


def _row_cache(plan: Plan, loops: list[Node], starts: list[str]) -> RowCache | None:
    """The row a later lane loop reads again (:mod:`.warp_regs`), or None (refusals noted)."""
    try:
        return find_row_cache(plan, loops, starts)
    except Illegal as exc:
        plan.note(REG_ROW, False, exc.reason, exc.node)
        return None


def _is_lane(node: Node | None, lane: str | None, inline: list[Node]) -> bool:
    if node is None:
        return False
    node = strip(node)
    if lane is not None and node.type == "identifier" and text(node) == lane:
        return True
    return any(node.start_byte == n.start_byte and node.end_byte == n.end_byte for n in inline)


def _lane_loops(plan: Plan, lane: str | None, inline: list[Node], item: str | None
                ) -> tuple[list[Node], list[Node], list[str], list[Node]]:
    """Loops ``for (c = lane; c < n; c += 32)``, their step literals and rendered starts
    (after the lane's rewrite), and the segment loops ``for (c = base + lane; ...)`` whose
    base the item reads (:mod:`.warp_segments`; among the loops too); every other use of the
    lane must be ``lane == 0`` (or != 0)."""
    loops, steps, starts, segments, ok = [], [], [], [], set()
    for n in walk(plan.body):
        if n.type != "for_statement":
            continue
        init, update = n.child_by_field_name("initializer"), n.child_by_field_name("update")
        if init is None or update is None or init.type != "declaration":
            continue
        _var, _d, start = declared_name(init)
        if start is None:
            continue
        if not _is_lane(start, lane, inline):
            at = segment_lane(plan, n, start, lambda x: _is_lane(x, lane, inline), item)
            if at is None:
                continue
            segments.append(n)
            start = at
        step = update.child_by_field_name("right")
        if text(update.child_by_field_name("operator")) != "+=" or int_value(step) != 32 or \
                step is None:
            raise Illegal(f"the lane loop `{text(n).splitlines()[0][:60]}` does not step by "
                          "32", n)
        loops.append(n)
        steps.append(strip(step))
        starts.append(lane if lane is not None and strip(start).type == "identifier"
                      else f"(threadIdx.x % {LANES})")
        ok.add(strip(start).start_byte)
    uses = [n for n in plan.uses(lane) if not _declares(n)] if lane is not None else []
    for n in [*uses, *inline]:
        if n.start_byte in ok:
            continue
        up = n.parent
        while up is not None and up.type == "parenthesized_expression":
            up = up.parent
        parts = binary(up) if up is not None else None
        if parts is not None and parts[1] in ("==", "!=") and int_value(parts[2]) == 0:
            continue
        if up is not None and up.type == "unary_expression" and text(up).startswith("!"):
            continue
        raise Illegal(f"the lane is used in `{text(up)[:50]}` (only lane loops and "
                      "lane == 0 are modelled)", n)
    return loops, steps, starts, segments


def _declares(n: Node) -> bool:
    parent = n.parent
    return parent is not None and parent.type == "init_declarator" and \
        parent.child_by_field_name("declarator") == n


def _vectorize_lane_loops(plan: Plan, loops: list[Node], starts: list[str]) -> set[int]:
    """Vectorize each lane loop it can; the start bytes of those it did."""
    done: set[int] = set()
    for loop, lane in zip(loops, starts, strict=True):
        init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
        parts = binary(cond) if cond is not None else None
        body = loop.child_by_field_name("body")
        if init is None or parts is None or body is None:
            continue
        var, _d, _start = declared_name(init)
        region = Region(var, text(init.child_by_field_name("type")), body, parts[2], lane,
                        LANES, True, loop)
        try:
            for c in vectorize(plan, region, split=False, alias_guard=True):
                plan.constrain(c)
            done.add(loop.start_byte)
            plan.note("VEC", True, f"lane loop over {var} vectorized", loop)
        except Illegal as exc:
            plan.note("VEC", False, exc.reason, exc.node or loop)
    if done:
        plan.add_param("VEC", {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                               "description": "consecutive elements per lane per step "
                                              "(as written: 1)"}, f"{line(loops[0])}: lane loop")
        plan.add_param("ITEMS_PER_THREAD", {"kind": "choice", "values": [1, 2, 4],
                                            "default": 1,
                                            "description": "vectors each lane loads before "
                                                           "using any (as written: 1)"},
                       f"{line(loops[0])}: lane loop")
    return done
