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
``for (c = l; c < n; c += 32)`` (the step also ``c = c + 32``, or ``blockDim.x`` in a (32, F)
block; the condition also ``live && c < n``, guards the loop cannot change: :mod:`.lane_bound`;
a ``T c = l; while (c < n) { ...; c += 32; }`` alike) or segment loops ``for (c = base + l; c < end; c += 32)``
whose base and end are the same for every lane of the item (:mod:`.warp_segments`; ILP,
VEC and LDG over them: :mod:`.warp_chains`, :mod:`.warp_seg_vec`, :mod:`.warp_ldg`) and in ``l == 0`` / ``!l`` tests; warp shuffles only in the
shapes of :mod:`.warp_shuffles` (halving or doubling offset loops, a broadcast from lane 0).
No other ``threadIdx`` or ``blockDim`` read, no shared memory or barrier. A vote
(``__ballot_sync``, ``__any_sync``), a shuffle of another shape or a helper calling one
combines the 32 lanes of one warp only: there, and where lanes that shuffle read the lane
other than as modelled (``c = base + lane`` in a loop over a row's chunks: LANES cannot
follow it), the items stay a warp each and only the warps per block are lifted, with consecutive rows a warp (ROWS: :mod:`.warp_row_items`), the
read-only inputs of the warp's loops through ``__ldg`` (LDG) and their loads AHEAD
(:func:`_apply_whole_warps`).
Spellings read as the same meaning: threadIdx.x through a local copy (``tid``), the lane or
warp returned by a helper (``lane_id()``; any other call of a function reading the thread's
place is refused), F a ``constexpr`` of the body or ``blockDim.y`` of a (32, F) block,
``0 == lane``, and ``__activemask()`` as a shuffle's mask (see :func:`_masks_only`). A shuffle
inside a called function is refused (its offsets and mask would stay a warp's).

The transform gives each item ``LANES`` lanes (32 / LANES items per warp): the lane and the
item index divide by LANES, lane loops step by LANES, the offset loops start at LANES / 2,
and every shuffle names only its group (mask and width), so a group that returns early
never waits for another. ``WARPS_PER_BLOCK`` (the author's macro where F is one) sets the
block (``32 * W`` threads, or (32, W) with row ``threadIdx.y * (32 / LANES) + threadIdx.x /
LANES`` of the block's rows); ``VEC`` vectorizes lane loops (:func:`.vector.vectorize`), a loop writing a pointer
that is not ``__restrict__`` behind a run-time test per item (its written and read ranges the
same elements or disjoint, the loop as written otherwise); ``RUN_VEC`` loads the runs a lane
loop's fixed-trip inner loops read as vectors before each loop (:mod:`.warp_runs`); ``AHEAD``
loads a lane loop's next steps' reads before their bodies where VEC refuses the loop (a column
of a column-major matrix: :mod:`.warp_ahead`). Items are
assumed independent (the warp-to-item mapping changes with LANES). LANES = 32 and the written
F are the kernel as written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    calls,
    declared_name,
    int_expr_value,
    int_value,
    integer_macros,
    line,
    strip,
    terms,
    text,
    walk,
)
from workbench.templater.lane_bound import first_pass_bound, lane_bound
from workbench.templater.macros import IntegerMacro, guard_define
from workbench.templater.plan import Plan
from workbench.templater.reduce_consts import constant
from workbench.templater.rules import literal, scale_divisor
from workbench.templater.vector import Illegal, Region, vectorize
from workbench.templater.warp_ahead import NAME as AHEAD
from workbench.templater.warp_ahead import apply_ahead
from workbench.templater.warp_chains import apply_chains
from workbench.templater.warp_global import (
    GlobalItem,
    GridWarps,
    find_global_item,
    row_loop,
    step_of,
)
from workbench.templater.warp_ldg import apply_ldg
from workbench.templater.warp_regs import (
    REG_ROW,
    RowCache,
    apply_row_cache,
    find_row_cache,
)
from workbench.templater.warp_row_items import apply_rows
from workbench.templater.warp_runs import apply_runs
from workbench.templater.warp_scan import apply_warp_scan
from workbench.templater.warp_segments import SEGMENT_LANES_MIN, segment_lane
from workbench.templater.warp_shuffles import collective_helper, shuffle_calls, shuffle_loops
from workbench.templater.warp_slots import BARRIER, barrier_problem, warp_slots

LANES = "LANES"
_UNSAFE = ("__syncthreads", "__ballot", "__any", "__all", "__activemask", "__match",
           "__reduce", "__syncwarp")
GROUP_MASK = ("__device__ __forceinline__ unsigned wb_group_mask() {  // the lanes of this "
              "thread's group\n  return LANES == 32 ? 0xffffffffu : ((1u << (LANES % 32)) - 1u)"
              " << ((threadIdx.x & 31u) & ~(unsigned)(LANES - 1));\n}")


class LaneUse(Illegal):
    """The lane read other than as a lane loop's start or in ``lane == 0`` (``c = base +
    lane`` in a loop over a row's chunks): LANES cannot follow it, but each item can keep
    its warp, whose lanes read the same ``threadIdx.x % 32`` in a block of any warps."""


def _thread_x(plan: Plan, node: Node) -> bool:
    """``node`` is ``threadIdx.x`` or a local copy of it (``const int tid = threadIdx.x;``:
    the same value under another name, read as threadIdx.x by every test below)."""
    return plan.facts.is_thread(node, "x")


def _lane_split(plan: Plan, node: Node, op_div: bool) -> Node | None:
    """``threadIdx.x / 32`` | ``>> 5`` (op_div) or ``% 32`` | ``& 31`` (threadIdx.x or a copy
    of it), stripped, else None."""
    ret = _helper_return(plan, node)
    if ret is not None:  # lane_id() / warp_id(): a helper returning the split
        return strip(node) if _lane_split(plan, ret, op_div) is not None else None
    parts = binary(node)
    if parts is None or not _thread_x(plan, parts[0]):
        return None
    value = int_expr_value(parts[2])  # 31, WARP - 1, (1 << 5) - 1: the constant it is
    ops = {("/", 32), (">>", 5)} if op_div else {("%", 32), ("&", 31)}
    return strip(node) if (parts[1], value) in ops else None


def _helper_return(plan: Plan, node: Node) -> Node | None:
    """E of a call ``f()`` (no arguments) to a function of the file whose body is the one
    statement ``return E;`` (``__device__ int lane_id() { return threadIdx.x & 31; }``): the
    call is E wherever the kernel reads it. None for anything else."""
    node = strip(node)
    args = node.child_by_field_name("arguments") if node.type == "call_expression" else None
    if args is None or args.named_child_count:
        return None
    fn = plan.source.function_definitions().get(text(node.child_by_field_name("function")))
    body = fn.child_by_field_name("body") if fn is not None else None
    stmts = [c for c in body.named_children if c.type != "comment"] if body is not None else []
    if len(stmts) != 1 or stmts[0].type != "return_statement" or \
            not stmts[0].named_children:
        return None
    return strip(stmts[0].named_children[0])


def _thread_helpers(plan: Plan) -> list[Node]:
    """The kernel's calls to functions of the file that read threadIdx or blockDim
    (themselves or through the functions they call)."""
    defined = plan.source.function_definitions()

    def reads(name: str, seen: frozenset[str]) -> bool:
        fn = defined.get(name)
        if fn is None or name in seen:
            return False
        if any(n.type == "field_expression" and (builtin(n, "threadIdx") or
                                                 builtin(n, "blockDim")) for n in walk(fn)):
            return True
        return any(reads(c, seen | {name}) for c in calls(fn))

    return [c for c in walk(plan.body) if c.type == "call_expression" and
            reads(text(c.child_by_field_name("function")), frozenset())]


def _lane_value(plan: Plan, node: Node, two_d: bool) -> Node | None:
    """``node`` when it is the lane: ``threadIdx.x % 32`` (or ``& 31``), or, in a block of
    (32, R) threads, ``threadIdx.x`` itself."""
    if _lane_split(plan, node, op_div=False) is not None:
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
    div = _lane_split(plan, node, op_div=True)
    return (div, local) if div is not None else None


def apply_warp(plan: Plan, macros: dict[str, IntegerMacro]) -> bool:
    """Apply where the kernel has the shape above; notes why not where it almost has
    (``warpSize`` read as the 32 it is on every NVIDIA GPU)."""
    known = {m.name: m.value for m in macros.values()}
    helpers = plan.source.function_definitions().values()
    if "warpSize" in known or not (plan.uses("warpSize") or
                                   any("warpSize" in text(fn) for fn in helpers)):
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
    lane_def = next((d for d, v in reversed(defs) if _lane_value(plan, v, two_d) is not None),
                    None)
    defs += [(d, d.value) for d in plan.facts.defs.values()
             if d.value is not None and d.assigned and row_loop(plan, d) is not None]
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
                _note_no_item(plan)
                return False
            shape = _global_shape(plan, found)
            lane_def = lane_def or found.lane_def
        return _apply(plan, lane_def, shape, two_d)
    except Illegal as exc:
        decl = item_def[0].decl if item_def is not None else None
        plan.note(LANES, False, exc.reason, exc.node or decl)
        return False


def _note_no_item(plan: Plan) -> None:
    """Say why LANES is not lifted where the kernel splits threadIdx.x into warps and
    shuffles but names no item as this family reads one (a loop over rows, say)."""
    warp = next((n for n in walk(plan.body) if _lane_split(plan, n, op_div=True) is not None),
                None)
    if warp is not None and shuffle_calls(plan.body):
        plan.note(LANES, False, f"the warp `{text(warp)}` names no item `blockIdx.x * F + "
                  "warp` read once (nor the global warp index `(blockIdx.x * blockDim.x + "
                  "threadIdx.x) / 32`); other item walks are not modelled", warp)


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


def _block_rows(plan: Plan, node: Node) -> bool:
    """``node`` is ``blockDim.y`` of a (32, R) block: its R rows, a warp each."""
    return builtin(node, "blockDim") == "y" and len(plan.block) == 2 and \
        literal(plan.block[0]) == 32


def _warpstep_of(plan: Plan, node: Node | None) -> bool:
    """``node`` steps a lane loop by a warp: 32, or ``blockDim.x`` of a (32, R) block."""
    if node is None:
        return False
    return int_value(node) == 32 or (builtin(node, "blockDim") == "x" and
                                     len(plan.block) == 2 and literal(plan.block[0]) == 32)


def _factor_value(plan: Plan, node: Node) -> int | None:
    if _block_rows(plan, node):
        return literal(plan.block[1])
    if _block_warps(node):
        size = literal(plan.block[0]) if len(plan.block) == 1 else None
        return size // 32 if size is not None and size % 32 == 0 else None
    value = constant(plan, node)
    if value is None and strip(node).type == "identifier":
        # a constant of the kernel's own body (``constexpr int kWarps = 2;``, a const local
        # never assigned): the same number as the file-scope constexpr
        d = plan.facts.defs.get(text(strip(node)))
        words = {text(c) for c in d.decl.children} if d is not None else set()
        if d is not None and not d.assigned and not d.is_pointer and \
                words & {"const", "constexpr"}:
            value = int_value(d.value)
        if d is not None and not d.assigned and d.value is not None and \
                _block_warps(d.value):  # `wpb = blockDim.x / 32`
            value = _factor_value(plan, d.value)
    return value


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
    more: tuple[Node, ...] = ()  # F again, in a row loop's stride gridDim.x * F
    totals: tuple[GridWarps, ...] = ()  # the grid's warps, a global row loop's stride
    slots: tuple[Node, ...] = ()  # sizes of per-item __shared__ slots (in more too)


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
    slots: tuple[Node, ...] = ()
    if warp_local is not None:  # beyond the item only as a per-item shared slot s[w]
        wname, _n, _v = declared_name(warp_local)
        beyond = [u for u in plan.uses(wname) if not _declares(u) and
                  not (d.value.start_byte <= u.start_byte < d.value.end_byte)]
        slots = warp_slots(plan, wname, beyond)
    factor_parts = binary(offset)
    assert factor_parts is not None
    factor = strip(factor_parts[2] if builtin(factor_parts[0], "blockIdx") == "x"
                   else factor_parts[0])
    stride = row_loop(plan, d)
    more = _stride_factors(plan, d, factor, stride) if stride is not None else ()
    for size in slots:  # a slot an item: the array's size is the block's items
        if _factor_value(plan, size) != _factor_value(plan, factor):
            raise Illegal(f"the shared slots `{text(size)}` are not the items per block "
                          f"`{text(factor)}`", size)
    more = (*more, *slots)
    local = plan.facts.defs.get(text(factor)) if factor.type == "identifier" else None
    if local is not None and not local.assigned and local.value is not None and \
            _block_warps(local.value):  # `wpb = blockDim.x / 32`: the local's value follows
        factor, more = strip(local.value), ()
    f_value = _factor_value(plan, factor)
    # blockDim.x / 32 (a 1-D block's warps) or blockDim.y (a (32, R) block's rows)
    allowed = (factor,) if _block_warps(factor) or _block_rows(plan, factor) else ()
    if two_d:
        if f_value is None or literal(plan.block[1]) != f_value:
            raise Illegal(f"the block ({', '.join(plan.block)}) is not (32, `{text(factor)}`)",
                          d.decl)
    elif f_value is None or literal(plan.block[0]) != 32 * f_value:
        raise Illegal(f"the block ({plan.block[0]}) is not 32 x `{text(factor)}` warps", d.decl)
    macro = macros.get(text(factor)) if factor.type == "identifier" else None
    read = 1 + len([m for m in more if text(m) == text(factor)])  # item, stride, slots
    if local is not None and factor.type != "identifier":
        read = 2 if stride is not None else 1
        if len([u for u in plan.uses(local.name) if not _declares(u)]) != read:
            raise Illegal(f"`{local.name}` has other uses in the kernel; its meaning with "
                          "fewer lanes per item is not modelled", local.decl)
    elif macro is not None and len(plan.uses(macro.name)) != read:
        raise Illegal(f"`{macro.name}` has other uses; its meaning with fewer lanes per item "
                      "is not modelled", macro.definition)
    elif macro is None and factor.type == "identifier" and \
            len([u for u in plan.uses(text(factor)) if not _declares(u)]) != read:
        raise Illegal(f"`{text(factor)}` has other uses in the kernel; its meaning with fewer "
                      "lanes per item is not modelled", factor)
    return _Shape(d.decl, warp, factor, f_value, macro, (*allowed, *more), (), None, more,
                  slots=slots)


def _stride_factors(plan: Plan, d: object, factor: Node, stride: Node) -> tuple[Node, ...]:
    """The F of a row loop's stride ``gridDim.x * F`` (either order), F spelled as the
    item's: then every item of every block walks its own rows once, for any items per block
    (the stride is the grid's items). Raises Illegal for any other stride."""
    parts = binary(stride)
    if parts is not None and parts[1] == "*":
        for grid, f in ((parts[0], parts[2]), (parts[2], parts[0])):
            if builtin(grid, "gridDim") == "x" and text(strip(f)) == text(factor):
                return (strip(f),)
    raise Illegal(f"the row loop steps by `{text(stride)}`, not gridDim.x * `{text(factor)}` "
                  "(the grid's items)", d.decl)  # type: ignore[attr-defined]


def _global_shape(plan: Plan, found: GlobalItem) -> _Shape:
    """The global warp index: F is the launch block's warps (the kernel never names it)."""
    size = literal(plan.block[0])
    if size is None or size % 32:
        raise Illegal(f"the block ({plan.block[0]}) is not whole warps", found.item.decl)
    allowed = [found.index] + ([found.thread.value] if found.thread is not None and
                               found.thread.value is not None else [])
    allowed += [t.division for t in found.totals]
    return _Shape(found.item.decl, found.division, None, size // 32, None, tuple(allowed),
                  found.lanes, found.index, (), found.totals)


def _inline_lanes(plan: Plan, two_d: bool, skip: list[Node]) -> list[Node]:
    """Lane expressions written in place (``threadIdx.x % 32`` or, in a (32, R) block,
    ``threadIdx.x``) outside the spans in ``skip``."""
    spans = [(n.start_byte, n.end_byte) for n in skip]
    out: list[Node] = []
    for n in _thread_reads(plan):
        if any(a <= n.start_byte and n.end_byte <= b for a, b in spans):
            continue
        up = n.parent
        while up is not None and up.type == "parenthesized_expression":
            up = up.parent
        if up is not None and _lane_split(plan, up, op_div=False) is not None:
            out.append(strip(up))
        elif two_d:
            out.append(n)
    return out


def _is_mask_argument(node: Node) -> bool:
    """``node`` is the first argument (the mask) of a warp shuffle."""
    up = node.parent
    while up is not None and up.type == "parenthesized_expression":
        node, up = up, up.parent
    call = up.parent if up is not None and up.type == "argument_list" else None
    return call is not None and up is not None and up.named_children[0] == node and \
        text(call.child_by_field_name("function")).startswith("__shfl")


def _masks_only(plan: Plan) -> bool:
    """Every ``__activemask()`` of the kernel is a shuffle's mask, in place or through an
    unassigned local read only as one. Such a shuffle is one the family models (an offset
    loop or a broadcast, reached by every lane of the item: the item's guard is the same for
    its lanes and lane loops rejoin), so the active mask there is the whole warp, exactly what
    ``0xffffffff`` says; the rewrite names the item's group either way."""
    for c in walk(plan.body):
        if c.type != "call_expression" or text(c.child_by_field_name("function")) != \
                "__activemask":
            continue
        if _is_mask_argument(c):
            continue
        holder = next((d for d in plan.facts.defs.values() if d.value is not None and
                       strip(d.value) == c and not d.assigned), None)
        if holder is None or not all(_is_mask_argument(u) for u in plan.uses(holder.name)
                                     if not _declares(u)):
            return False
    return True


def _aliases(plan: Plan) -> list[Node]:
    """The values (``threadIdx.x``) of the kernel's local copies of threadIdx.x."""
    names = plan.facts.thread_alias["x"] - {"threadIdx.x"}
    return [strip(d.value) for n in sorted(names)
            if (d := plan.facts.defs.get(n)) is not None and d.value is not None]


def _thread_reads(plan: Plan) -> list[Node]:
    """Every read of threadIdx.x: the built-in, and each use of a local copy of it (the
    copies' own declarations excluded)."""
    names = plan.facts.thread_alias["x"] - {"threadIdx.x"}
    return [n for n in walk(plan.body)
            if (n.type == "field_expression" and builtin(n, "threadIdx") == "x") or
            (n.type == "identifier" and text(n) in names and not _declares(n))]


def _apply(plan: Plan, lane_def: object, shape: _Shape, two_d: bool) -> bool:
    warp, factor, f_value, macro = shape.warp, shape.factor, shape.f_value, shape.macro
    spans = [(n.start_byte, n.end_byte) for n in shape.allowed]
    slotted = {n.start_byte for n in shape.slots}  # a shared slot an item (.warp_slots)
    bad = sorted(c for c in calls(plan.body) if c.startswith(_UNSAFE) and
                 not (c == "__activemask" and _masks_only(plan)) and
                 not (c == BARRIER and slotted and barrier_problem(plan) is None))
    across = [c for c in bad if c.startswith(BARRIER)]
    if across or any(x.is_shared and not _slot_array(x, slotted)
                     for x in plan.facts.defs.values()):
        raise Illegal(f"the warps cooperate through {across[0] if across else '__shared__ memory'}")
    helper = collective_helper(plan, _UNSAFE)
    if helper is not None and _reaches_barrier(plan, helper):
        raise Illegal(f"`{text(helper)[:50]}` calls a function that reaches {BARRIER} (the "
                      "warps of a block cooperate there)", helper)
    local = _call_node(plan, bad[0]) if bad else helper  # a vote: one warp's lanes only
    for n in walk(plan.body):
        if n.type == "field_expression" and builtin(n, "blockDim") is not None and \
                not any(a <= n.start_byte and n.end_byte <= b for a, b in spans) and \
                not (two_d and _is_loopstep_of(n) and _warpstep_of(plan, n)):
            raise Illegal(f"`{text(n)}` is read; the block's shape changes with "
                          "WARPS_PER_BLOCK and LANES, which this lift does not model", n)
        if n.type == "field_expression" and builtin(n, "threadIdx") in ("y", "z") and \
                not (two_d and n.start_byte == warp.start_byte):
            raise Illegal(f"`{text(n)}` is read in `{text(n.parent)[:50]}` (only the item "
                          "index is modelled)", n)
    lane_value = lane_def.value if lane_def is not None else None  # type: ignore[attr-defined]
    lane = lane_def.name if lane_def is not None else None  # type: ignore[attr-defined]
    modelled = {strip(n).start_byte for n in (lane_value, warp) if n is not None}
    for c in _thread_helpers(plan):
        if c.start_byte not in modelled:
            raise Illegal(f"`{text(c)[:50]}` calls a function that reads the thread's place "
                          "(only `lane = f()` and the item's warp `f()` returning the lane or "
                          "the warp are modelled)", c)
    skip = [n for n in (lane_value, warp, *shape.allowed, *_aliases(plan)) if n is not None]
    inline = [*_inline_lanes(plan, two_d, skip), *shape.lanes]
    allowed = {(n.start_byte, n.end_byte) for n in [*skip, *inline]}
    for n in _thread_reads(plan):
        up: Node | None = n
        while up is not None and (up.start_byte, up.end_byte) not in allowed and up != plan.body:
            up = up.parent
        if up is None or up == plan.body:
            raise Illegal(f"threadIdx.x is read in `{text(n.parent)[:50]}` (only the lane and "
                          "the warp index are modelled)", n)
    if local is not None:
        return _apply_whole_warps(plan, shape, two_d, local)
    item, _n, _v = declared_name(shape.decl)
    try:
        loops, steps, starts, segments = _lane_loops(plan, lane, inline, item)
    except LaneUse as exc:  # a warp's lanes that combine stay a warp's: its warps per block
        combined = shuffle_calls(plan.body) or helper is not None
        if not combined:  # lanes that never exchange: other families model them
            raise
        plan.note(LANES, False, exc.reason, exc.node)
        return _apply_whole_warps(plan, shape, two_d, None)
    offsets, widths, broadcasts, tree = shuffle_loops(plan)
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
    for f in ([factor] if factor is not None else []) + list(shape.more):
        plan.rw.replace(f, f"({per_block})")
    for total in shape.totals:  # the grid's warps X / 32 -> its items X / LANES
        plan.rw.replace(total.division, f"(({text(total.index)}) / {LANES})")
    for n in [*([strip(lane_value)] if lane_value is not None else []), *inline]:
        plan.rw.replace(n, f"(threadIdx.x % {LANES})")
    for step in steps:
        plan.rw.replace(step, LANES)
    for start in offsets:
        plan.rw.replace(start.node, start.replacement)
    for t in tree:  # an unrolled tree: the steps at offsets below LANES
        plan.rw.insert(t.statement.start_byte, f"if ({t.offset} < {LANES}) ")
    for call in [*(c for s in offsets for c in s.shuffles), *broadcasts,
                 *(s.shuffle for s in tree)]:
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
    plan.note(LANES, True, f"{len(steps)} lane loop(s), {len(offsets)} shuffle loop(s), "
              f"{len(tree)} unrolled tree step(s) and "
              f"{len(broadcasts)} broadcast(s) follow the lanes per item; shuffles name only "
              "the item's group (mask and width)", shape.decl)
    if segments:
        apply_chains(plan, segments, LANES, vec=len(segments) == len(loops))
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
    kept = {p.loop.start_byte for p in cache.passes} if cache is not None else set()
    for lp in loops:  # the loops VEC refused and the row cache keeps no pass of
        if lp.start_byte not in vectorized | kept:
            _ahead_where_bounded(plan, lp, whole_warp=False)
    apply_runs(plan, loops)  # after the row cache: its kept passes read the runs too
    return True


def _apply_whole_warps(plan: Plan, shape: _Shape, two_d: bool, local: Node | None) -> bool:
    """Items per block alone where a warp's lanes combine (a vote ``__ballot_sync``, a
    ``__popc`` of it, ``__any_sync``, a shuffle of any shape, or a helper calling one):
    every such collective reaches the 32 lanes of one warp and none of another, so a block of
    W warps runs each item on the same 32 lanes, in the same order, as the written block
    does; only which block holds the item changes. The items stay a warp each (no LANES:
    a vote's bits are a warp's lanes), the grid divides by W and the block is W warps; then
    ROWS, LDG and AHEAD where legal (each notes why not). The same where the lane is read
    in any other way (``local`` None: :class:`LaneUse`, already noted)."""
    name = shape.macro.name if shape.macro is not None else "WARPS_PER_BLOCK"
    written = plan.grid[0]
    grid = scale_divisor(plan.grid[0], str(shape.f_value), name)
    if grid is None and shape.macro is not None:
        grid = scale_divisor(plan.grid[0], shape.macro.name, name)
    if grid is None:
        raise Illegal(f"grid rule {plan.grid[0]!r} does not divide by the items per block "
                      f"({shape.f_value})")
    plan.grid[0] = grid
    if two_d:
        plan.block[1] = name
    else:
        plan.block[0] = f"32 * {name}"
    plan.launch_bounds = f"32 * {name}"
    for f in ([shape.factor] if shape.factor is not None else []) + list(shape.more):
        if text(f) != name:
            plan.rw.replace(f, name)
    if shape.macro is not None:
        guard_define(plan, shape.macro, shape.f_value)
    plan.add_param(name, {"kind": "pow2", "min": 1, "max": 32, "default": shape.f_value,
                          "description": f"warps per block, an item a warp (as written: "
                                         f"{shape.f_value})"},
                   f"{line(shape.decl)}: {text(shape.decl)[:60]}")
    if local is not None:
        plan.note(LANES, False, f"`{text(local)[:50]}` combines the 32 lanes of one warp "
                  "(warp-local: no lane of another warp takes part); an item keeps its warp, so "
                  f"the warps per block ({name}) are lifted, not the lanes per item", local)
    apply_rows(plan, shape.decl, written, shape.f_value, name)  # consecutive rows a warp
    if "__shfl_up_sync" in text(plan.body) and apply_warp_scan(plan):
        return True  # the row's scan regenerated: its loads are the scan's own
    loops = _outer_loops(plan)
    apply_ldg(plan, loops, "warp's loop")  # read-only inputs through __ldg (LDG)
    for lp in loops:  # its steps' loads ahead (AHEAD), each lane's own reads
        _ahead_where_bounded(plan, lp, whole_warp=True)
    for lp in _outer_loops(plan, ("while_statement", "do_statement")):
        plan.note(AHEAD, False, f"the `{lp.type.split('_')[0]}` loop is not read as a counted "
                  "`for` (its test reads what the loop computes, or its counter moves other "
                  "than by one constant step at its end): its steps are not known ahead", lp)
    return True


def _ahead_where_bounded(plan: Plan, loop: Node, whole_warp: bool) -> None:
    """AHEAD on ``loop`` where its test is a bound its steps can be counted against (``j <
    n`` with invariant guards, or a ``do``'s first pass before it); else a note why not."""
    found = lane_bound(plan, loop) or first_pass_bound(plan, loop)
    if found is not None:
        apply_ahead(plan, loop, found, whole_warp=whole_warp)
        return
    cond = loop.child_by_field_name("condition")
    plan.note(AHEAD, False, f"the loop's test `{text(cond)[:60] if cond else ''}` is not `j < "
              "n` (with guards the loop cannot change, or `j == start ||` before it for a "
              "do's first pass): the steps a group loads ahead could not be tested", loop)


def _outer_loops(plan: Plan, which: tuple[str, ...] = ("for_statement",)) -> list[Node]:
    """The kernel's loops of the kinds ``which`` (``for`` loops) inside no other loop."""
    kinds = ("for_statement", "while_statement", "do_statement")
    out = []
    for n in walk(plan.body):
        up = n.parent
        while up is not None and up != plan.body and up.type not in kinds:
            up = up.parent
        if n.type in which and (up is None or up == plan.body):
            out.append(n)
    return out


def _call_node(plan: Plan, name: str) -> Node | None:
    """The kernel's first call of ``name``."""
    return next((c for c in walk(plan.body) if c.type == "call_expression" and
                 text(c.child_by_field_name("function")) == name), None)


def _reaches_barrier(plan: Plan, call: Node) -> bool:
    """The function ``call`` calls reaches a block barrier (itself or through its calls)."""
    defined = plan.source.function_definitions()
    todo, seen = [text(call.child_by_field_name("function"))], set()
    while todo:
        fn = defined.get(name := todo.pop())
        if fn is None or name in seen:
            continue
        seen.add(name)
        found = calls(fn)
        if any(c.startswith(BARRIER) for c in found):
            return True
        todo += sorted(found)
    return False


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
        var, _d, start = declared_name(init)
        if start is None:
            continue
        if not _is_lane(start, lane, inline):
            at = segment_lane(plan, n, start, lambda x: _is_lane(x, lane, inline), item)
            if at is None:
                continue
            segments.append(n)
            start = at
        step = step_of(update, var)
        if not _warpstep_of(plan, step) or step is None:
            raise Illegal(f"the lane loop `{text(n).splitlines()[0][:60]}` does not step by "
                          "32", n)
        loops.append(n)
        steps.append(strip(step))
        starts.append(lane if lane is not None and strip(start).type == "identifier"
                      else f"(threadIdx.x % {LANES})")
        ok.add(strip(start).start_byte)
    for start, step in _while_lane_loops(plan, lambda x: _is_lane(x, lane, inline)):
        steps.append(step)
        ok.add(start.start_byte)
    uses = [n for n in plan.uses(lane) if not _declares(n)] if lane is not None else []
    for n in [*uses, *inline]:
        if n.start_byte in ok:
            continue
        up = n.parent
        while up is not None and up.type == "parenthesized_expression":
            up = up.parent
        parts = binary(up) if up is not None else None
        if parts is not None and parts[1] in ("==", "!=") and \
                0 in (int_value(parts[2]), int_value(parts[0])):  # lane == 0, 0 == lane
            continue
        if up is not None and up.type == "unary_expression" and text(up).startswith("!"):
            continue
        raise LaneUse(f"the lane is used in `{text(up)[:50]}` (only lane loops and "
                      "lane == 0 are modelled)", n)
    return loops, steps, starts, segments


def _is_loopstep_of(node: Node) -> bool:
    """``node`` is the right side of a ``for`` loop's ``v += node`` update."""
    up = node.parent
    while up is not None and up.type in ("binary_expression", "parenthesized_expression"):
        up = up.parent
    loop = up.parent if up is not None else None
    if up is None or up.type != "assignment_expression" or loop is None or \
            loop.type != "for_statement" or loop.child_by_field_name("update") != up:
        return False
    init = loop.child_by_field_name("initializer")
    var = declared_name(init)[0] if init is not None and init.type == "declaration" else ""
    found = step_of(up, var)
    return found is not None and found == node


def _while_lane_loops(plan: Plan, is_lane: Callable[[Node], bool]) -> list[tuple[Node, Node]]:
    """(lane, step literal) of each lane loop written as ``T c = lane; while (c < n) { ...;
    c += 32; }``: the same walk as the ``for`` form when ``c`` is assigned only by that last
    statement and the body has no ``continue`` (which would skip the step). Such loops follow
    LANES through their step; they are not vectorized nor kept in registers."""
    out: list[tuple[Node, Node]] = []
    for n in walk(plan.body):
        if n.type != "declaration":
            continue
        var, _d, start = declared_name(n)
        after = n.next_named_sibling
        if start is None or not is_lane(start) or after is None or \
                after.type != "while_statement":
            continue
        cond, body = after.child_by_field_name("condition"), after.child_by_field_name("body")
        cond = cond.child_by_field_name("value") or cond if cond is not None else None
        parts = binary(strip(cond)) if cond is not None else None
        if parts is None or parts[1] not in ("<", "<=") or text(strip(parts[0])) != var or \
                body is None:
            continue
        last = body.named_children[-1] if body.named_children else None
        update = last.named_children[0] if last is not None and \
            last.type == "expression_statement" and last.named_children else None
        step = step_of(update, var) if update is not None else None
        if step is None:
            continue
        writes = [w for w in walk(plan.body) if w.type in ("assignment_expression",
                                                           "update_expression") and
                  text(w.child_by_field_name("left") or
                       w.child_by_field_name("argument")) == var]
        if int_value(step) != 32 or step is None or len(writes) != 1 or \
                any(w.type == "continue_statement" for w in walk(body)):
            raise Illegal(f"the lane loop `while {text(cond)[:40]}` is not stepped only by "
                          f"`{var} += 32` as its last statement", after)
        out.append((strip(start), strip(step)))
    return out


def _slot_array(d: object, slotted: set[int]) -> bool:
    """Whether the shared array ``d`` is one of the shape's per-item slots."""
    return any(d.decl.start_byte <= b < d.decl.end_byte  # type: ignore[attr-defined]
               for b in slotted)


def _declares(n: Node) -> bool:
    parent = n.parent
    return parent is not None and parent.type == "init_declarator" and \
        parent.child_by_field_name("declarator") == n


def _vectorize_lane_loops(plan: Plan, loops: list[Node], starts: list[str]) -> set[int]:
    """Vectorize each lane loop it can; the start bytes of those it did."""
    done: set[int] = set()
    for loop, lane in zip(loops, starts, strict=True):
        init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
        body = loop.child_by_field_name("body")
        if init is None or cond is None or body is None:
            continue
        var, _d, _start = declared_name(init)
        found = lane_bound(plan, loop)
        if found is None:
            plan.note("VEC", False, f"the lane loop's condition `{text(cond)[:40]}` is not "
                      f"`{var} < bound` (beside guards the loop cannot change)", loop)
            continue
        region = Region(var, text(init.child_by_field_name("type")), body, found.bound, lane,
                        LANES, True, loop, found.guards)
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
