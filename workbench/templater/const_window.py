"""LANE_WINDOW: consecutive outer elements per thread of the lane-inner layout, the input
values their taps share read once, through a register window.

Where :mod:`.const_items` gives a thread ITEMS outer elements (pixels) of its lane
(channel), it spaces them a block apart (item i of block b takes the pixels of block ``b *
ITEMS + i`` as written), so neighbouring pixels belong to other threads and every pixel
loads its whole neighbourhood again: a 3 x 3 depthwise filter loads 9 values a pixel. Known
practice for channels-last depthwise filters is the opposite walk: a thread takes ITEMS
*consecutive* pixels of its channel and keeps the input column it loaded for one pixel in
registers for the next, so a pixel of a row costs one new load per tap row instead of one per
tap (3 instead of 9). A warp's accesses per item stay what they were where a warp is the
lanes of one pixel (K a multiple of 32 lanes); with fewer lanes a warp's pixels lie ITEMS
apart (the tune decides).

``LANE_WINDOW = 0`` keeps the block-spaced items as written; ``1`` makes the items of a
thread consecutive (``outer = (blockIdx.x * P + thread's outer index) * ITEMS + i``: the same
pixels a block, in another order) and reads each windowed input through
``wb_once(have[slot], win[slot], &in[index])``: the first output that reads a slot loads it,
later ones read the register (the kernel's own bounds checks decide every read, so nothing is
loaded that the kernel as written does not load). Where :mod:`.const_rows` gave the thread
OUT_Y consecutive rows, the window spans them too (a 3 x 3 filter over 4 x 8 outputs loads
6 x 10 values instead of 288).

A read qualifies where, on the parse, its index (single-assignment locals expanded, casts
stripped) is a polynomial in which the outer index ``x`` appears only as ``x + e`` for the
counter ``e`` of one enclosing constant-trip ``for`` loop inside the items (the same
derivative ``S``, free of both); the row ``y`` likewise as ``y + d`` (or alone: then a slot
per row, nothing shared along it); every other term is made of the counters of enclosing
constant-trip loops inside the items (the slot's other dimensions) and of values the same
across a thread's outputs (scalar parameters, the thread's and block's indices, locals
declared before the items and never assigned). Then two reads with one slot read one
address: slot ``[other counters][r + d - d0][i + e - e0]``. The input is a pointer
parameter the kernel only reads (``in[index]``, never stored, its address never taken;
``__ldg`` where it is ``const``), so the value a slot holds is the one every later read
would load; as with the other window lifts, the input is assumed not to alias the output
(an in-place depthwise filter races between the kernel's own threads). The loops whose
counters index the window, and the generic wrap's items loop, get ``#pragma unroll``
(constant slot indices keep the window in registers); a value and a flag a slot, the
window's slots times the block's threads stay within half the register file (a constraint).
Each output sums the same values in the same order: bit-identical.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import declared_name, int_value, text, walk
from workbench.templater.const_inner import (
    FIRST_NOTE,
    Walk,
    emit_interior,
    plan_interior,
    plan_loads_first,
)
from workbench.templater.const_items import THREADS, LaneLayout, items_name
from workbench.templater.const_lanes import declaration_of
from workbench.templater.const_regs import OWN_REGS, REGISTERS, Counter
from workbench.templater.const_rows import Rows
from workbench.templater.item_state import assigned_names, trip_count
from workbench.templater.lane_vec import FLOAT, LaneVec
from workbench.templater.lane_vec import KNOB as VEC_KNOB
from workbench.templater.plan import Plan
from workbench.templater.read_only_loads import LDG_TYPES
from workbench.templater.regtile import single_assignment_values
from workbench.templater.rewrite import Rewriter
from workbench.templater.stencil import Poly, add, derivative, mul, poly_of, scale
from workbench.templater.stencil_rows import _ONCE, _ONCE_LDG
from workbench.templater.vector import Illegal

KNOB = "LANE_WINDOW"
INNER_NOTE = "WINDOW_INTERIOR"
#: Window values a thread may hold at the largest items count (each with a predicate flag):
#: a 3 x 3 filter over 8 pixels holds 3 x 10.
MAX_WORDS = 64
_BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")


@dataclass(frozen=True)
class Axis:
    """A walk the thread's outputs take: the local that moves (the outer index, the row),
    the loop counter over its steps, the knob of its count."""

    local: str
    counter: str
    knob: str


@dataclass(frozen=True)
class Windowed:
    """One read ``in[index]`` through a window: per axis the tap counter that moves with it,
    the other counters (slot dimensions), and the window's key (reads with one key share)."""

    read: Node
    along: tuple[tuple[Axis, Counter | None], ...]  # None: no tap moves with it
    others: tuple[Counter, ...]
    key: tuple[object, ...]


