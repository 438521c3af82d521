"""CONST_VIA: where a kernel reads the ``__constant__`` arrays its lanes index differently.

:mod:`.const_lanes` finds the arrays a warp reads at several addresses at once (constant
memory replays such a read once per distinct address). The known fix is to copy the array
to shared memory once per block, a cooperative strided copy and one barrier, and read the
copy (shared memory serves 32 distinct words a cycle from distinct banks). The choice knob:

- ``CONST_VIA = 0``: constant memory, as written;
- ``CONST_VIA = 1``: a shared-memory copy per block.

Offered too where the analysis cannot tell whether the lanes agree (:mod:`.const_lanes`'s
*unknown*: an index computed from a value read from memory, as a CRC's byte-at-a-time
table lookups ``crc_table[(c ^ w) & 0xff]`` are): the copy is correctness-neutral, so the
search decides where the lanes' indices differ (replays in constant memory) and where they
agree (a broadcast); the default stays constant memory, as written. Only an array read at
warp-uniform indices everywhere is left without the knob.

A global read-only copy (``__device__`` plus ``__ldg``) is not offered: the runner uploads
each input array into the module global of its name, and the folder loader and that upload
both need the template to keep a file-scope ``__constant__`` (or ``__device__``)
declaration of it; a declaration whose qualifier depends on a knob is neither.

Legal where: the array is one-dimensional of constant size with an element type of known
size, every use in the kernel is ``array[index]`` (a read: device code cannot write
constant memory), the copy fits the 48 KiB of static shared memory beside the kernel's own
shared arrays and dynamic shared memory, and the copy goes first in the kernel body, before
any statement a thread could leave by (every thread of the block reaches its barrier) and
where no other transform rewrote the opening of the body. The copy holds the same bits, so
every read returns what it returned: the outputs are bit-identical at every value.

The copy (:func:`emit_copies`, a :class:`Table`) is the one home of "a small read-only table
staged in shared memory": :mod:`.table_via` stages a const pointer parameter's table with it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import text, walk
from workbench.templater.const_items import apply_const_items, lane_layout
from workbench.templater.const_lanes import (
    ConstArray,
    const_eval,
    constant_arrays,
    element_bytes,
)
from workbench.templater.const_regs import apply_lane_regs
from workbench.templater.const_rows import apply_lane_rows
from workbench.templater.const_window import apply_lane_window
from workbench.templater.inline_bind import fresh
from workbench.templater.lane_vec import emit_lane_vec, plan_lane_vec, shadowed
from workbench.templater.plan import Plan
from workbench.templater.rules import literal
from workbench.templater.vector import Illegal

KNOB = "CONST_VIA"
#: Static shared memory a block may declare without opting in (every CUDA GPU since sm_20).
STATIC_SMEM = 49152
#: Another transform's static shared memory limit: ``[K == 0 or ]E <= 49152``.
SMEM_LIMIT = re.compile(rf"(?:(\w+) == 0 or )?(.+) <= {STATIC_SMEM}")


def apply_const_via(plan: Plan, smem_bytes: str, aligned: int = 0) -> dict[str, str]:
    """Offer CONST_VIA where a ``__constant__`` array's reads vary over a warp's lanes, or
    may (an index the analysis cannot follow); note every array considered. Returns each staged array's name -> the macro its reads
    go through (the copy under CONST_VIA = 1, the array under 0). ``aligned``: the copies'
    alignment in bytes (LANE_VEC reads a lane's channels of them as one vector), 0: the
    element's."""
    arrays = [a for a in constant_arrays(plan) if not shadowed(plan, a.name)]
    staged: list[ConstArray] = []
    for a in arrays:
        line_node = a.reads[0].node if a.reads else None
        if a.kind == "uniform" and not a.problem:
            plan.note(KNOB, False, f"{a.name} is read at a warp-uniform index everywhere "
                      "(constant memory broadcasts it to the warp): left in constant memory",
                      line_node)
            continue
        try:
            _check(a)
        except Illegal as exc:
            plan.note(KNOB, False, exc.reason, exc.node or line_node)
            continue
        staged.append(a)
    if not staged:
        return {}
    dynamic = literal(smem_bytes)
    try:
        own = own_shared_bytes(plan)
        copy = sum(_bytes(a) for a in staged)
        if own + copy + (dynamic or 0) > STATIC_SMEM:
            raise Illegal(f"a shared copy of {', '.join(a.name for a in staged)} ({copy} "
                          f"bytes) beside the kernel's {own + (dynamic or 0)} bytes of shared "
                          f"memory passes {STATIC_SMEM}")
        at = body_opening(plan)
        # the copy's bytes (with the kernel's own) beside each other transform's limit
        # (a staged record tile's: the two share the block's 48 KiB)
        beside = limits_beside(plan, KNOB, str(own + copy + (dynamic or 0)), "copy's")
    except Illegal as exc:
        plan.note(KNOB, False, exc.reason, exc.node or staged[0].reads[0].node)
        return {}
    via = _emit(plan, staged, at, aligned)
    plan.add_param(KNOB, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "where the lane-indexed __constant__ arrays "
                          f"({', '.join(a.name for a in staged)}) are read: 0 constant memory "
                          "(as written), 1 a shared-memory copy made once per block"},
                   f"{staged[0].source.line}: __constant__ {staged[0].name}")
    if dynamic is None:  # dynamic shared memory that a rule sizes: the copy must fit beside
        plan.constrain(f"{KNOB} == 0 or {own + copy} + ({smem_bytes}) <= {STATIC_SMEM}")
    for limit in beside:
        plan.constrain(limit)
    for a in staged:
        r = a.first("lane")
        if r is not None:
            plan.note(KNOB, True, f"{a.name} is read at an index that varies over a warp's "
                      f"lanes (`{text(r.node)[:60]}`: {r.verdict.why}): constant memory "
                      "replays such a read once per address; 1 copies it to shared memory "
                      "once per block", r.node)
            continue
        r = a.first("unknown")
        assert r is not None  # a.kind: no lane read, so an unknown one
        plan.note(KNOB, True, f"cannot tell whether the lanes of a warp read {a.name} at one "
                  f"index: `{text(r.node)[:60]}` depends on {r.verdict.why or 'a value'} the "
                  "analysis does not follow; the copy holds the same bits, so offered for the "
                  "search to decide: 0 constant memory (as written, a broadcast where the "
                  "lanes agree), 1 a shared-memory copy (no replays where they differ)",
                  r.verdict.node or r.node)
    return via


