"""Several blocks as written in one block, and rows of a block a thread: MERGE_X, MERGE_Y,
ROWS_PER_THREAD.

The family: a block of literal size (``8 x 8``: one HOG cell, one histogram tile) that works
in phases ``__syncthreads()`` separates, on ``__shared__`` arrays of its own that it adds
into with atomics (a per-block histogram or count), each block
alone (``blockIdx`` picks its piece of the data, no block reads another's result). Such a
block is often small (64 threads: its shared atomics contend, its barriers and its first and
last phases are a large share of its work); the grid's blocks are independent, so a block of
the template runs ``MERGE_X x MERGE_Y`` of them side by side, each its own copy of the shared
arrays (``s[NB]`` -> ``s[MERGE_X * MERGE_Y][NB]``), and each thread may run ``ROWS_PER_THREAD``
rows of its block's threads (``threadIdx.y`` = ``r``, ``r + BY / ROWS``, ...) in every phase.

Read off the body's top level (each refusal names the line):

* every barrier is the statement ``__syncthreads();`` at the body's top level (every thread
  reaches it once, in order);
* *thread-derived* locals: declarations at the top level with one value built from
  ``threadIdx``, ``blockIdx``, ``gridDim``, ``blockDim``, arguments, literals and other such
  locals, no memory read or call but pure integer helpers, never assigned; recomputed from
  the item in each phase that reads them;
* everything else at the top level is a phase's per-thread work, in runs between barriers.

Legal where no per-thread value lives across a barrier (a name a run declares is read nowhere
past it), nothing returns, jumps or talks between threads but through the barriers and the
shared arrays (no warp intrinsics, no ``volatile``, atomics only as statements whose result no
one reads): within a phase the threads as written ran in no order the program could rely
on, so running a thread's rows in turn, and the blocks side by side, is one of their orders.
A float ``atomicAdd`` into shared memory then adds in another order: the kernel as written
already adds in the order its atomics land, which nothing fixes, so its sums are defined
up to that rounding (the gate compares within the folder's tolerance).

The grid as written (``ceil_div(w, 8)``, read from the kernel's arguments) bounds the blocks
of a template block: one past it runs along to every barrier and works on nothing, and
``gridDim`` reads as the grid as written. At MERGE_X = MERGE_Y = ROWS_PER_THREAD = 1 the launch,
the threads and their work are the kernel as written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.templater.analysis import builtin, is_barrier, text, walk
from workbench.templater.block_merge_bins import emit_private, flush, run_bins
from workbench.templater.block_merge_bins import opening as bins_opening
from workbench.templater.block_phases import (
    _assigned_anywhere,
    _declarator_name,
    _needed,
    _shared,
    _statements,
    _writes,
    recomputed,
    refuse_read_past,
)
from workbench.templater.const_lanes import const_eval, element_bytes
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, fresh_names
from workbench.templater.rules import literal, rule_in_c, scalar_sizes

MERGE_X, MERGE_Y, ROWS, PRIVATE = "MERGE_X", "MERGE_Y", "ROWS_PER_THREAD", "PRIVATE"
#: Calls through which threads talk without a barrier.
_TALK = ("__shfl", "__syncwarp", "__ballot", "__any", "__all", "__activemask", "__match",
         "__reduce_", "__syncthreads_", "__threadfence", "cooperative_groups", "this_grid")
#: Calls a thread-derived value may make (pure integer helpers).
_PURE_CALLS = frozenset({"min", "max", "umin", "umax", "abs"})
_LEAF = frozenset({"identifier", "number_literal", "binary_expression", "unary_expression",
                   "parenthesized_expression", "cast_expression", "conditional_expression",
                   "type_descriptor", "primitive_type", "sized_type_specifier",
                   "type_identifier", "type_qualifier", "true", "false", "argument_list",
                   "call_expression", "field_identifier", "template_function",
                   "template_argument_list"})
_BUILTINS = ("threadIdx", "blockIdx", "gridDim", "blockDim")


@dataclass
class Phases:
    """The body's top level: shared declarations, thread-derived declarations, runs."""

    shared: list[Node] = field(default_factory=list)
    derived: list[Node] = field(default_factory=list)
    runs: list[list[Node]] = field(default_factory=list)


