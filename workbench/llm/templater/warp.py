"""Warp-per-item kernels (a warp per row or group): LANES per item, items per block, VEC.

Recognised on the parse, whatever the spelling: a lane ``l = threadIdx.x % 32`` (or
``& 31``), an item ``r = blockIdx.x * F + threadIdx.x / 32`` (or ``>> 5``, or through a local
warp index), a launch block of ``32 * F`` threads and a grid rule dividing by F; the lane
used only to start lane loops ``for (c = l; c < n; c += 32)`` and in ``l == 0`` tests; warp
shuffles only inside offset loops ``for (o = 16; o > 0; o >>= 1 | o /= 2)``.

The transform gives each item ``LANES`` lanes (32 / LANES items per warp): the lane and the
item index divide by LANES, lane loops step by LANES, the offset loops start at LANES / 2,
and every shuffle names only its group (mask and width), so a group that returns early
never waits for another. ``WARPS_PER_BLOCK`` (the author's macro where F is one) sets the
block; ``VEC`` vectorizes lane loops (:func:`.vector.vectorize`), a loop writing a pointer
that is not ``__restrict__`` behind a run-time test per item (its written and read ranges the
same elements or disjoint, the loop as written otherwise). Items are assumed independent (the
warp-to-item mapping changes with LANES). LANES = 32 and the written F are the kernel as
written.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.llm.templater.analysis import (
    binary,
    block_offset,
    builtin,
    calls,
    declared_name,
    int_value,
    line,
    strip,
    terms,
    text,
    walk,
)
from workbench.llm.templater.macros import IntegerMacro, guard_define
from workbench.llm.templater.plan import Plan
from workbench.llm.templater.rules import literal, scale_divisor
from workbench.llm.templater.vector import Illegal, Region, vectorize

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


def apply_warp(plan: Plan, macros: dict[str, IntegerMacro]) -> bool:
    """Apply where the kernel has the shape above; notes why not where it almost has."""
    if len(plan.block) != 1 or literal(plan.block[0]) is None or not plan.grid:
        return False
    lane_def = item_def = None
    splits: list[Node] = []
    for d in plan.facts.defs.values():
        if d.value is None or d.assigned:
            continue
        if _lane_split(d.value, op_div=False) is not None:
            lane_def = d
        for _s, t in terms(d.value):
            if block_offset(t, "x") is not None:
                item_def = (d, t)
    if lane_def is None or lane_def.value is None or item_def is None:
        return False
    try:
        return _apply(plan, macros, lane_def.name, lane_def.value, item_def, splits)
    except Illegal as exc:
        plan.note(LANES, False, exc.reason, exc.node or item_def[0].decl)
        return False


def _apply(plan: Plan, macros: dict[str, IntegerMacro], lane: str, lane_value: Node,
           item: tuple, splits: list[Node]) -> bool:
    d, offset = item
    parts = [t for _s, t in terms(d.value)]
    warp_terms = [t for t in parts if t.start_byte != offset.start_byte]
    if len(parts) != 2:
        raise Illegal(f"`{text(d.value)}` is not blockIdx.x * F + (threadIdx.x / 32)", d.decl)
    warp = warp_terms[0]
    if warp.type == "identifier":  # a local warp index
        wd = plan.facts.defs.get(text(warp))
        if wd is None or wd.value is None or wd.assigned:
            raise Illegal(f"`{text(warp)}` is not threadIdx.x / 32", d.decl)
        warp = wd.value
    div = _lane_split(warp, op_div=True)
    if div is None:
        raise Illegal(f"`{text(d.value)}` is not blockIdx.x * F + threadIdx.x / 32", d.decl)
    factor_parts = binary(offset)
    assert factor_parts is not None
    factor = strip(factor_parts[2] if builtin(factor_parts[0], "blockIdx") == "x"
                   else factor_parts[0])
    f_value = int_value(factor)
    block = literal(plan.block[0])
    if f_value is None or block != 32 * f_value:
        raise Illegal(f"the block ({plan.block[0]}) is not 32 x `{text(factor)}` warps", d.decl)
    bad = sorted(c for c in calls(plan.body) if c.startswith(_UNSAFE))
    if bad or any(x.is_shared for x in plan.facts.defs.values()):
        raise Illegal(f"the warps cooperate through {bad[0] if bad else '__shared__ memory'}")
    thread_uses = [n for n in walk(plan.body) if builtin(n, "threadIdx") == "x"
                   and n.type == "field_expression"]
    allowed = {(lane_value.start_byte, lane_value.end_byte), (div.start_byte, div.end_byte)}
    for n in thread_uses:
        up = n.parent
        while up is not None and (up.start_byte, up.end_byte) not in allowed and up != plan.body:
            up = up.parent
        if up is None or up == plan.body:
            raise Illegal(f"threadIdx.x is read in `{text(n.parent)[:50]}` (only the lane and "
                          "the warp index are modelled)", n)
    loops, steps = _lane_loops(plan, lane)
    offsets = _shuffle_loops(plan)
    # grid: ceil_div(X, F) -> ceil_div(X, W * (32 // LANES))
    macro = macros.get(text(factor)) if factor.type == "identifier" else None
    if macro is not None and len(plan.uses(macro.name)) != 1:
        raise Illegal(f"`{macro.name}` has other uses; its meaning with fewer lanes per item "
                      "is not modelled", macro.definition)
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
    plan.block[0] = f"32 * {name}"
    plan.launch_bounds = f"32 * {name}"
    plan.rw.replace(factor, f"({per_block})")
    plan.rw.replace(div, f"(threadIdx.x / {LANES})")
    plan.rw.replace(strip(lane_value), f"(threadIdx.x % {LANES})")
    for step in steps:
        plan.rw.replace(step, LANES)
    for start, shuffles in offsets:
        plan.rw.replace(start, f"({LANES} / 2)")
        for call in shuffles:
            args = call.child_by_field_name("arguments")
            assert args is not None
            plan.rw.replace(args.named_children[0], "wb_group_mask()")
            plan.rw.insert(args.end_byte - 1, f", {LANES}")
    plan.helper(GROUP_MASK)
    if macro is not None:
        guard_define(plan, macro, f_value)
    plan.add_param(name, {"kind": "pow2", "min": 1, "max": 32, "default": f_value,
                          "description": f"warps per block (as written: {f_value})"},
                   f"{line(d.decl)}: {text(d.decl)[:60]}")
    plan.add_param(LANES, {"kind": "pow2", "min": 4, "max": 32, "default": 32,
                           "description": "lanes per item, 32 / LANES items per warp "
                                          "(as written: 32, a warp per item)"},
                   f"{line(lane_value)}: {text(lane_value)}")
    plan.note(LANES, True, f"{len(loops)} lane loop(s) and {len(offsets)} shuffle loop(s) "
              "follow the lanes per item; shuffles name only the item's group", d.decl)
    _vectorize_lane_loops(plan, loops, lane)
    return True


def _lane_loops(plan: Plan, lane: str) -> tuple[list[Node], list[Node]]:
    """Loops ``for (c = lane; c < n; c += 32)`` and their step literals; every other use of
    the lane must be ``lane == 0`` (or != 0)."""
    loops, steps, ok = [], [], set()
    for n in walk(plan.body):
        if n.type != "for_statement":
            continue
        init, update = n.child_by_field_name("initializer"), n.child_by_field_name("update")
        if init is None or update is None or init.type != "declaration":
            continue
        _var, _d, start = declared_name(init)
        if start is None or text(strip(start)) != lane:
            continue
        step = update.child_by_field_name("right")
        if text(update.child_by_field_name("operator")) != "+=" or int_value(step) != 32 or \
                step is None:
            raise Illegal(f"the lane loop `{text(n).splitlines()[0][:60]}` does not step by "
                          "32", n)
        loops.append(n)
        steps.append(strip(step))
        ok.add(strip(start).start_byte)
    for n in plan.uses(lane):
        if n.start_byte in ok or _declares(n):
            continue
        parts = binary(n.parent) if n.parent is not None else None
        if parts is not None and parts[1] in ("==", "!=") and int_value(parts[2]) == 0:
            continue
        raise Illegal(f"the lane is used in `{text(n.parent)[:50]}` (only lane loops and "
                      "lane == 0 are modelled)", n)
    return loops, steps


def _declares(n: Node) -> bool:
    parent = n.parent
    return parent is not None and parent.type == "init_declarator" and \
        parent.child_by_field_name("declarator") == n


def _shuffle_loops(plan: Plan) -> list[tuple[Node, list[Node]]]:
    """(start literal 16, shuffle calls) of each ``for (o = 16; o > 0; o >>= 1 | o /= 2)``
    holding the shuffles; a shuffle elsewhere is refused."""
    out: list[tuple[Node, list[Node]]] = []
    seen: set[int] = set()
    for n in walk(plan.body):
        if n.type != "for_statement":
            continue
        init, update = n.child_by_field_name("initializer"), n.child_by_field_name("update")
        body = n.child_by_field_name("body")
        if init is None or update is None or body is None:
            continue
        _var, _d, start = declared_name(init) if init.type == "declaration" else ("", None, None)
        shuffles = [c for c in walk(body) if c.type == "call_expression" and
                    text(c.child_by_field_name("function")).startswith("__shfl")]
        if not shuffles or start is None or int_value(start) != 16:
            continue
        op, right = text(update.child_by_field_name("operator")), \
            int_value(update.child_by_field_name("right"))
        if (op, right) not in ((">>=", 1), ("/=", 2)):
            continue
        for call in shuffles:
            fn = text(call.child_by_field_name("function"))
            args = call.child_by_field_name("arguments")
            nargs = len(args.named_children) if args is not None else 0
            if fn not in ("__shfl_xor_sync", "__shfl_down_sync", "__shfl_sync") or nargs != 3:
                raise Illegal(f"`{text(call)[:50]}` is not a 3-argument xor/down shuffle", call)
            seen.add(call.start_byte)
        out.append((strip(start), shuffles))
    for c in walk(plan.body):
        if c.type == "call_expression" and text(c.child_by_field_name("function")).startswith(
                "__shfl") and c.start_byte not in seen:
            raise Illegal(f"the shuffle `{text(c)[:50]}` is outside an offset loop "
                          "`for (o = 16; o > 0; o >>= 1)`", c)
    return out


def _vectorize_lane_loops(plan: Plan, loops: list[Node], lane: str) -> None:
    done = 0
    for loop in loops:
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
            done += 1
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