def _check(a: ConstArray) -> None:
    if a.problem:
        raise Illegal(f"{a.name}: {a.problem}; left in constant memory", a.problem_node)
    if element_bytes(a.source.ctype) is None:
        raise Illegal(f"{a.name}'s element type {a.source.ctype} has no size the templater "
                      "knows; left in constant memory", a.reads[0].node)


def _extents(a: ConstArray) -> list[int]:
    return list(a.extents)


def _bytes(a: ConstArray) -> int:
    size = element_bytes(a.source.ctype)
    assert size is not None
    return size * math.prod(_extents(a))


def own_shared_bytes(plan: Plan) -> int:
    """The static shared memory the kernel body declares, as written; refused where an
    extent does not evaluate or another transform rewrote a declaration."""
    total = 0
    for decl in walk(plan.body):
        if decl.type != "declaration" or not any(text(c) == "__shared__" for c in decl.children):
            continue
        if any(text(c) == "extern" for c in decl.children):
            continue  # dynamic: the launch's smem_bytes
        if plan.rw.text(decl) != text(decl):
            raise Illegal("a transform resized the kernel's shared memory "
                          f"(`{text(decl)[:60]}`): the copy's room is not known", decl)
        typ = text(decl.child_by_field_name("type"))
        size = element_bytes(typ)
        count = 1
        d = decl.child_by_field_name("declarator")
        while d is not None and d.type == "array_declarator":
            extent = const_eval(d.child_by_field_name("size"))
            if extent is None:
                raise Illegal(f"the shared extent in `{text(decl)[:60]}` does not evaluate: "
                              "the copy's room is not known", decl)
            count *= extent
            d = d.child_by_field_name("declarator")
        if size is None:
            raise Illegal(f"the shared element type {typ} has no size the templater knows",
                          decl)
        total += size * count
    return total