def is_candidate(plan: Plan) -> bool:
    """A literal 2-D block (both sizes over 1), a 2-D grid, a barrier and an atomic on a
    shared array: the outline; the analysis says the rest. A 1-D block is left to the block
    lift, which moves its threads over the same work (BLOCK_THREADS, items a thread): merged
    blocks would take those knobs away. A block with no shared atomic is left to the other
    families too: the family's gain is the atomics' (fewer threads of a warp on one block's
    bins, the votes summed in registers), a stencil's tile gains nothing from a neighbour
    block beside it."""
    sizes = [literal(b) for b in plan.block]
    if len(sizes) != 2 or None in sizes or any((s or 0) <= 1 for s in sizes) or \
            len(plan.grid) != 2:
        return False
    calls = {text(n.child_by_field_name("function")) for n in walk(plan.body)
             if n.type == "call_expression"}
    shared = {text(d) for n in walk(plan.body) if n.type == "declaration" and _shared(n)
              for c in n.children_by_field_name("declarator")
              if (d := _declarator_name(c)) is not None}
    return "__syncthreads" in calls and any(
        n.type == "call_expression" and text(n.child_by_field_name("function")).startswith(
            "atomic") and any(i.type == "identifier" and text(i) in shared for i in walk(n))
        for n in walk(plan.body))


def lift_merge(plan: Plan) -> bool:
    """Apply the family where the analysis shows it legal; True when it lifted."""
    if not is_candidate(plan):
        return False
    try:
        phases = _phases(plan)
        grid_c = [_grid_in_c(plan, rule) for rule in plan.grid]
    except Refused as exc:
        plan.note(MERGE_X, False, exc.reason, exc.node)
        return False
    sizes = [literal(b) for b in plan.block]
    bx, by = sizes[0] or 1, sizes[1] or 1
    names = fresh_names(plan, [MERGE_X, MERGE_Y, ROWS, PRIVATE])
    mx, my, rows = names[MERGE_X], names[MERGE_Y], names[ROWS]
    histograms = [b for run in phases.runs if (b := run_bins(run, phases.shared)) is not None]
    private = names[PRIVATE] if histograms else ""
    _emit(plan, phases, bx, by, grid_c, mx, my, rows, private)
    anchor = phases.runs[0][0]
    origin = f"{anchor.start_point.row + 1}: {text(anchor).splitlines()[0].strip()}"
    plan.add_param(mx, {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                        "description": "blocks as written side by side along x in one block, "
                                       "each its own shared arrays (as written: 1)"}, origin)
    plan.add_param(my, {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                        "description": "blocks as written side by side along y in one "
                                       "block (as written: 1)"}, origin)
    plan.add_param(rows, {"kind": "choice",
                          "values": [r for r in (1, 2, 4, 8, 16) if by % r == 0],
                          "default": 1,
                          "description": f"rows of the {by} thread rows as written a thread "
                                         f"runs in every phase, strided by {by} / {rows} (as "
                                         "written: 1)"}, origin)
    threads = f"{bx} * {mx} * ({by} * {my} / {rows})"
    if private:
        pow2 = all(v & (v - 1) == 0 for v in (bx, by))
        plan.add_param(private, {"kind": "choice", "values": [0, 1, 2] if pow2 else [0, 1],
                                 "default": 0,
                                 "description": "0: a shared atomic a vote (as written); 1: "
                                 "each thread's votes over its rows in registers, then one "
                                 "atomic a bin; 2: those registers summed over the lanes of "
                                 "a block as written by warp shuffles first"}, origin)
        if pow2:
            plan.constrain(f"{private} < 2 or ({threads}) % 32 == 0")
        plan.note(private, True, f"{', '.join(b.name for b in histograms)}: "
                  f"{sum(len(b.atomics) for b in histograms)} atomicAdd statements summed in "
                  "registers (the sums in another order)", histograms[0].atomics[0])
    else:
        plan.note(PRIVATE, False, "no phase only adds into one small shared array by "
                  "atomicAdd statements", anchor)
    plan.grid = [f"ceil_div({plan.grid[0]}, {mx})", f"ceil_div({plan.grid[1]}, {my})"]
    plan.block = [f"{bx} * {mx}", f"{by} * {my} / {rows}"]
    plan.launch_bounds = threads
    plan.constrain(f"{threads} <= 1024")
    if bx * by >= 32:
        # a block as written of a warp or more never shrinks below a warp: ROWS_PER_THREAD
        # without MERGE_X/MERGE_Y would otherwise leave blocks of a few threads
        plan.constrain(f"{threads} >= 32")
    size = _bytes(phases.shared) or 0
    if size:
        plan.constrain(f"{size} * {mx} * {my} <= 49152")
    atomics = sorted({text(n.child_by_field_name("function")) for run in phases.runs
                      for s in run for n in walk(s) if n.type == "call_expression" and
                      text(n.child_by_field_name("function")).startswith("atomic")})
    plan.note(MERGE_X, True, f"{len(phases.runs)} phases between barriers; blocks as written "
              f"side by side ({mx} x {my}), each its copy of the {size} shared bytes; rows a "
              f"thread {rows}; thread-derived locals recomputed per item; the grid as written "
              f"({', '.join(grid_c)}) bounds the blocks"
              + (f"; {', '.join(atomics)} into shared memory in another order (floats: within "
                 "the tolerance)" if atomics else ""), anchor)
    return True


