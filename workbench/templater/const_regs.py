"""LANE_REGS: a lane's entries of its constant tables held in registers across its items.

Where :mod:`.const_items` gives a thread of the lane-inner layout several outer elements,
every item reads the same entries of the lane-indexed tables (a depthwise filter's taps of
its channel, a channel's scale): the index depends on the lane and on the counters of
constant-trip loops, never on the item. Known practice for such kernels is to load those
entries once per thread, before the items, into a register array indexed by the loop
counters (fully unrolled, so the indices are compile-time constants and the array stays in
registers), and read the registers in every item.

``LANE_REGS = 0`` reads the table as written (through CONST_VIA's choice), 1 preloads. Each
read ``A[f(lane, i, j)]`` becomes ``wb_A_laneN(i, j)``, a macro that is either the read as
written or the register ``wb_A_rN[i - i0][j - j0]``; the preload runs the same loop headers
as the kernel (``for (int i = i0; ...)``) before the items loop.

Legal where: every identifier of the index is an integer constant, the lane (declared once
before the items loop, never assigned) or the counter of a ``for`` loop inside the items
loop with constant start and trip count that its body never assigns; the index is inside the
table for every counter value and every lane (the preload reads them all, also where the
kernel skips a read); and the register arrays hold at most :data:`MAX_WORDS` words a thread.
The values are the table's, so every output is bit-identical.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import int_value, text, walk
from workbench.templater.bounds import interval
from workbench.templater.const_items import LaneLayout
from workbench.templater.const_lanes import (
    ConstArray,
    ConstRead,
    declaration_of,
    element_bytes,
)
from workbench.templater.item_state import assigned_names, trip_count
from workbench.templater.lane_vec import FLOAT, LaneVec
from workbench.templater.lane_vec import KNOB as VEC_KNOB
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Rewriter
from workbench.templater.vector import Illegal
from workbench.templater.warp_regs import _min_blocks_follows

KNOB = "LANE_REGS"
#: Registers (32-bit words) the preloaded tables may take a thread: a depthwise 3x3 filter's
#: taps are 9; 64 leaves room for the accumulators of 8 items.
MAX_WORDS = 64
#: 32-bit registers of an SM's register file (every GPU since sm_50).
REGISTERS = 65536
#: Registers a thread of the lane-inner layout keeps beside its window or its preloaded
#: entries (indices, the sum, the taps' addresses).
OWN_REGS = 32



@dataclass(frozen=True)
class Counter:
    """A constant-trip loop around a read (its counter, first value and trips): the taps'
    loops the register preload walks, and those inside the items that index a window
    (const_window)."""

    name: str
    start: int
    trips: int
    loop: Node


@dataclass(frozen=True)
class Preload:
    """One read pattern preloaded: the table, the read, the counters its index uses."""

    array: ConstArray
    read: ConstRead
    counters: tuple[Counter, ...]
    via: str  # what the kernel reads the table through (CONST_VIA's macro, or its name)


def apply_lane_regs(plan: Plan, layout: LaneLayout, arrays: list[ConstArray],
                    via: dict[str, str], vec: LaneVec | None = None) -> str | None:
    """Offer LANE_REGS for the lane-indexed reads inside the items loop of ``layout``;
    where LANE_VEC (``vec``) covers a read, its registers hold the lane's channels. Returns
    the registers a thread's entries take with LANE_REGS 1 (a rule in the knobs; None where
    not lifted): the register window counts them beside its own."""
    start = layout.outer_decl.start_byte
    lane = plan.facts.defs.get(layout.lane_name)
    if layout.lane_decl.start_byte >= start or lane is None or lane.assigned:
        plan.note(KNOB, False, f"the lane `{layout.lane_name}` is not declared once before "
                  "the items, never assigned", layout.lane_decl)
        return None
    loads: list[Preload] = []
    for a in arrays:
        for r in a.reads:
            if r.verdict.kind != "lane" or r.node.start_byte < start:
                continue
            try:
                counters = _counters(plan, r, layout)
                _in_bounds(r, counters, a.extents, (layout.lane_name, layout.k))
            except Illegal as exc:
                plan.note(KNOB, False, f"{a.name}: {exc.reason}", exc.node or r.node)
                continue
            loads.append(Preload(a, r, counters, via.get(a.name, a.name)))
    if not loads:
        return None
    words = sum(_words(p) for p in loads)
    if words > MAX_WORDS:
        plan.note(KNOB, False, f"the lane's table entries take {words} registers a thread, "
                  f"over {MAX_WORDS}", loads[0].read.node)
        return None
    before = [c for c in plan.body.children if c.end_byte <= start]
    _emit(plan, loads, before[-1].end_byte if before else plan.body.start_byte + 1, vec)
    wide = sum(_words(p) for p in loads if vec is not None and vec.covers(p.read.node))
    if vec is not None and wide:
        _wide_constraints(plan, words - wide, wide, max(vec.values))
    plan.add_param(KNOB, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: each thread loads its lane's entries of "
                          f"{', '.join(sorted({p.array.name for p in loads}))} into "
                          "registers once, before its items (0: read in every item, as "
                          "written)"}, f"{layout.outer_decl.start_point.row + 1}: "
                   f"{text(loads[0].read.node)[:60]}")
    plan.note(KNOB, True, f"{len(loads)} lane-indexed read(s) ({words} registers a thread) "
              "do not depend on the item: 1 loads them once per thread", loads[0].read.node)
    return f"{words - wide} + {wide} * {VEC_KNOB}" if vec is not None and wide else str(words)


def _wide_constraints(plan: Plan, narrow: int, wide: int, most: int) -> None:
    """A lane's LANE_VEC channels take LANE_VEC registers an entry: within MAX_WORDS, and
    under a minimum of resident blocks (lifted with the block's ``__launch_bounds__``) the
    entries beside the thread's own registers within the cap (at 4 channels, 40 entries and
    8 items x 4 rows under a 64-register cap spilled 220 bytes; ptxas -v, sm_90)."""
    words = f"{narrow} + {wide} * {VEC_KNOB}"
    if narrow + wide * most > MAX_WORDS:
        plan.constrain(f"{KNOB} == 0 or {words} <= {MAX_WORDS}")
    if plan.launch_bounds is not None and _min_blocks_follows(plan):
        plan.constrain(f"{KNOB} == 0 or {VEC_KNOB} == 1 or MIN_BLOCKS_PER_SM == 0 or {words} + "
                       f"{OWN_REGS} <= {REGISTERS} // (({plan.launch_bounds}) * "
                       "MIN_BLOCKS_PER_SM)")


def _words(p: Preload) -> int:
    size = element_bytes(p.array.source.ctype) or 4
    return max(1, math.prod(c.trips for c in p.counters)) * max(1, size // 4)


def _counters(plan: Plan, r: ConstRead, layout: LaneLayout) -> tuple[Counter, ...]:
    """The loops whose counters the read's index uses, outermost first; refused where an
    identifier is none of: a constant, the lane, such a counter."""
    found: dict[str, Counter] = {}
    for index in r.indices:
        for n in walk(index):
            if n.type != "identifier" or int_value(n) is not None:
                continue
            decl = declaration_of(n)
            if decl is None:
                raise Illegal(f"`{text(n)}` in `{text(r.node)[:50]}` is not a local", n)
            if text(n) == layout.lane_name and decl == layout.lane_decl:
                continue
            loop = decl.parent
            if loop is None or loop.type != "for_statement" or \
                    loop.child_by_field_name("initializer") != decl or \
                    loop.start_byte < layout.outer_decl.start_byte:
                raise Illegal(f"`{text(n)}` in `{text(r.node)[:50]}` is neither the lane nor "
                              "the counter of a loop inside the items", n)
            trips = trip_count(loop)
            init_value = decl.child_by_field_name("declarator")
            value = init_value.child_by_field_name("value") if init_value is not None \
                and init_value.type == "init_declarator" else None
            first = int_value(value)
            body = loop.child_by_field_name("body")
            if trips is None or first is None or body is None or \
                    text(n) in assigned_names(body):
                raise Illegal(f"the loop of `{text(n)}` has no constant start and trip count "
                              "(or assigns its counter)", loop)
            found[text(n)] = Counter(text(n), first, trips, loop)
    return tuple(sorted(found.values(), key=lambda c: c.loop.start_byte))


def _in_bounds(r: ConstRead, counters: tuple[Counter, ...], extents: tuple[int, ...],
               lane: tuple[str, int]) -> None:
    ranges = {c.name: (c.start, c.start + c.trips - 1) for c in counters}
    ranges[lane[0]] = (0, lane[1] - 1)
    for index, extent in zip(r.indices, extents, strict=True):
        at = interval(index, ranges)
        if at is None or at[0] < 0 or at[1] >= extent:
            raise Illegal(f"`{text(index)[:50]}` is not shown inside [0, {extent}) for every "
                          "counter value and lane (the preload reads them all)", index)


def _emit(plan: Plan, loads: list[Preload], at: int, vec: LaneVec | None) -> None:
    """The preload before the items loop (rendered last: the edits inside the indices and
    loop headers show) and each read replaced by its macro."""
    for k, p in enumerate(loads):
        names = ", ".join(c.name for c in p.counters)
        plan.rw.replace(p.read.node, f"wb_{p.array.name}_lane{k}({names})")
    plan.rw.replace_span(at, at, make=lambda rw: _preload(rw, loads, vec))


def _preload(rw: Rewriter, loads: list[Preload], vec: LaneVec | None) -> str:
    lines = [f"\n#if {KNOB} == 1  // the lane's table entries, in registers across its "
             "items"]
    other: list[str] = []
    for k, p in enumerate(loads):
        reg, macro = f"wb_{p.array.name}_r{k}", f"wb_{p.array.name}_lane{k}"
        names = ", ".join(c.name for c in p.counters)
        dims = "".join(f"[{c.trips}]" for c in p.counters) or "[1]"
        slot = "".join(f"[({c.name}) - ({c.start})]" for c in p.counters) or "[0]"
        read = p.via + "".join(f"[{rw.text(i)}]" for i in p.read.indices)
        ctype = p.array.source.ctype
        if vec is not None and vec.covers(p.read.node):  # the lane's channels
            read, ctype = vec.access(p.read.node, read), FLOAT
        lines.append(f"  {ctype} {reg}{dims};")
        for depth, c in enumerate(p.counters):
            body = c.loop.child_by_field_name("body")
            assert body is not None
            header = rw.render(c.loop.start_byte, body.start_byte).strip()
            lines += ["#pragma unroll", "  " + "  " * depth + header]
        lines.append("  " + "  " * len(p.counters) + f"{reg}{slot} = {read};")
        lines.append(f"#define {macro}({names}) {reg}{slot}")
        other.append(f"#define {macro}({names}) {read}")
    return "\n".join([*lines, "#else", *other, "#endif"])