def limits_beside(plan: Plan, knob: str, extra: str, what: str) -> list[str]:
    """``extra`` bytes, present where ``knob`` is not 0, added to each static shared memory
    limit ``[K == 0 or ]E <= 49152`` the plan holds; Illegal for a limit of another form
    (``what`` names the bytes in its message)."""
    out: list[str] = []
    for c in plan.constraints:
        if str(STATIC_SMEM) not in c:
            continue
        m = SMEM_LIMIT.fullmatch(c)
        if m is None or " or " in m.group(2):
            raise Illegal(f"another transform's shared memory limit `{c}` is not one the "
                          f"{what} bytes can be added to")
        guard = f"{m.group(1)} == 0 or " if m.group(1) else ""
        out.append(f"{knob} == 0 or {guard}({m.group(2)}) + {extra} <= {STATIC_SMEM}")
    return out


def body_opening(plan: Plan) -> int:
    """Where the copy goes: just inside the body's brace, unless an edit spans it."""
    at = plan.body.start_byte + 1
    for e in plan.rw.edits:
        if e.start < at < e.end:
            raise Illegal("another transform rewrote the opening of the kernel body: the "
                          "copy has no place before the first statement", plan.body)
    return at


@dataclass(frozen=True)
class Table:
    """A small read-only table a block copies to shared memory: its name, element type,
    extents (the copy's), the identifiers of its reads (each made the copy's macro) and the
    ``__ldg`` callees around them (made a plain load under the copy: ``__ldg`` reads global
    memory only)."""

    name: str
    ctype: str
    extents: tuple[int, ...]
    uses: tuple[Node, ...]
    ldg: tuple[Node, ...] = ()


def _const_table(a: ConstArray) -> Table:
    return Table(a.name, a.source.ctype, tuple(_extents(a)), tuple(r.array for r in a.reads))


def _emit(plan: Plan, staged: list[ConstArray], at: int, aligned: int) -> dict[str, str]:
    return emit_copies(plan, KNOB, [_const_table(a) for a in staged], at, aligned,
                       "the lane-indexed constant arrays")


def emit_copies(plan: Plan, knob: str, tables: list[Table], at: int, aligned: int,
                what: str) -> dict[str, str]:
    """At ``at``, under ``knob == 1``, each table's shared copy made once per block (a
    strided copy by the block's threads and one barrier: nothing may leave before ``at``);
    each read goes through a macro, the copy under 1 and the table under 0. Returns each
    table's name -> its macro."""
    taken = {text(n) for n in walk(plan.source.tree.root_node) if n.type == "identifier"}
    lines = [f"\n#if {knob} == 1  // {what}, copied once per block"]
    alias: list[tuple[str, str]] = []
    loads: list[tuple[str, str]] = []
    for a in tables:
        copy, via = fresh(f"wb_{a.name}_s", taken), fresh(f"wb_{a.name}_via", taken)
        extents = list(a.extents)
        n = math.prod(extents)
        flat = "" if len(extents) == 1 else "[0]" * len(extents)
        at_copy, at_arr = (f"(&{copy}{flat})", f"(&{a.name}{flat})") if flat else (copy,
                                                                                 a.name)
        align = f"alignas({aligned}) " if aligned else ""
        lines += [f"  {align}__shared__ {a.ctype} {copy}"
                  f"{''.join(f'[{e}]' for e in extents)};",
                  "  for (int wb_e = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * "
                  f"threadIdx.z); wb_e < {n};",
                  "       wb_e += blockDim.x * blockDim.y * blockDim.z)",
                  f"    {at_copy}[wb_e] = {at_arr}[wb_e];"]
        alias.append((via, copy))
        for use in a.uses:
            plan.rw.replace(use, via)
        if a.ldg:
            ld = fresh(f"wb_{a.name}_ld", taken)
            taken.add(ld)
            loads.append((ld, a.name))
            for callee in a.ldg:
                plan.rw.replace(callee, ld)
    lines.append("  __syncthreads();  // every thread is here: nothing returns before it")
    lines += [f"#define {via} {copy}" for via, copy in alias]
    lines += [f"#define {ld}(p) (*(p))  // a shared address: a plain load" for ld, _ in loads]
    lines.append("#else")
    lines += [f"#define {via} {a.name}" for (via, _c), a in zip(alias, tables, strict=True)]
    lines += [f"#define {ld} __ldg" for ld, _ in loads]
    lines.append("#endif")
    plan.rw.insert(at, "\n".join(lines))
    return {a.name: via for (via, _c), a in zip(alias, tables, strict=True)}