def apply_lane_window(plan: Plan, layout: LaneLayout, rows: Rows | None = None,
                      vec: LaneVec | None = None, regs: str | None = None) -> None:
    """Offer LANE_WINDOW where the items loop runs over blockIdx.x and some input read is
    shared between neighbouring pixels (and rows, where :mod:`.const_rows` gave the thread
    several); note why not otherwise. Where LANE_VEC (``vec``) covers a read, its slots hold
    the lane's channels (LANE_VEC registers each)."""
    try:
        value, item = _outer_value(plan, layout)
        axes = [Axis(_local(layout.outer_decl), item, items_name(plan))]
        if rows is not None:
            axes.append(Axis(rows.name, rows.counter, rows.knob))
        reads = _windowed_reads(plan, layout, axes)
    except Illegal as exc:
        plan.note(KNOB, False, exc.reason, exc.node)
        return
    windows: dict[tuple[object, ...], list[Windowed]] = {}
    for r in reads:
        windows.setdefault(r.key, []).append(r)
    least = sum(_slots(plan, group[0], min) for group in windows.values())
    most = sum(_slots(plan, group[0], max) for group in windows.values())
    if least > MAX_WORDS:
        plan.note(KNOB, False, f"the window takes {least} registers a thread at one item, "
                  f"over {MAX_WORDS}", reads[0].read)
        return
    _emit(plan, layout, (value, item), list(windows.values()), vec)
    plain = " + ".join(f"({_slots_rule(group[0])})" for group in windows.values())
    _interior(plan, layout, rows, item, list(windows.values()),
              _interior_fits(plan, plain, vec, list(windows.values()), regs))
    first = reads[0]
    items = axes[0].knob
    plan.add_param(KNOB, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": f"1: a thread's {items} outer elements are "
                          "consecutive and the input values their taps share are loaded "
                          "once, into a register window (0: a block apart, as written)"},
                   f"{first.read.start_point.row + 1}: {text(first.read)[:60]}")
    rule = " + ".join(f"({_slots_rule(group[0])})" for group in windows.values())
    if most > MAX_WORDS:
        plan.constrain(f"{KNOB} == 0 or {rule} <= {MAX_WORDS}")
    # LANE_VEC's slots hold the lane's channels: LANE_VEC registers a slot against the
    # register file, not against MAX_WORDS (the slots a thread walks): a slot lives from its
    # first read to its last in the unrolled walk (dwconv3_nhwc's 60 slots x 4 channels took
    # 107 registers, no spill; ptxas -v, sm_90)
    if any(_wide(vec, group[0]) for group in windows.values()):
        rule = " + ".join(f"({_slots_rule(group[0])})" + (
            f" * {VEC_KNOB}" if _wide(vec, group[0]) else "") for group in windows.values())
    if plan.launch_bounds is not None:
        # a value and a flag a slot, the block's threads at most half the register file
        # (64 K registers an SM): the kernel's own registers keep the other half
        plan.constrain(f"{KNOB} == 0 or ({rule}) * ({plan.launch_bounds}) <= {REGISTERS // 2}")
        if _min_blocks_follow(plan):
            # under a minimum of resident blocks the cap is the register file over their
            # threads: the window beside the kernel's own registers must fit it (82
            # registers at 60 slots, 54 at 24; ptxas -v, sm_90)
            # LANE_REGS's entries (``regs``) live across the same walk: they count too (the
            # interior copy keeps every slot live in straight-line code: 2 channels, 2 x 2
            # outputs, 512 threads x 2 blocks with the taps in registers spilled 12 bytes
            # under the 64-register cap; without them 61 registers; ptxas -v, sm_90)
            held = f" + LANE_REGS * ({regs})" if regs is not None and "LANE_REGS" in \
                plan.params else ""
            plan.constrain(f"{KNOB} == 0 or MIN_BLOCKS_PER_SM == 0 or {rule}{held} + "
                           f"{OWN_REGS} <= {REGISTERS} // (({plan.launch_bounds}) * "
                           "MIN_BLOCKS_PER_SM)")
    walks = ", ".join(f"`{a.local}` along `{c.name}`" if c is not None else
                      f"`{a.local}` (a slot per step)" for a, c in first.along)
    plan.note(KNOB, True, f"{len(reads)} input read(s) move with {walks}: 1 walks "
              "consecutive outputs and loads each shared value once (a register window)",
              first.read)