# -- the analysis --------------------------------------------------------------------------


def _phases(plan: Plan) -> Phases:
    for n in walk(plan.body):
        if n.type == "call_expression":
            fn = text(n.child_by_field_name("function"))
            if fn.startswith(_TALK):
                raise Refused(f"`{text(n)[:50]}`: threads talk outside the barriers, so one "
                              "thread cannot run several of them in turn", n)
            if fn == "__syncthreads" and not (n.parent is not None and is_barrier(n.parent)
                                              and n.parent.parent == plan.body):
                raise Refused("a barrier not at the kernel's top level: the threads of "
                              "merged blocks would part at it", n)
            if fn.startswith("atomic") and (n.parent is None or
                                            n.parent.type != "expression_statement"):
                raise Refused(f"`{text(n)[:50]}`: an atomic whose result is read; the "
                              "threads as written would see other values", n)
        if n.type in ("return_statement", "goto_statement"):
            raise Refused("a thread leaves the kernel early: the threads of merged blocks "
                          "must reach every barrier", n)
        if text(n) == "volatile" or n.type == "reference_declarator":
            raise Refused(f"`{text(n)[:50]}`: memory threads read without a barrier, or a "
                          "local reached through a reference", n)
        if n.type == "field_expression" and any(builtin(n, b) == "z" for b in _BUILTINS):
            raise Refused(f"`{text(n)}`: a third dimension", n)
        if n.type == "pointer_expression" and text(n.child_by_field_name("operator")) == "&" \
                and text(n.child_by_field_name("argument")).isidentifier():
            raise Refused(f"`{text(n)[:50]}`: a local's address", n)
    for decl in walk(plan.source.tree.root_node):
        if decl.type != "declaration" or not _shared(decl):
            continue
        if not (plan.body.start_byte <= decl.start_byte < plan.body.end_byte):
            names = {text(nm) for d in decl.children_by_field_name("declarator")
                     if (nm := _declarator_name(d)) is not None}
            used = next((u for u in walk(plan.body) if u.type == "identifier" and
                         text(u) in names), None)
            if used is not None:
                raise Refused(f"`{text(used)}`: a shared array declared outside the kernel, "
                              "which merged blocks would share", used)
        elif decl.parent != plan.body:
            raise Refused(f"`{text(decl)[:50]}`: a shared array declared below the kernel's "
                          "top level", decl)
    out = Phases()
    run: list[Node] = []
    derivable: set[str] = set()
    for stmt in _statements(plan.body):
        if stmt.type == "declaration" and _shared(stmt):
            if any(text(c) == "extern" for c in stmt.children):
                raise Refused(f"`{text(stmt)[:50]}`: a dynamic shared array, its size not "
                              "the kernel's", stmt)
            out.shared.append(stmt)
            continue
        if is_barrier(stmt):
            if run:
                out.runs.append(run)
            run = []
            continue
        if _derived(plan, stmt, derivable):
            out.derived.append(stmt)
            continue
        run.append(stmt)
    if run:
        out.runs.append(run)
    if not out.runs:
        raise Refused("no per-thread work between the barriers", plan.body)
    if _bytes(out.shared) is None:
        raise Refused("a shared array's size does not evaluate", out.shared[0])
    for decl in out.shared:
        for d in walk(decl):
            if d.type == "init_declarator":
                raise Refused(f"`{text(decl)[:50]}`: a shared variable with an initialiser",
                              decl)
    for run in out.runs:
        refuse_read_past(plan, run, "a barrier")
    return out


def _bytes(shared: list[Node]) -> int | None:
    """The bytes of every variable the ``__shared__`` declarations declare, else None."""
    total = 0
    for decl in shared:
        size = element_bytes(text(decl.child_by_field_name("type")))
        for top in decl.children_by_field_name("declarator"):
            count = 1
            d: Node | None = top
            while d is not None and d.type == "array_declarator":
                extent = const_eval(d.child_by_field_name("size"))
                if extent is None:
                    return None
                count *= extent
                d = d.child_by_field_name("declarator")
            if size is None or d is None or d.type != "identifier":
                return None
            total += size * count
    return total


def _derived(plan: Plan, stmt: Node, derivable: set[str]) -> bool:
    """``stmt`` declares one never-assigned local from the thread and block indices,
    arguments, literals and earlier such locals (adds it to ``derivable``)."""
    if stmt.type != "declaration":
        return False
    declarators = stmt.children_by_field_name("declarator")
    writes = _writes(stmt)
    if len(declarators) != 1 or declarators[0].type != "init_declarator" or len(writes) != 1:
        return False
    name = writes[0][0]
    value = declarators[0].child_by_field_name("value")
    if value is None or _assigned_anywhere(plan, name) or \
            not _pure_value(plan, value, derivable):
        return False
    derivable.add(name)
    return True