def _channels_last(plan: Plan) -> bool:
    """The lane-inner layout with the lane in the index of a global array (a per-channel
    kernel whose tables live in global memory, or that has none): the layout's transforms
    (items, outer threads, rows, window, LANE_VEC) are legal on the layout and the accesses
    alone, constant memory or not (a 3 x 3 depthwise filter with its taps in global memory
    is the same walk as dwconv3_nhwc's)."""
    layout = lane_layout(plan)
    if layout is None:
        return False
    pointers = {p.name for p in plan.kernel.params if p.is_pointer}
    for n in walk(plan.body):
        if n.type != "subscript_expression":
            continue
        array = n.child_by_field_name("argument")
        index = n.child_by_field_name("indices")
        if array is not None and text(array) in pointers and index is not None and any(
                m.type == "identifier" and text(m) == layout.lane_name for m in walk(index)):
            return True
    return False


def _lane_read(plan: Plan) -> list[ConstArray]:
    """The ``__constant__`` arrays a warp's lanes read at different indices."""
    return [a for a in constant_arrays(plan) if a.kind == "lane" and not a.problem
            and not shadowed(plan, a.name)]


def takes_lanes(plan: Plan) -> bool:
    """Whether this family takes the kernel's lane-inner layout (:func:`apply_const` sizes
    its outer threads): the layout, and lane-read constant arrays or a channels-last
    access."""
    return lane_layout(plan) is not None and (bool(_lane_read(plan)) or _channels_last(plan))


def apply_const(plan: Plan, smem_bytes: str) -> None:
    """The constant-memory family's hook in the semantic pass (after every other family):
    CONST_VIA for lane-indexed ``__constant__`` arrays; where they have one, several outer
    elements per thread of the lane-inner layout (:mod:`.const_items`) and the lane's
    entries in registers across them (:mod:`.const_regs`), consecutive rows where a block
    row is the row (:mod:`.const_rows`), consecutive elements whose shared input values
    go through a register window (:mod:`.const_window`), and several consecutive channels a
    lane (:mod:`.lane_vec`)."""
    lane_read = _lane_read(plan)
    layout = apply_const_items(plan) if lane_read or _channels_last(plan) else None
    # LANE_VEC before the copies (aligned for its vector reads) and the register families
    vec = plan_lane_vec(plan, layout) if layout is not None else None
    via = apply_const_via(plan, smem_bytes, aligned=16 if vec is not None else 0)
    if layout is not None:
        regs = apply_lane_regs(plan, layout, lane_read, via, vec)
        apply_lane_window(plan, layout, apply_lane_rows(plan, layout), vec, regs)
        if vec is not None:
            emit_lane_vec(plan, vec, via, KNOB)