def _interior_fits(plan: Plan, plain: str, vec: LaneVec | None, windows: list[list[Windowed]],
                   regs: str | None) -> str:
    """The preprocessor test under which the interior copy is written: its straight-line
    walk issues every slot's load early, each holding its value (LANE_VEC registers) and its
    64-bit address's share while in flight, beside LANE_REGS's entries and the thread's own
    registers, all within the cap the launch bounds set (65536 over the block's threads
    times the minimum of resident blocks). Above it the window keeps its one general copy,
    as before (at one channel, 8 x 1 outputs under a 64-register cap the interior copy alone
    spilled 16 bytes, 8 x 4 with the taps under 128 spilled 8; ptxas -v, sm_90)."""
    if plan.launch_bounds is None:
        return "1"
    wide = " + ".join(f"({_slots_rule(g[0])})" + (f" * {VEC_KNOB}" if _wide(vec, g[0]) else "")
                      for g in windows)
    held = f" + LANE_REGS * ({regs})" if regs is not None and "LANE_REGS" in plan.params \
        else ""
    blocks = "(MIN_BLOCKS_PER_SM > 0 ? MIN_BLOCKS_PER_SM : 1)" if _min_blocks_follow(plan) \
        else "1"
    need = f"{wide} + {plain}{held} + {OWN_REGS}"
    # 255: the registers a thread can address at all
    return f"{need} <= 255 && {need} <= {REGISTERS} / (({plan.launch_bounds}) * {blocks})"


def _interior(plan: Plan, layout: LaneLayout, rows: Rows | None, item: str,
              windows: list[list[Windowed]], fits: str) -> None:
    """The interior copy of the walk (:mod:`.const_inner`): without it every slot's flag is
    a runtime value; noted either way."""
    reads = [r.read for group in windows for r in group]
    stmts = [c for c in plan.body.named_children if c.type != "comment"]
    header = f"for (int {item} = 0; {item} < {items_name(plan)}; ++{item})"
    row = None if rows is None else (
        f"for (int {rows.counter} = 0; {rows.counter} < {rows.knob}; ++{rows.counter})",
        rows.decl, f"{rows.name} >= {rows.bound}", rows.inside)
    walk_ = Walk(layout.outer_decl, stmts[-1], header, row)
    try:
        tests = plan_interior(plan, walk_, reads)
    except Illegal as exc:
        plan.note(INNER_NOTE, False, f"{exc.reason} (the window keeps one copy, its flags "
                  "runtime values)", exc.node)
        return
    stores = _loads_first(plan, walk_)
    # after the loads-first pass every slot the checked copy reads is loaded: it reads them
    kept = "\n".join(f"#undef wb_win{k}_read\n#define wb_win{k}_read(at) wb_win{k}{_slot(g[0])}"
                     for k, g in enumerate(windows))
    emit_interior(plan, walk_, tests, KNOB, fits, None if stores is None else (stores, kept))
    plan.note(INNER_NOTE, True, f"with {KNOB} 1 a thread whose {len(tests)} bounds test(s) "
              "hold at every item, row and tap (a warp's vote on the device) runs the walk "
              "without them: the window's flags are constants there", layout.outer_decl)


