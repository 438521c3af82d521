"""Per-thread work transforms: vector width and items per thread for unit-stride loops and
one-element-per-thread kernels, blocks per row, and items per thread by wrapping.

Vectorizing a region whose variable ``j`` walks consecutive elements (a thread-stride loop
``for (j = threadIdx.x; j < n; j += B)`` or a guarded ``i = blockIdx.x * B + threadIdx.x``)
is legal when, in its body, the accesses ``A[offset + j]`` (one offset per array: the
streams) run unconditionally (no branches or nested loops around them; a read in an arm of
an ``if`` or ``?:`` whose test reads data only, ``mask[j] ? v : x[j] * s``, loads whole:
:func:`.vector_access.region_accesses`), no barrier, atomic,
shuffle or early exit is inside, and a written array cannot alias another one read. ``j``
may also be read otherwise (``x + 8 * j``, ``s[j / 4]``): each lane reads it at its own
element, ``j + wb_v``, where the body writes only locals and the streams (written streams
``__restrict__``) and never ``j`` itself. A one-element region writes no local declared
before it; its guard is ``if (i < n) {..}`` last, or the exit ``if (i >= n) return;`` with
the element's statements after it to the end of the body (:mod:`.vector_regions`). The
rewrite loads ``ITEMS_PER_THREAD`` vectors of ``VEC`` elements per stream before any is
used, runs the original body once per lane on registers, and stores the written vectors;
constraints keep it correct: every offset a multiple of VEC (alignment: a local size such
as ``cols / 8`` counts), ``VEC * bytes <= 16``. The bound need not be one: where the offsets
do not make it one already, the thread whose vector would cross it takes the elements left
one by one through the body as written (:mod:`.vector_tail`). So the bound need not be a
size the launch knows either (a chunk's end ``min(begin + CHUNK, n)``): only the same value
throughout the region (:mod:`.vector_bound`), except for the counting loop of a shared
atomic total, whose vector loads :mod:`.reduce_atomic_vec` lifts where the elements' order
is free. A loop started at an offset (``begin + threadIdx.x``: a block's chunk) starts its
vectors at ``begin + threadIdx.x * VEC``, ``begin`` aligned as the offsets are
(:func:`start_parts`). A grid-stride loop (its step ``gridDim.x * blockDim.x``, as written
or through a local) launched for S strides a thread (``ceil_div(n, S * B)``) keeps S as the
SPAN knob of its grid ``ceil_div(n, B * VEC * ITEMS_PER_THREAD * SPAN)``. In a one-element
region whose index is split by a run-time extent into a row and a column, a gather at a row
of its own and that column (``src[idx[t / D] * D + t % D]``) loads one vector a row group
where ``D % VEC == 0`` (:mod:`.vector_rowgroup`); only for such a region is the index
``blockIdx.x * blockDim.x + threadIdx.x`` read as the flat one (:func:`vector_flat`). A
one-element region whose lanes read memory besides the streams (a gather, ``in[f(idx)]``)
stores after every item's lanes, as the row-group reads do: the items are threads of the
kernel as written, which run in no order, so every item's loads are in flight before any
store where a written pointer is not ``__restrict__`` (a store the compiler cannot show
apart from the next item's load keeps them in order: pixel_shuffle_r2, one item's loads in
flight at ITEMS_PER_THREAD 2). A one-element region whose index is split by a row width
(``t % E``) also shapes each item as VEC columns of ITEM_ROWS rows (:mod:`.vector_unit_rows`).
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from workbench.templater.analysis import (
    StrideLoop,
    builtin,
    calls,
    declared_name,
    factors,
    stride_loop,
    strip,
    terms,
    text,
    walk,
    write_target,
    writer,
)
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Edit, Rewriter
from workbench.templater.rules import literal, scale_divisor
from workbench.templater.vector_lanes import lane_values
from workbench.templater.vector_regions import (
    FlatRegion,
    Region,
    flat_region,
    thread_state_before,
)
from workbench.templater.vector_tail import rendered_without, tail_text, whole_test

VEC_STRUCT = ("template <typename T, int N>\nstruct alignas(sizeof(T) * N) WbVec {  "
              "// N elements moved as one aligned access\n  T v[N];\n};")


from workbench.templater.vector_access import (  # noqa: E402
    Access,
    Illegal,
    base_name,
    elem_bytes,
    elem_type,
    local_root,
    multiple_constraints,
    offset_constraints,
    region_accesses,
    root_array,
    size_expression,
)
from workbench.templater.vector_bound import steady_bound  # noqa: E402
from workbench.templater.vector_rowgroup import apply_row_reads, row_reads  # noqa: E402
from workbench.templater.vector_unit_rows import KNOB as ROWS_KNOB  # noqa: E402
from workbench.templater.vector_unit_rows import (  # noqa: E402
    UNIT_AT,
    UNIT_ROW,
    UnitRows,
    unit_rows,
)

#: Renders a vectorized region: (plan, region, streams by name, scalar tail or None) -> text.
RegionText = Callable[[Plan, Region, "dict[str, list[Access]]", "str | None"], str]


def vectorize(plan: Plan, region: Region, *, split: bool, alias_guard: bool = False,
              render: RegionText | None = None, reads_first: bool = False,
              rows: UnitRows | None = None) -> list[str]:
    """Rewrite ``region``; returns its constraints. Raises Illegal (nothing edited).

    ``render``: the vector text of a region another module shapes (a 2-D block's rows,
    :mod:`.vector_rows`); an exit region's exit then stays as written before it.
    ``reads_first``: the caller showed that a one-element region reads memory only before
    its first write; a written pointer that is not ``__restrict__`` is then vectorized as
    it is: another lane's element is another thread's as written, so a range that overlaps
    a written one is a race in the kernel as written.
    ``rows``: a one-element region's items shaped over rows (:mod:`.vector_unit_rows`).

    ``alias_guard``: a written pointer that is not ``__restrict__`` is still vectorized; the
    vector path then runs only where, at run time, each written range and each other range
    are the same elements (exact in-place) or do not overlap, and the loop as written runs
    otherwise (:func:`_guarded`). Every access being ``offset + var`` (:func:`accesses`),
    two ranges that start at the same address meet only at the same ``var``, whatever the
    offsets' spelling (``y[j]`` with ``yr = y + row * n`` and ``x[row * n + j]``).
    """
    accesses, values = region_accesses(plan, region)
    # one stream per (array, offset): a gate and an up half of one input are two streams
    by_array: dict[str, list[Access]] = {}
    names: dict[tuple[str, str], str] = {}
    # the kernel's own wb_ names (an inlined helper's parameter, wb_x): a stream's registers
    # wb_<stream> must not shadow one
    taken = {text(n) for n in walk(plan.body) if n.type == "identifier"}
    for a in accesses:
        key = (a.array, " ".join(text(a.index).split()))
        if key not in names:
            base = base_name(a.array)
            same = len([k for k in names if base_name(k[0]) == base])
            names[key] = base if not same else f"{base}{same}"
            if names[key] in ("i", "v"):  # wb_i, wb_v are the rewrite's own loop indices
                names[key] = f"{names[key]}_arr"
            while f"wb_{names[key]}" in taken:
                names[key] = f"{names[key]}_s"
        by_array.setdefault(names[key], []).append(a)
    constraints: list[str] = []
    for group in by_array.values():
        array = group[0].array
        if any(a.write for a in group) and len({k for k in names if k[0] == array}) > 1:
            raise Illegal(f"`{array}` is written and accessed at more than one offset "
                          f"({', '.join(sorted({text(a.node) for a in accesses if a.array == array}))})",
                          group[0].node)
        constraints += offset_constraints(plan, group[0], region.var)
    written = {root_array(plan, g[0].array) for g in by_array.values() if any(x.write for x in g)}
    read = {root_array(plan, g[0].array) for g in by_array.values() if any(x.read for x in g)}
    guarded: list[str] = []  # written pointers whose overlap is checked at run time
    for w in sorted(written):
        p = plan.kernel.param(w)
        if p.is_const:
            raise Illegal(f"`{w}` is written but declared const", region.at)
        others = read - {w}
        # a one-element region's lanes and items are threads of the kernel as written, which
        # run in no order: a read at another lane's value racing its store races as written
        # (a body with loops of its own is left to the families that interleave its items)
        if values and not p.is_restrict and (region.loop or
                                             any(_has_loop(s) for s in region.statements())):
            raise Illegal(f"`{w}` is written and not __restrict__, and `{region.var}` is "
                          f"also read as a value (`{text(values[0].parent)}`): a read at "
                          "that value would run before the vectors' stores", region.at)
        if others and not p.is_restrict and not reads_first:
            if not alias_guard:
                raise Illegal(f"`{w}` is written, is not __restrict__ and may alias "
                              f"{', '.join(sorted(others))}", region.at)
            guarded.append(f"`{w}` may alias {', '.join(sorted(others))}")
    if region.offset:  # the chunk a loop starts at (``begin + threadIdx.x``): aligned too
        constraints += multiple_constraints(plan, list(region.offset), "VEC",
                                            f"of the loop's start `{text(region.node)[:40]}`",
                                            region.node)
    bound = size_expression(plan, region.bound)
    # the offsets' alignment may require the bound a multiple of VEC already (a row's length
    # d, rows at row * d); else the thread whose vector would cross it ends one by one. A
    # bound of no known size (a chunk's end) needs only be the same value throughout.
    if bound is None:
        steady_bound(plan, region)
    tail = bound is None or f"{bound} % VEC == 0" not in constraints
    widths = [elem_bytes(plan, g[0].array) for g in by_array.values()]
    if any(w is None for w in widths):
        raise Illegal("an accessed array has no known element size", region.at)
    for w in sorted({w for w in widths if w is not None}):
        constraints.append(f"VEC * {w} <= 16")

    before = len(plan.rw.edits)
    for stream, group in by_array.items():
        for a in group:
            plan.rw.replace(a.node, f"wb_{stream}[wb_i].v[wb_v]")
    # the lane's own element (the flat region's index is never negative)
    constraints += lane_values(plan, values, region.var, divide=not region.loop)
    # gathers along a row the flat index's division walks: one vector a row group
    grouping = len(plan.rw.edits)
    groups = apply_row_reads(plan, region, accesses) if render is None else None
    grouped = plan.rw.edits[grouping:]
    mine = plan.rw.edits[before:]
    # a one-element region whose lanes load at places of their own (a gather): the stores
    # after every item's lanes, so all the items' loads are in flight together (the items
    # are threads of the kernel as written, which run in no order); where every written
    # pointer is __restrict__ the compiler may hoist the loads itself (left as it was)
    gathers_first = render is None and not region.loop and \
        any(not plan.kernel.param(w).is_restrict for w in written) and \
        _gathers(plan, region, accesses)

    def make(rw: Rewriter) -> str:
        scalar = rendered_without(rw, mine, lambda: region.text(rw))
        if render is not None:
            return render(plan, region, by_array, scalar if tail else None)
        vector = _vector_text(plan, region, by_array, split=split,
                              scalar=scalar if tail else None,
                              groups=None if groups is None else groups.lanes(
                                  region.text(rw), rendered_without(
                                      rw, grouped, lambda: region.text(rw))),
                              stores_last=gathers_first, rows=rows)
        return _guarded(plan, region, by_array, vector, mine) if guarded else vector

    start = region.node.end_byte if render is not None and region.exit else \
        region.node.start_byte
    plan.rw.replace_span(start, region.end_byte, make=make)
    plan.helper(VEC_STRUCT)
    if guarded:
        plan.note("VEC", True, f"{'; '.join(guarded)} (not __restrict__): the vector path runs "
                  "only where, per item, the written and read ranges are the same elements or "
                  "disjoint (compared at run time), the loop as written otherwise", region.node)
    return constraints


def _gathers(plan: Plan, region: Region, accesses: list[Access]) -> bool:
    """Whether the element reads memory other than its streams: a subscript of a pointer
    (not a thread's own array), a dereference ``*p`` or a load intrinsic (``__ldg``),
    neither a stream access nor a store's target."""
    streams = {(a.node.start_byte, a.node.end_byte) for a in accesses}
    for n in region.walk():
        if (n.start_byte, n.end_byte) in streams or writer(n) is not None:
            continue
        if n.type == "subscript_expression":
            name = text(strip(n.child_by_field_name("argument")))  # type: ignore[arg-type]
            local = plan.facts.defs.get(name)
            if plan.pointer(name) or (local is not None and local.is_pointer):
                return True
        elif (n.type == "pointer_expression" and
              text(n.child_by_field_name("operator")) == "*") or \
                (n.type == "call_expression" and
                 text(n.child_by_field_name("function")) in _LOADS):
            return True
    return False


#: the load intrinsics (a read of memory at their argument's address)
_LOADS = ("__ldg", "__ldcs", "__ldcg", "__ldca", "__ldlu", "__ldcv")


def _floating_sums(plan: Plan, region: Region) -> list[str]:
    """The floating locals declared before a loop region that its body writes: VEC deals
    another set of elements to each thread, so each such accumulator adds in another order
    (the shared tree or atomics after it then see other rounding). A running maximum or
    minimum (``m = fmaxf(m, ..)``) is exact in any order."""
    out: set[str] = set()
    for n in region.walk():
        target = write_target(n)
        root = local_root(target) if target is not None else None
        d = plan.facts.defs.get(text(root)) if root is not None else None
        kind = d.decl.child_by_field_name("type") if d is not None else None
        if d is not None and kind is not None and not region.node.start_byte <= \
                d.decl.start_byte < region.node.end_byte and \
                text(kind).split()[-1] in ("float", "double", "half", "__half") and \
                not _running_extreme(n, d.name):
            out.add(d.name)
    return sorted(out)


_EXTREMES = ("fmaxf", "fminf", "fmax", "fmin", "max", "min")


def _running_extreme(write: Node, name: str) -> bool:
    """``name = fmaxf(name, ..)`` (or fminf, fmax, fmin, max, min; either argument)."""
    value = write.child_by_field_name("right") if write.type == "assignment_expression" \
        else None
    if value is None or text(write.child_by_field_name("operator")) != "=":
        return False
    value = strip(value)
    if value.type != "call_expression" or \
            text(value.child_by_field_name("function")) not in _EXTREMES:
        return False
    args = value.child_by_field_name("arguments")
    return args is not None and any(text(strip(a)) == name for a in args.named_children)


def _memory_element(plan: Plan, loop: Node) -> None:
    """Raises Illegal where a grid-stride loop's element runs a loop of its own (in the body
    or in a file function it calls): a compute-bound element, the items family's
    (:mod:`.ilp`) to interleave; VEC's lanes would run it one after another."""
    body = loop.child_by_field_name("body")
    helpers = plan.source.function_definitions()
    for n in walk(body) if body is not None else []:
        if n.type in ("for_statement", "while_statement", "do_statement"):
            raise Illegal("the grid-stride loop's element runs a loop of its own (line "
                          f"{n.start_point.row + 1}): compute-bound, the items family's", n)
        name = text(n.child_by_field_name("function")) if n.type == "call_expression" else ""
        fn = helpers.get(name.split("<")[0])
        if fn is not None and _has_loop(fn):
            raise Illegal(f"the grid-stride loop's element calls `{name}`, which runs a loop: "
                          "compute-bound, the items family's", n)


def _has_loop(body: Node) -> bool:
    """Whether ``body`` holds a loop."""
    return any(n.type in ("for_statement", "while_statement", "do_statement")
               for n in walk(body))


def _guarded(plan: Plan, region: Region, by_array: dict[str, list[Access]], vector: str,
             mine: list[Edit]) -> str:
    """``vector`` behind a per-item run-time test, the loop as written (with every other
    transform's edits) otherwise. Each stream's range is ``[&A[index at var = 0], + bound
    elements)``; the vector path needs every written range to be equal to (same address and
    element size: exact in-place, each access being ``offset + var``) or disjoint from
    every other range. Addresses are compared as integers."""
    rw = plan.rw
    scalar = rendered_without(rw, mine, lambda: rw.render(region.node.start_byte,
                                                          region.end_byte))
    bound = rw.text(region.bound)
    lines, conds = [], []
    info = {}
    for s, g in by_array.items():
        elem = elem_type(plan, g[0].array)
        lines.append(f"      const unsigned long long wb_at_{s} = (unsigned long long)"
                     f"(const void*)&{g[0].array}[{rw.text(g[0].index)}];\n")
        info[s] = (elem, any(a.write for a in g))
    names = list(by_array)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if not (info[a][1] or info[b][1]):
                continue
            ends = [f"wb_at_{x} + (unsigned long long)({bound}) * sizeof({info[x][0]})"
                    for x in (a, b)]
            same = f"(wb_at_{a} == wb_at_{b} && sizeof({info[a][0]}) == sizeof({info[b][0]}))"
            conds.append(f"({same} || {ends[0]} <= wb_at_{b} || {ends[1]} <= wb_at_{a})")
    return (f"{{  // vector path only where written and read ranges are the same or disjoint\n"
            f"    bool wb_apart;\n    {{\n      const {region.var_type} {region.var} = 0;\n"
            f"{''.join(lines)}      wb_apart = {' && '.join(conds)};\n    }}\n"
            f"    if (wb_apart) {vector} else {scalar}\n  }}")


def vector_moves(plan: Plan, by_array: dict[str, list[Access]], items: str, slot: str,
                 address: Callable[[Access], str], indent: int) -> tuple[str, str, str]:
    """Each stream's register vectors (``items`` of them), each read stream's vector load
    into ``[slot]`` and each written stream's vector store from it, at ``address`` (the
    stream's first access): (declarations, loads, stores), the moves ``indent`` deep."""
    pad = " " * indent
    decls = "".join(f"    WbVec<{elem_type(plan, g[0].array)}, VEC> wb_{s}[{items}];\n"
                    for s, g in by_array.items())
    loads = "".join(
        f"{pad}wb_{s}[{slot}] = *reinterpret_cast<const WbVec<{elem_type(plan, g[0].array)}, "
        f"VEC>*>({address(g[0])});\n"
        for s, g in by_array.items() if any(x.read for x in g))
    stores = "".join(
        f"{pad}*reinterpret_cast<WbVec<{elem_type(plan, g[0].array)}, VEC>*>"
        f"({address(g[0])}) = wb_{s}[{slot}];\n"
        for s, g in by_array.items() if any(x.write for x in g))
    return decls, loads, stores


def _vector_text(plan: Plan, region: Region, by_array: dict[str, list[Access]], *,
                 split: bool, scalar: str | None, groups: str | None = None,
                 stores_last: bool = False, rows: UnitRows | None = None) -> str:
    """The region vectorized; ``scalar`` (the element's statements as written, a compound
    statement) the scalar tail of the item whose vector would cross the bound, None where
    the bound is a multiple of VEC (:mod:`.vector_tail`). ``groups``: the lanes with their
    row-group loads (:meth:`.vector_rowgroup.RowGroups.lanes`), which load in the lanes:
    every item's lanes then run before any item's stores, so the items' loads are in
    flight together; ``stores_last``: so too for lanes that load as written (a gather).
    ``rows``: each item ``ITEM_ROWS`` items, rows of one unit (:mod:`.vector_unit_rows`)."""
    rw = plan.rw
    var, typ = region.var, region.var_type
    bound = rw.text(region.bound)
    start, step = region.start, region.step
    place = region.place  # with an offset: the start's terms VEC scales
    if split:
        # grid.y == ROW_SPLIT (launch rule): a compile-time stride
        place = f"{place} + blockIdx.y * ({step})" if place is not None else None
        start, step = f"{start} + blockIdx.y * ({step})", f"({step}) * ROW_SPLIT"
    items = "ITEMS_PER_THREAD" if rows is None else f"ITEMS_PER_THREAD * {ROWS_KNOB}"
    decls, loads, stores = vector_moves(plan, by_array, items, "wb_i",
                                        lambda a: f"&{a.array}[{rw.text(a.index)}]", 8)
    item = f"    const {typ} {var} = wb_{var}0 + wb_i * ({step}) * VEC;\n" if rows is None else \
        f"    const {typ} {var} = {rows.item(var, step)};\n"
    body = region.text(rw)
    whole = whole_test(var, bound, scalar is not None)
    tail = tail_text(var, typ, bound, scalar) if scalar is not None else ""
    lanes = groups if groups is not None else \
        f"#pragma unroll\n        for (int wb_v = 0; wb_v < VEC; ++wb_v) {body}\n"
    kept = stores if groups is None and not stores_last else ""  # stores with the lanes
    middle = (f"#pragma unroll\n  for (int wb_i = 0; wb_i < {items}; ++wb_i) {{\n"
              f"  {item}      if ({whole}) {{\n{lanes}{kept}      }}{tail}\n    }}\n")
    if rows is not None and groups is None:  # a unit's rows in one block
        middle = rows.units(middle, body, var, typ, step, bound, kept)
    inner = (f"{decls}#pragma unroll\n  for (int wb_i = 0; wb_i < {items}; ++wb_i) {{\n"
             f"  {item}      if ({whole}) {{\n{loads}      }}\n    }}\n{middle}")
    if groups is not None or stores_last:  # the stores after every item's lanes
        inner += (f"#pragma unroll\n  for (int wb_i = 0; wb_i < {items}; ++wb_i) {{\n"
                  f"  {item}      if ({whole}) {{\n{stores}      }}\n    }}\n")
    if region.loop:
        guards = "".join(f"({rw.text(g)}) && " for g in region.guards)
        # an offset start (begin + threadIdx.x): begin + the thread's place * VEC
        first = f"({start}) * VEC" if place is None else f"({start}) + ({place}) * (VEC - 1)"
        return (f"for ({typ} wb_{var}0 = {first}; {guards}wb_{var}0 < {bound}; "
                f"wb_{var}0 += ({step}) * (VEC * ITEMS_PER_THREAD)) {{\n{inner}  }}")
    return f"{{\n    const {typ} wb_{var}0 = ({start}) * VEC;\n{inner}  }}"


def stride_loops(plan: Plan) -> list[StrideLoop]:
    size = literal(plan.block[0]) if plan.block and literal(plan.block[0]) else None
    out = []
    for n in walk(plan.body):
        if n.type == "for_statement":
            loop = stride_loop(n, plan.facts, size if size is not None else -1)
            if loop is None and plan.block and plan.block[0] in plan.params:
                loop = _lifted_loop(plan, n)
            if loop is not None:
                out.append(loop)
    return out


def start_parts(plan: Plan, loop: StrideLoop) -> tuple[str | None, tuple[Node, ...]]:
    """A loop's start as the thread's place and an offset: ``begin + threadIdx.x`` walks a
    chunk from ``begin``, where the thread's first vector is ``begin + threadIdx.x * VEC``,
    not ``(begin + threadIdx.x) * VEC``. The place is the thread term (and, in a grid-stride
    loop, the block's ``blockIdx.x * B``), counted in steps; the offset is every other term,
    the same for every thread the step deals elements to (no ``threadIdx.x``; no
    ``blockIdx.x`` in a grid-stride loop). Returns (the place rendered, the offset's terms),
    (None, ()) where the whole start is the place; raises Illegal for an offset that
    differs between those threads."""
    parts = terms(loop.start)
    place = [(s, t) for s, t in parts if plan.facts.is_thread(t, "x") or (
        loop.grid_stride and any(builtin(f, "blockIdx") == "x" for f in factors(t)))]
    offset = [(s, t) for s, t in parts if (s, t) not in place]
    if not offset:
        return None, ()
    for s, _t in place:
        if s < 0:
            raise Illegal(f"the loop starts at `{text(loop.start)}`, the thread's place "
                          "subtracted", loop.start)
    for _s, t in offset:
        if _per_thread(plan, t, loop.grid_stride):
            raise Illegal(f"the loop's start `{text(loop.start)}` adds `{text(t)}`, which "
                          "differs between the threads the step deals elements to (or is "
                          "not shown not to)", loop.start)
    return " + ".join(plan.rw.text(t) for _s, t in place), tuple(t for _s, t in offset)


def _per_thread(plan: Plan, node: Node, grid: bool, depth: int = 0) -> bool:
    """Whether ``node`` may differ between the threads of a step: it reads ``threadIdx.x``
    (``blockIdx.x`` too where the step is the grid's), through the locals it reads, or a
    local assigned after its declaration."""
    for n in walk(node):
        if builtin(n, "threadIdx") == "x" or (grid and builtin(n, "blockIdx") == "x"):
            return True
        d = plan.facts.defs.get(text(n)) if n.type == "identifier" else None
        if d is not None and (d.assigned or d.value is None or depth > 4 or
                              _per_thread(plan, d.value, grid, depth + 1)):
            return True
    return False


def _lifted_loop(plan: Plan, n: Node) -> StrideLoop | None:
    """A stride loop whose literal step was lifted already (the step node is the literal)."""
    default = plan.params[plan.block[0]].spec["default"]
    return stride_loop(n, plan.facts, int(default))


def apply_vector(plan: Plan) -> bool:
    """VEC and ITEMS_PER_THREAD (and ROW_SPLIT where legal) on every unit-stride region."""
    if len(plan.block) == 2:  # along x, the rows' y as written (vector_rows reads this module)
        from workbench.templater.vector_rows import apply_vector_rows

        return apply_vector_rows(plan)
    if len(plan.block) != 1:
        plan.note("VEC", False, "the block is 3-D; vector width is lifted for 1-D and 2-D "
                  "blocks only")
        return False
    block = plan.block[0]
    split_ok = _row_split_legal(plan)
    regions: list[Region] = []
    refused = False  # a loop refused with its reason: no "no loop" note besides
    for loop in stride_loops(plan):
        var = loop.var
        step = plan.rw.text(loop.step)
        try:
            place, offset = start_parts(plan, loop)
            if loop.grid_stride:
                _memory_element(plan, loop.node)
        except Illegal as exc:
            plan.note("VEC", False, exc.reason, exc.node or loop.node)
            refused = True
            continue
        regions.append(Region(var, loop.var_type, loop.node.child_by_field_name("body"),  # type: ignore[arg-type]
                              loop.bound, plan.rw.text(loop.start), step, True, loop.node,
                              place=place, offset=offset))
    flat = vector_flat(plan) if not regions else None
    kept = thread_state_before(plan, flat) if flat is not None else None
    if kept is not None:
        plan.note("VEC", False, kept[0], kept[1])
        return False
    if flat is not None:
        regions.append(_flat_as_region(plan, flat))
    if not regions:
        if not refused:
            plan.note("VEC", False, "no unit-stride per-thread loop and no one-element-per-"
                      "thread region (i = blockIdx.x * B + threadIdx.x; if (i < n) .. or if "
                      "(i >= n) return; ..)")
        return False
    from workbench.templater.ilp import would_interleave  # ilp reads this module

    compute = would_interleave(plan)
    if compute is not None:  # compute-bound: items with independent state interleave it
        plan.note("VEC", False, "the per-element work runs a compute loop (line "
                  f"{compute.start_point.row + 1}): ITEMS_PER_THREAD interleaves the items' "
                  "chains in it, where vector lanes would run it one after another", compute)
        return False
    from workbench.templater.reduce_atomic import counted_loop  # it reads this module

    counted = counted_loop(plan)
    done = 0
    shaped: UnitRows | None = None  # the flat region's items over rows
    for region in regions:
        split = split_ok and region.loop
        if counted is not None and region.node == counted and \
                size_expression(plan, region.bound) is None:
            # the scalar tail would let any bound in; which order of the elements the count
            # allows (an integer, a floating sum the atomic takes whole) is the family's
            plan.note("VEC", False, f"the loop over {region.var} is the counting loop of a "
                      "shared atomic total, bounded by a local: its vector loads are the "
                      "counting loop's (below), which shows the elements' order free",
                      region.node)
            continue
        try:
            # the run-time alias test falls back to the loop as written: a whole row per
            # thread stride, which a split row's blocks would each run again
            rows = None
            if not region.loop:
                try:
                    rows = unit_rows(plan, region)
                except Illegal as exc:
                    plan.note(ROWS_KNOB, False, exc.reason, exc.node or region.node)
            for c in vectorize(plan, region, split=split, alias_guard=region.loop and not split,
                               rows=rows):
                plan.constrain(c)
            if rows is not None:
                shaped = rows
            done += 1
            summed = _floating_sums(plan, region) if region.loop else []
            plan.note("VEC", True, f"{'loop' if region.loop else 'region'} over {region.var} "
                      "vectorized" + (f" (the floating sum{'s' * (len(summed) > 1)} "
                                      f"{', '.join(summed)} add{'s' * (len(summed) == 1)} each thread's elements in "
                                      "another order at VEC > 1: within rounding, the gate "
                                      "checks the folder's tolerance)" if summed else ""),
                      region.node)
        except Illegal as exc:
            plan.note("VEC", False, exc.reason, exc.node or region.node)
    if not done:
        return False
    if flat is not None and done:
        plan.rw.replace(flat.decl, f"// {text(flat.decl)}  (now per item, below)")
        rows_factor = f" * {ROWS_KNOB}" if shaped is not None else ""
        new = scale_divisor(plan.grid[0], block,
                            f"{block} * VEC * ITEMS_PER_THREAD{rows_factor}")
        if new is None:
            raise Illegal(f"grid rule {plan.grid[0]!r} does not divide by {block}")
        plan.grid[0] = new
    elif any(loop.grid_stride for loop in stride_loops(plan)):
        new = scale_divisor(plan.grid[0], block, f"{block} * VEC * ITEMS_PER_THREAD")
        plan.grid[0] = new if new is not None else _spanned_grid(plan, block, regions)
    plan.add_param("VEC", {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                           "description": "elements per vector load/store (as written: 1)"},
                   f"{regions[0].node.start_point.row + 1}: unit-stride loop over "
                   f"{regions[0].var}")
    plan.add_param("ITEMS_PER_THREAD", {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                                        "description": "vectors each thread loads before "
                                                       "using any (as written: 1)"},
                   f"{regions[0].node.start_point.row + 1}: loop over {regions[0].var}")
    if shaped is not None:
        for c in shaped.constraints():
            plan.constrain(c)
        plan.helper(UNIT_ROW)
        plan.helper(UNIT_AT)  # the rows' quotients from their unit's first row's
        plan.add_param(ROWS_KNOB, {"kind": "choice", "values": [1, 2, 4], "default": 1,
                                   "description": "rows of an item: VEC columns of ITEM_ROWS "
                                                  "consecutive rows of the index's row "
                                                  "(as written: 1)"},
                       f"{shaped.width.start_point.row + 1}: row width "
                       f"{text(shaped.width)}")
        plan.note(ROWS_KNOB, True, f"the items of {regions[0].var} are VEC columns by "
                  f"{ROWS_KNOB} rows of its row {text(shaped.width)}", shaped.width)
    if split_ok and any(r.loop for r in regions):
        plan.grid = [plan.grid[0], "ROW_SPLIT"]
        plan.add_param("ROW_SPLIT", {"kind": "pow2", "min": 1, "max": 16, "default": 1,
                                     "description": "blocks sharing one row (fills the GPU "
                                                    "when rows are few and long)"},
                       f"{plan.source.line_of(plan.body)}: one block per row")
        plan.note("ROW_SPLIT", True, "rows are independent per element (no shared memory, "
                  "barrier or atomics): a row's vectors are dealt over gridDim.y blocks")
    return True


def _flat_as_region(plan: Plan, flat: FlatRegion) -> Region:
    """The one-element region of ``flat``: its items ``B * ITEMS_PER_THREAD`` apart from the
    block's first (B the block rule)."""
    var, _d, first = declared_name(flat.decl)
    body = plan.body if flat.exit else flat.guard.child_by_field_name("consequence")
    assert body is not None
    typ = text(flat.decl.child_by_field_name("type"))
    # a cast the author put on the index's math (``(size_t)blockIdx.x * ..``) kept: the
    # first vector's index in the index's type, not wrapped in 32 bits
    wide = f"({typ})" if first is not None and any(
        n.type == "cast_expression" for n in walk(first)) else ""
    block = plan.block[0]
    return Region(var, typ, body, flat.bound,
                  f"{wide}blockIdx.x * ({block} * ITEMS_PER_THREAD) + threadIdx.x",
                  block, False, flat.guard, exit=flat.exit)


def vector_flat(plan: Plan) -> FlatRegion | None:
    """The one-element region VEC rewrites: :func:`.vector_regions.flat_region` with a
    literal block, or on a 1-D block with ``blockIdx.x * blockDim.x`` where it reads a row
    group (:mod:`.vector_rowgroup`: the loads that spelling's region gains); None
    otherwise."""
    flat = flat_region(plan)
    if flat is not None or len(plan.block) != 1:
        return flat
    spelled = flat_region(plan, block_dim=True)
    if spelled is None or thread_state_before(plan, spelled) is not None:
        return None
    region = _flat_as_region(plan, spelled)
    try:
        streams, _values = region_accesses(plan, region)
    except Illegal:
        return None
    return spelled if row_reads(plan, region, streams) else None


def _spanned_grid(plan: Plan, block: str, regions: list[Region]) -> str:
    """A grid-stride loop launched on ``ceil_div(n, S * B)`` (S trips a thread as written):
    the grid ``ceil_div(n, B * VEC * ITEMS_PER_THREAD * SPAN)`` with the SPAN knob (any grid
    is covered: the loop steps by the grid); the rule as written where it is no such one."""
    from workbench.templater.ilp_gridstride import SPAN, add_span, grid_span

    span = grid_span(plan, block)
    lifted = plan.params.get(block)
    written = str(lifted.spec["default"]) if lifted is not None else block
    divisor = f"{block} * VEC * ITEMS_PER_THREAD"
    new = scale_divisor(plan.grid[0], str(int(written) * span), f"{divisor} * {SPAN}") \
        if span is not None else None
    if span is None or new is None:
        return plan.grid[0]
    add_span(plan, span, divisor, regions[0].node)
    return new


def _row_split_legal(plan: Plan) -> bool:
    why = None
    if len(plan.grid) != 1 or len(plan.block) != 1:
        why = "the launch is not a 1-D grid of 1-D blocks"
    elif any(d.is_shared for d in plan.facts.defs.values()):
        why = "the block shares data in __shared__ memory (a reduction over the row)"
    elif any(c == "__syncthreads" or c.startswith("atomic") for c in calls(plan.body)):
        why = "the kernel synchronises or uses atomics"
    elif any(builtin(n, "blockIdx") in ("y", "z") or builtin(n, "gridDim") in ("y", "z")
             or builtin(n, "gridDim") == "x" for n in walk(plan.body)):
        why = "the kernel already reads gridDim or blockIdx.y"
    loops = stride_loops(plan)
    if why is None and not loops:
        why = "no thread-stride loop over a row"
    if why is None:
        inside = [(lp.node.start_byte, lp.node.end_byte) for lp in loops]
        for n in walk(plan.body):
            if n.type == "assignment_expression":
                left = n.child_by_field_name("left")
                if left is not None and left.type == "subscript_expression" and not any(
                        a <= n.start_byte < b for a, b in inside):
                    why = f"`{text(n)}` writes memory outside the row loop"
                    break
    if why is not None:
        plan.note("ROW_SPLIT", False, why)
        return False
    return True