def _pure_value(plan: Plan, value: Node, derivable: set[str]) -> bool:
    """``value`` reads no memory, calls only pure integer helpers and names only the
    builtins, arguments, constants and locals in ``derivable``."""
    locals_ = _locals(plan)
    for n in walk(value):
        if n.type == "field_expression":
            if not any(builtin(n, b) for b in _BUILTINS):
                return False
            continue
        if n.parent is not None and n.parent.type == "field_expression":
            continue
        if n.is_named and n.type not in _LEAF:
            return False
        fn = text(n.child_by_field_name("function")) if n.type == "call_expression" else ""
        if n.type == "call_expression" and fn not in _PURE_CALLS and \
                not fn.startswith("static_cast<"):
            return False
        if n.type == "identifier" and text(n) not in derivable and (
                text(n) in locals_ or _assigned_anywhere(plan, text(n))):
            return False  # a local, or an argument the kernel assigns: not the same later
    return True


def _locals(plan: Plan) -> set[str]:
    """Every name the body declares."""
    return {text(d) for n in walk(plan.body) if n.type == "declaration"
            for c in n.children_by_field_name("declarator")
            if (d := _declarator_name(c)) is not None}


def _grid_in_c(plan: Plan, rule: str) -> str:
    """The grid rule (``ceil_div(w, 8)``) as C over the kernel's scalar arguments, or
    Refused: the blocks past the grid as written must be told apart in the kernel."""
    c = rule_in_c(rule, scalar_sizes(plan.scalars))
    if c is None:
        raise Refused(f"the grid rule `{rule}` is not a function of the kernel's scalar "
                      "arguments: blocks past the grid as written cannot be told apart",
                      plan.body)
    return c


# -- emission ------------------------------------------------------------------------------


def _emit(plan: Plan, phases: Phases, bx: int, by: int, grid_c: list[str],
          mx: str, my: str, rows: str, private: str) -> None:
    shared = {text(n) for decl in phases.shared for d in decl.children_by_field_name(
        "declarator") if (n := _declarator_name(d)) is not None}
    declared = [n for decl in phases.shared for d in decl.children_by_field_name("declarator")
                if (n := _declarator_name(d)) is not None]
    for name in declared:
        plan.rw.replace(name, f"{text(name)}[{mx} * {my}]")
    names = {"threadIdx": {"x": "wb_tx", "y": "wb_ty"}, "blockIdx": {"x": "wb_bx", "y": "wb_by"},
             "gridDim": {"x": "wb_gx", "y": "wb_gy"},
             "blockDim": {"x": str(bx), "y": str(by)}}
    spans = [*phases.derived, *(s for run in phases.runs for s in run)]
    for stmt in spans:
        for n in walk(stmt):
            if n.type == "identifier" and text(n) in shared:
                plan.rw.replace(n, f"{text(n)}[wb_sub]")
            if n.type == "field_expression":
                for b, dims in names.items():
                    dim = builtin(n, b)
                    if dim is not None and dim in dims:
                        plan.rw.replace(n, dims[dim])
    for decl in phases.derived:
        plan.rw.replace(decl, "")
    step = f"({by} / {rows})"
    head = (f"\n  const int wb_gx = {grid_c[0]}, wb_gy = {grid_c[1]};"
            f"\n  const int wb_sx = threadIdx.x / {bx}, wb_tx = threadIdx.x % {bx};"
            + f"\n  const int wb_sy = threadIdx.y / {step};"
            + f"\n  const int wb_sub = wb_sy * {mx} + wb_sx;"
            f"\n  const int wb_bx = blockIdx.x * {mx} + wb_sx, wb_by = "
            + f"blockIdx.y * {my} + wb_sy;"
            + "\n  const bool wb_live = wb_bx < wb_gx && wb_by < wb_gy;")
    plan.rw.insert(plan.body.start_byte + 1, head)
    for run in phases.runs:
        needed = _needed(run, phases.derived)
        rowline = f"const int wb_ty = threadIdx.y % {step} + wb_k * {step}; "
        bins = run_bins(run, phases.shared) if private else None
        if bins is not None:
            emit_private(plan.rw, bins, private)
        opening = ("{" + (bins_opening(bins, private) if bins is not None else "\n") +
                   f"#pragma unroll\n  for (int wb_k = 0; wb_k < {rows}; ++wb_k) {{ "
                   f"{rowline}if (wb_live) {{")

        plan.rw.replace_span(run[0].start_byte, run[0].start_byte,
                             make=recomputed(opening, needed))
        plan.rw.insert(run[-1].end_byte, "\n  }}" + (
            flush(bins, private, bx, step, f"{bx} * {mx}") if bins is not None else "") + "}")