def _loads_first(plan: Plan, walk_: Walk) -> list[Node] | None:
    """The checked copy's loads-first pass (:func:`.const_inner.plan_loads_first`): its
    stores, or None where it is refused (noted either way)."""
    try:
        stores = plan_loads_first(plan, walk_)
    except Illegal as exc:
        plan.note(FIRST_NOTE, False, f"{exc.reason} (the checked copy loads each slot at its "
                  "first use)", exc.node)
        return None
    plan.note(FIRST_NOTE, True, f"with {KNOB} 1 a thread at the image's edge walks its "
              f"items once with its {len(stores)} store(s) dead code first, so each slot its "
              "checks let through is loaded before the walk that uses it (the loads in "
              "flight together, not one at a time behind its sums)", walk_.first)
    return stores


def _wide(vec: LaneVec | None, w: Windowed) -> bool:
    """The window's slots hold a lane's LANE_VEC channels."""
    return vec is not None and vec.covers(w.read)


def _min_blocks_follow(plan: Plan) -> bool:
    """MIN_BLOCKS_PER_SM will be lifted with the block's ``__launch_bounds__``
    (:func:`.semantic._launch_bounds`): the author gave no minimum of their own."""
    fn = plan.source.function_node(plan.kernel)
    bounds = next((c for c in fn.children if c.type == "launch_bounds"), None)
    return bounds is None or len(bounds.named_children) <= 1


def _local(decl: Node) -> str:
    return declared_name(decl)[0]


def _slots(plan: Plan, w: Windowed, pick: Callable[[list[int]], int]) -> int:
    """Window values at the knobs' smallest or largest counts."""
    out = math.prod(c.trips for c in w.others)
    for axis, c in w.along:
        out *= pick(plan.params[axis.knob].spec.get("values", [1])) + _reach(c)
    return out


def _reach(c: Counter | None) -> int:
    """The window's extra slots along an axis: the taps' reach (none where no tap moves)."""
    return c.trips - 1 if c is not None else 0


def _at(axis: Axis, c: Counter | None) -> str:
    return f"[{axis.counter} + ({c.name}) - ({c.start})]" if c is not None else \
        f"[{axis.counter}]"


def _slots_rule(w: Windowed) -> str:
    factors = [str(math.prod(c.trips for c in w.others))] + \
        [f"({axis.knob} + {_reach(c)})" for axis, c in w.along]
    return " * ".join(factors)


def _outer_value(plan: Plan, layout: LaneLayout) -> tuple[Node, str]:
    """The outer declaration's value and the counter of the items loop around it (const_items'
    own, or the generic wrap's: the edit that made blockIdx.x ``(blockIdx.x * ITEMS + i)``)."""
    bx = layout.block_idx
    counters = [m.group(1) for e in plan.rw.edits if (e.start, e.end) == (bx.start_byte,
                                                                          bx.end_byte)
                for m in [_ITEM_EDIT.fullmatch(e.text.strip())] if m is not None]
    if len(counters) != 1:
        raise Illegal("no items loop over blockIdx.x (the outer elements keep their walk)",
                      layout.outer_decl)
    for d in layout.outer_decl.children_by_field_name("declarator"):
        value = d.child_by_field_name("value")
        if value is not None:
            return value, counters[0]
    raise Illegal("the outer declaration has no value", layout.outer_decl)


#: The items loops' edit of blockIdx.x: ``(blockIdx.x * ITEMS + counter)``.
_ITEM_EDIT = re.compile(r"\(blockIdx\.x \* \w+ \+ (wb_\w+)\)")


def _windowed_reads(plan: Plan, layout: LaneLayout, axes: list[Axis]) -> list[Windowed]:
    start = layout.outer_decl.start_byte
    values = single_assignment_values(plan.body, {a.local for a in axes})
    found: list[Windowed] = []
    why: list[tuple[str, Node]] = []
    for p in plan.kernel.params:
        uses = plan.uses(p.name) if p.is_pointer else []
        if not uses or _writes(p.name, uses):
            continue  # an output (or not read through a subscript): not windowed
        for use in uses:
            sub = use.parent
            if sub is None or sub.start_byte < start:
                continue
            try:
                found.append(_window_of(plan, sub, axes, values, start))
            except Illegal as exc:
                why.append((exc.reason, exc.node or sub))
    if not found:
        reason, node = why[0] if why else ("no input pointer is read inside the items", None)
        raise Illegal(reason, node)
    return found


def _writes(name: str, uses: list[Node]) -> bool:
    """The kernel may change what the pointer ``name`` points to (a use other than a read
    ``name[index]``): its values could differ between items."""
    for u in uses:
        sub = u.parent
        if sub is None or sub.type != "subscript_expression" or \
                sub.child_by_field_name("argument") != u:
            return True
        up = sub.parent
        if up is not None and (up.type in ("update_expression", "pointer_expression") or (
                up.type == "assignment_expression" and up.child_by_field_name("left") == sub)):
            return True
    return False


def _window_of(plan: Plan, sub: Node, axes: list[Axis], values: dict[str, Node],
               start: int) -> Windowed:
    index = sub.child_by_field_name("indices")
    if index is None or len(index.named_children) != 1:
        raise Illegal(f"`{text(sub)[:50]}` is not one index", sub)
    opaque: list[Node] = []
    rest = poly_of(index.named_children[0], values, opaque=opaque, divide=True)
    loops = _loops(sub, start)
    moving = {a.local for a in axes} | {c.name for c in loops}
    along: list[tuple[Axis, Counter | None]] = []
    for axis in axes:
        step = derivative(rest, axis.local)
        if not step and axis is not axes[0]:
            continue  # the read is the same at every row: one slot serves them all
        if not step:
            raise Illegal(f"`{text(sub)[:50]}` does not move with `{axis.local}`", sub)
        taken = {c.name for _a, c in along if c is not None}
        with_it = [c for c in loops if c.name not in taken and derivative(rest, c.name) == step]
        if not with_it and axis is not axes[0] and not {a for m in step for a in m} & moving:
            # the rows read other rows' values only: a slot per row (no sharing along it)
            rest = add(rest, scale(mul({(axis.local,): 1}, step), -1))
            along.append((axis, None))
            continue
        if len(with_it) != 1 or {a for m in step for a in m} & moving:
            raise Illegal(f"`{text(sub)[:50]}`: no one constant-trip loop counter moves with "
                          f"`{axis.local}` (linearly: the window's axis)", sub)
        e = with_it[0]
        rest = add(rest, scale(mul({(axis.local,): 1}, step), -1))
        rest = add(rest, scale(mul({(e.name,): 1}, step), -1))
        along.append((axis, e))
    taken = {c.name for _a, c in along if c is not None}
    others = {c.name: c for c in loops if c.name not in taken}
    used: set[str] = set()
    for m in rest:
        for atom in m:
            if atom in others:
                used.add(atom)
            elif not _invariant(plan, atom, opaque, start, sub):
                raise Illegal(f"`{text(sub)[:50]}` reads `{_atom_text(atom, opaque)}`, "
                              "which may differ between a thread's items", sub)
    dims = tuple(others[n] for n in sorted(used, key=lambda n: others[n].loop.start_byte))
    array = text(sub.child_by_field_name("argument"))
    key = (array, tuple(sorted((m, c) for m, c in _keyed(rest, opaque).items())),
           tuple((c.loop.start_byte, c.name) for c in dims),
           tuple((a.local, c.loop.start_byte if c is not None else -1) for a, c in along))
    return Windowed(sub, tuple(along), dims, key)


def _keyed(p: Poly, opaque: list[Node]) -> Poly:
    """``p`` with opaque atoms named by their text (one key for one address)."""
    out: Poly = {}
    for m, c in p.items():
        k = tuple(sorted(_atom_text(a, opaque) for a in m))
        out[k] = out.get(k, 0) + c
    return out


def _atom_text(atom: str, opaque: list[Node]) -> str:
    node = _opaque_node(atom, opaque)
    return " ".join(text(node).split()) if node is not None else atom


def _opaque_node(atom: str, opaque: list[Node]) -> Node | None:
    if not atom.startswith("#"):
        return None
    return next((n for n in opaque if atom == f"#{n.start_byte}:{n.end_byte}"), None)


def _loops(node: Node, start: int) -> list[Counter]:
    """The constant-trip ``for`` loops around ``node`` inside the items, outermost first;
    another loop around it there is refused (its counter could not index a register)."""
    out: list[Counter] = []
    up = node.parent
    while up is not None and up.start_byte >= start:
        if up.type in ("while_statement", "do_statement"):
            raise Illegal(f"the read `{text(node)[:50]}` is inside a {up.type.split('_')[0]} "
                          "loop", up)
        if up.type == "for_statement":
            init = up.child_by_field_name("initializer")
            body = up.child_by_field_name("body")
            trips = trip_count(up)
            names = _declared(init)
            first = _first_value(init)
            if trips is None or first is None or body is None or len(names) != 1 or \
                    names[0] in assigned_names(body):
                raise Illegal(f"the loop around `{text(node)[:50]}` has no constant start and "
                              "trip count (or assigns its counter)", up)
            out.insert(0, Counter(names[0], first, trips, up))
        up = up.parent
    return out


def _declared(init: Node | None) -> list[str]:
    if init is None or init.type != "declaration":
        return []
    out = []
    for d in init.children_by_field_name("declarator"):
        inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
        if inner is not None and inner.type == "identifier":
            out.append(text(inner))
    return out


def _first_value(init: Node | None) -> int | None:
    if init is None or init.type != "declaration":
        return None
    d = init.child_by_field_name("declarator")
    value = d.child_by_field_name("value") if d is not None else None
    return int_value(value) if value is not None else None


def _invariant(plan: Plan, atom: str, opaque: list[Node], start: int, at: Node) -> bool:
    """``atom`` is the same at every item of a thread."""
    node = _opaque_node(atom, opaque)
    if node is None:
        if atom.split(".")[0] in _BUILTINS:
            return True
        return _name_invariant(plan, atom, at, start)
    for n in walk(node):
        if n.type in ("subscript_expression", "call_expression", "assignment_expression",
                      "update_expression", "pointer_expression"):
            return False
        if n.type == "identifier" and text(n) not in _BUILTINS and int_value(n) is None \
                and not _name_invariant(plan, text(n), n, start):
            return False
    return True


def _name_invariant(plan: Plan, name: str, at: Node, start: int) -> bool:
    """A scalar parameter, or a local declared before the items and never assigned."""
    decl = declaration_of(at) if at.type == "identifier" else None
    if decl is None:
        local = plan.facts.defs.get(name)
        if local is not None:
            return local.decl.start_byte < start and not local.assigned
        try:
            return not plan.kernel.param(name).is_pointer
        except KeyError:
            return False
    local = plan.facts.defs.get(name)
    return decl.start_byte < start and local is not None and not local.assigned


def _emit(plan: Plan, layout: LaneLayout, outer: tuple[Node, str],
          windows: list[list[Windowed]], vec: LaneVec | None) -> None:
    data = plan.source.data
    value, item = outer
    items = items_name(plan)
    consecutive = _consecutive(data, value, layout, vec)
    plan.rw.replace_span(value.start_byte, value.end_byte, make=lambda rw: (
        f"wb_lane_outer({rw.render(value.start_byte, value.end_byte)}, ({consecutive}) * "
        f"{items} + {item})"))
    lines = [f"\n#if {KNOB} == 1  // consecutive outer elements; their shared input values "
             "in registers",
             "#define wb_lane_outer(spaced, consecutive) (consecutive)"]
    other = ["#else", "#define wb_lane_outer(spaced, consecutive) (spaced)"]
    pragmas: set[int] = set()
    for k, group in enumerate(windows):
        w = group[0]
        pointer = text(w.read.child_by_field_name("argument"))
        elem = _element(plan, pointer)
        ldg = elem in LDG_TYPES and "const" in \
            plan.kernel.param(pointer).type_text.split("*")[0].split()
        addr = "at"
        if _wide(vec, w):  # the lane's channels, one vector load a slot
            elem, addr = FLOAT, "wb_lv_ptr(at)"
        # the axes' dimensions last, the row's before the outer index's (x fastest)
        walks = list(reversed(w.along))
        dims = "".join(f"[{c.trips}]" for c in w.others) + \
            "".join(f"[{a.knob} + {_reach(c)}]" if c is not None else f"[{a.knob}]"
                    for a, c in walks)
        slot = _slot(w)
        once = "wb_once_ldg" if ldg else "wb_once"
        plan.helper(_ONCE_LDG if ldg else _ONCE)
        lines += [f"  {elem} wb_win{k}{dims};", f"  bool wb_win{k}_has{dims} = {{}};",
                  f"#define wb_win{k}_read(at) {once}(wb_win{k}_has{slot}, wb_win{k}{slot}, {addr})"]
        other.append(f"#define wb_win{k}_read(at) (*({addr}))")
        for r in group:
            plan.rw.replace_span(r.read.start_byte, r.read.end_byte,
                                 make=_through(f"wb_win{k}_read", r.read))
            for c in (*(c for _a, c in r.along if c is not None), *r.others):
                pragmas.add(c.loop.start_byte)
    for c_start in sorted(pragmas):
        loop = next(n for n in walk(plan.body) if n.start_byte == c_start and
                    n.type == "for_statement")
        if not _unrolled(loop):
            plan.rw.insert(c_start, "#pragma unroll\n" + " " * loop.start_point.column)
    before = [c for c in plan.body.children if c.end_byte <= layout.outer_decl.start_byte]
    at = before[-1].end_byte if before else plan.body.start_byte + 1
    plan.rw.insert(at, "\n".join([*lines, *other, "#endif"]))
    _unroll_items(plan, layout.outer_decl, item, at)


def _slot(w: Windowed) -> str:
    """The slot a read takes in its window: ``[..]`` per dimension, as ``_emit`` lays them."""
    return "".join(f"[({c.name}) - ({c.start})]" for c in w.others) + \
        "".join(_at(a, c) for a, c in reversed(w.along))


def _unroll_items(plan: Plan, outer_decl: Node, item: str, at: int) -> None:
    """``#pragma unroll`` before the generic wrap's items loop (it has none of its own): the
    window's slots index by its counter, so only a fully unrolled walk keeps them in
    registers (const_items' own loop is unrolled already). The loop's edit is taken whole
    into one that starts at ``at`` (the end of the statement before it)."""
    start = outer_decl.start_byte
    indent = " " * outer_decl.start_point.column
    loop = next((e for e in plan.rw.edits if e.make is not None and e.start == start and
                 e.end > outer_decl.end_byte and
                 e.make(plan.rw).startswith(f"for (int {item} = 0;")), None)
    make = loop.make if loop is not None else None
    if loop is not None and make is not None:
        plan.rw.replace_span(at, loop.end, make=lambda rw: (
            f"\n{indent}#pragma unroll\n{indent}{make(rw)}"))


def _through(macro: str, read: Node) -> Callable[[Rewriter], str]:
    """The read (with the edits inside it) through the window's macro, by its address."""
    def make(rw: Rewriter) -> str:
        return f"{macro}(&({rw.render(read.start_byte, read.end_byte)}))"
    return make


def _unrolled(loop: Node) -> bool:
    prev = loop.prev_named_sibling
    return prev is not None and prev.type == "preproc_call" and \
        text(prev).split()[:2] == ["#pragma", "unroll"]


def _element(plan: Plan, pointer: str) -> str:
    """The element type a const pointer parameter points to (``float`` of ``const float*``)."""
    words = [w for w in plan.kernel.param(pointer).type_text.split("*")[0].split()
             if w not in ("const", "volatile", "__restrict__")]
    return " ".join(words)


def _consecutive(data: bytes, value: Node, layout: LaneLayout, vec: LaneVec | None) -> str:
    """The outer value as written, P made OUTER_THREADS (const_items' knob), the thread
    part as LANE_VEC makes it."""
    rw = Rewriter(data)
    if layout.p_node is not None:
        rw.replace(layout.p_node, THREADS)
    if vec is not None:
        vec.consecutive(rw)
    return rw.render(value.start_byte, value.end_byte)


