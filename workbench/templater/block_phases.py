"""Block-per-row kernels in barrier-separated phases whose block size is implied: threads
per block and rows per block (BLOCK_THREADS, ROWS_PER_BLOCK).

The family: a 1-D block of N threads (the launch's literal; ``blockDim`` never read) works
on shared memory in phases that ``__syncthreads()`` separates, each thread owning fixed
positions (``t`` and ``t + N``), the phases in straight code or in loops every thread runs
alike (a butterfly's ``while (h < ROW) {..; __syncthreads(); h *= 2;}``, a bitonic sort's
two stage loops, a block scan's steps). The analysis reads the body as statements at the
barriers' level:

* *uniform*: locals every thread of the block holds alike (declared and assigned only at
  that level from constants, arguments, ``blockIdx``/``gridDim`` and other uniform locals,
  never from memory), their declarations and updates, and ``if (c) return;`` on a uniform
  ``c``; a loop holding a barrier must read only uniform values in its header;
* *thread-derived*: a never-assigned local computed from ``threadIdx.x`` and uniform locals
  that are never assigned (``const int t = threadIdx.x;``); recomputed where read;
* everything else is a phase's per-thread work, in runs between barriers and uniform
  statements.

BLOCK_THREADS: every run becomes a block-stride loop over the N work items (the threads as
written): item ``wb_t`` does exactly what thread ``wb_t`` did, the thread-derived locals
recomputed from it. Legal when no per-thread value lives across a barrier: a name a run
declares is read nowhere after it (else refused with both lines), no run returns or breaks
out of its level, and no thread talks to another but through the barriers (no warp
intrinsics, no ``volatile``): within a phase the items of the kernel as written ran in no
order the program could rely on, so running them in turn is one of their orders.

ROWS_PER_BLOCK: the row a block works on is ``blockIdx.x`` (the grid one row a block, a
kernel argument counting them); each row takes ``threadIdx.y``'s slice of every shared
array and ``blockIdx.x * ROWS_PER_BLOCK + threadIdx.y`` for ``blockIdx.x``. The rows of a
block pass the same barriers: the kernel's guards (``if (row >= rows) return;`` before the
first phase, or ``if (row < rows) { .. }`` around the rest) become a per-row flag each phase's
loop tests, so a row past the end runs along to every barrier and works on nothing; refused
where a barrier loop's header reads the row.

Where neither applies the kernel is left to the other transforms, with the line and reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.templater.analysis import LOOPS, builtin, is_barrier, text, walk, write_target
from workbench.templater.block import _governed
from workbench.templater.block_phases_regs import emit_register_stages, register_stages
from workbench.templater.block_phases_vec import RowCopy, emit_copy, row_copy
from workbench.templater.const_lanes import const_eval, element_bytes
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, fresh_names
from workbench.templater.rewrite import Rewriter
from workbench.templater.rules import literal

NAME = "BLOCK_THREADS"
ROWS = "ROWS_PER_BLOCK"
#: Calls through which threads of a warp talk to each other without a barrier: the items
#: of one thread would no longer be the threads they were.
_WARP_CALLS = ("__shfl", "__syncwarp", "__ballot", "__any", "__all", "__activemask",
               "__match", "__reduce_", "__syncthreads_", "atomic")
#: Expression nodes a uniform value may be built of (no memory read, no call).
_PURE = frozenset({"identifier", "number_literal", "binary_expression", "unary_expression",
                   "parenthesized_expression", "cast_expression", "conditional_expression",
                   "type_descriptor", "primitive_type", "sized_type_specifier",
                   "type_identifier", "type_qualifier", "true", "false", "char_literal",
                   "field_identifier", "abstract_pointer_declarator", "condition_clause"})


@dataclass
class Layout:
    """What the analysis found at the barriers' level of the body."""

    runs: list[list[Node]] = field(default_factory=list)  # per-thread work between barriers
    derived: list[Node] = field(default_factory=list)  # thread-derived declarations, in order
    guards: list[Node] = field(default_factory=list)  # uniform `if (c) return;` / `if (c) {..}`
    barrier_loops: list[Node] = field(default_factory=list)
    uniform: set[str] = field(default_factory=set)
    locals: set[str] = field(default_factory=set)  # every name the body declares
    derivable: set[str] = field(default_factory=set)  # declared from threadIdx.x, uniforms
    first_barrier: int = 0  # byte of the first barrier or barrier loop


def is_candidate(plan: Plan) -> bool:
    """The outline: a 1-D literal block, barriers, ``threadIdx.x`` read, and the block size
    implied by the work, not written: ``blockDim`` not read and no literal the block lift
    reads as the block size (a thread-stride step, a block offset, a tree's start, a shared
    array the thread indexes)."""
    if len(plan.block) != 1 or len(plan.grid) != 1 or literal(plan.block[0]) is None:
        return False
    names = {text(n) for n in walk(plan.body) if n.type == "field_expression"}
    calls = {text(n.child_by_field_name("function")) for n in walk(plan.body)
             if n.type == "call_expression"}
    if "__syncthreads" not in calls or "threadIdx.x" not in names or \
            any(n.startswith("blockDim.") for n in names):
        return False
    uses, halves = _governed(plan, "x", {"x": literal(plan.block[0])})
    return not uses and not halves  # else the block size is written: the block lift's


def lift_phases(plan: Plan) -> bool:
    """Apply the family where the analysis proves it legal; True when BLOCK_THREADS lifted."""
    if not is_candidate(plan):
        return False
    try:
        layout = _layout(plan)
    except Refused as exc:
        plan.note(NAME, False, exc.reason, exc.node)
        return False
    items = literal(plan.block[0])
    assert items is not None
    names = fresh_names(plan, [NAME, ROWS])
    threads, rows = names[NAME], names[ROWS]
    try:
        row = _rows_plan(plan, layout)
    except Refused as exc:
        plan.note(ROWS, False, exc.reason, exc.node)
        row = None
    copies = _row_copies(plan, layout, items, row)
    vec = fresh_names(plan, ["VEC"])["VEC"] if copies else ""
    _emit_threads(plan, layout, items, threads, live=row is not None,
                  skip={c.run[0].id for c in copies})
    for copy in copies:
        emit_copy(plan, copy, threads, vec, "wb_live && " if row is not None else "")
    values = [v for v in (32, 64, 128, 256, 512, 1024) if v < items] + [items]
    anchor = layout.runs[0][0]
    plan.add_param(threads, {"kind": "choice", "values": values, "default": items,
                             "description": f"threads per block; each runs the phases' work "
                                          f"items (the {items} threads as written) a block "
                                          f"stride apart (as written: {items})"},
                   f"{anchor.start_point.row + 1}: {text(anchor).splitlines()[0].strip()}")
    plan.block = [threads]
    plan.launch_bounds = threads
    plan.note(NAME, True, f"{len(layout.runs)} phases between barriers run as block-stride "
              f"loops over the {items} work items; uniform locals "
              f"{sorted(layout.uniform) or 'none'}, thread-derived locals recomputed per item",
              anchor)
    if row is not None:
        _emit_rows(plan, layout, row, threads, rows)
    _lift_register_stages(plan, layout, items, values, threads)
    if copies:
        step = min(c.step for c in copies)
        plan.add_param(vec, {"kind": "choice", "values": [v for v in (1, 2, 4) if v <= step],
                             "default": 1, "description": "consecutive elements a thread moves "
                             "in one access in the phases that copy a row (as written: 1)"},
                       f"{copies[0].run[0].start_point.row + 1}: "
                       f"{text(copies[0].run[0]).splitlines()[0].strip()}")
        plan.note(vec, True, f"{len(copies)} phases move a row of {copies[0].length} elements "
                  f"between shared memory and {', '.join(c.pointer for c in copies)}: "
                  f"{vec} consecutive elements a thread an access", copies[0].run[0])
    return True


def _lift_register_stages(plan: Plan, layout: Layout, items: int, values: list[int],
                          threads: str) -> None:
    """REG_STAGES where :mod:`.block_phases_regs` proves it legal, else its note."""
    try:
        regs = register_stages(plan, layout.barrier_loops, layout.runs, layout.derived,
                               layout.uniform, _shared_names(plan), items, values)
    except Refused as exc:
        plan.note("REG_STAGES", False, exc.reason, exc.node)
        return
    names = fresh_names(plan, ["REG_STAGES", "SHFL"])
    knob = names["REG_STAGES"]
    shfl = names["SHFL"] if any(regs.lead[k] != regs.lead[k[0], 0] for k in regs.lead) \
        else ""
    emit_register_stages(plan, regs, threads, knob, shfl,
                         _needed(list(regs.run), layout.derived))
    run = regs.run[0]
    plan.add_param(knob, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": f"1: each thread keeps {regs.length} / {threads} "
                          "consecutive elements of the row in registers and runs the leading "
                          "stages whose pairs stay in them with no shared memory or barrier "
                          "(as written: 0)"}, f"{run.start_point.row + 1}: {text(run).strip()}")
    lead = {b: regs.lead[b, 0] for b, _ in regs.lead}
    plan.note(knob, True, f"{len(regs.stages)} stages, each a pairing of the {regs.length} "
              f"elements; leading stages in registers by threads a row: {lead}", run)
    if not shfl:
        plan.note("SHFL", False, "no stage pairs the same element of two lanes of a warp "
                  "past the register stages", run)
        return
    plan.add_param(shfl, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: the stages after the register ones whose pairs "
                          "are the same element of two lanes of a warp exchange it through "
                          "__shfl_xor_sync, each lane computing the pair (as written: 0)"},
                   f"{run.start_point.row + 1}: {text(run).strip()}")
    plan.constrain(f"{shfl} <= {knob}")
    warp = {b: regs.lead[b, 1] for b, _ in regs.lead}
    plan.note(shfl, True, f"leading stages in registers and warp shuffles by threads a row: "
              f"{warp}", run)


def _shared_names(plan: Plan) -> set[str]:
    return {text(n) for d in walk(plan.body) if d.type == "declaration" and _shared(d)
            for c in d.children_by_field_name("declarator")
            if (n := _declarator_name(c)) is not None}


def _row_copies(plan: Plan, layout: Layout, items: int, row: RowPlan | None) -> list[RowCopy]:
    """The runs that copy a row (VEC), each aligned for a vector of 2 or more; the others'
    reasons noted."""
    shared = _shared_names(plan)

    def varies(name: str) -> bool:
        return name in layout.locals and name not in layout.uniform and name not in shared
    copies, reasons = [], []
    for run in layout.runs:
        found = row_copy(plan, run, layout.derived, shared, items, layout.uniform, varies)
        if isinstance(found, RowCopy) and found.step > 1:
            copies.append(found)
        else:
            reasons.append(f"line {run[0].start_point.row + 1}: "
                           f"{found if isinstance(found, str) else 'offsets not aligned'}")
    if not copies:
        plan.note("VEC", False, "no phase copies a row: " + "; ".join(reasons), plan.body)
    return copies


# -- the analysis --------------------------------------------------------------------------


def _layout(plan: Plan) -> Layout:
    for n in walk(plan.body):
        if n.type == "call_expression" and text(n.child_by_field_name("function")).startswith(
                _WARP_CALLS):
            raise Refused(f"`{text(n)[:50]}`: threads talk outside the barriers, so one "
                          "thread cannot run several of them in turn", n)
        if text(n) == "volatile" or (n.type == "field_expression" and
                                      builtin(n, "threadIdx") in ("y", "z")):
            raise Refused(f"`{text(n)[:50]}`: the kernel reads more than a 1-D block's "
                          "thread index or relies on warp-synchronous memory", n)
    for n in walk(plan.body):
        if n.type == "reference_declarator" or (
                n.type == "pointer_expression" and
                text(n.child_by_field_name("operator")) == "&" and
                text(n.child_by_field_name("argument")).isidentifier()):
            raise Refused(f"`{text(n)[:50]}`: a local reached through a reference or its "
                          "address may change where the analysis does not see it", n)
    layout = Layout()
    layout.locals = _declared(plan.body)
    levels: list[list[Node]] = []
    _levels(plan.body, levels, layout)
    layout.uniform = _uniform_locals(plan, levels, layout)
    _check_headers(layout)
    for level in levels:
        _split(level, layout)
    _hoist(plan, layout)
    if not layout.runs:
        raise Refused("no per-thread work between the barriers", plan.body)
    _check_runs(plan, layout)
    return layout


def _declared(body: Node) -> set[str]:
    """Every name a declaration in ``body`` declares (with or without a value)."""
    out: set[str] = set()
    for decl in walk(body):
        if decl.type != "declaration":
            continue
        for d in decl.children_by_field_name("declarator"):
            name = _declarator_name(d)
            if name is not None:
                out.add(text(name))
    return out


def _declarator_name(d: Node) -> Node | None:
    while d is not None and d.type != "identifier":
        d = d.child_by_field_name("declarator")  # type: ignore[assignment]
    return d


def _statements(compound: Node) -> list[Node]:
    return [c for c in compound.named_children if c.type != "comment"]


def _has_barrier(node: Node) -> bool:
    return any(n.type == "call_expression" and
               text(n.child_by_field_name("function")) == "__syncthreads" for n in walk(node))


def _levels(compound: Node, levels: list[list[Node]], layout: Layout) -> None:
    """The statement lists at the barriers' level: the body, the bodies of loops holding a
    barrier, and of a guard ``if (c) { .. }`` holding one."""
    stmts = _statements(compound)
    levels.append(stmts)
    for stmt in stmts:
        if not _has_barrier(stmt):
            continue
        if not layout.first_barrier:
            layout.first_barrier = stmt.start_byte
        if is_barrier(stmt):
            continue
        inner = stmt.child_by_field_name("body") if stmt.type in LOOPS else None
        if stmt.type == "if_statement" and stmt.child_by_field_name("alternative") is None:
            inner = stmt.child_by_field_name("consequence")
            layout.guards.append(stmt)
        elif inner is not None:
            layout.barrier_loops.append(stmt)
        if inner is None or inner.type != "compound_statement":
            raise Refused(f"a barrier under `{text(stmt).splitlines()[0][:50]}`, not in a "
                          "loop or guard the whole block runs alike", stmt)
        _levels(inner, levels, layout)


def _writes(node: Node) -> list[tuple[str, Node]]:
    """(name, the write) of every local ``node`` declares with a value or assigns."""
    out: list[tuple[str, Node]] = []
    for n in walk(node):
        if n.type == "init_declarator":
            name = _declarator_name(n)
            if name is not None:
                out.append((text(name), n))
        elif (target := write_target(n)) is not None and target.type == "identifier":
            out.append((text(target), n))
    return out


def _pure(node: Node | None, uniform: set[str], locals_: set[str], *,
          thread: bool = False) -> bool:
    """Whether ``node`` reads no memory, calls nothing and names only uniform locals,
    non-locals (arguments, constants) and ``blockIdx``/``gridDim`` (``threadIdx.x`` too
    with ``thread``)."""
    if node is None:
        return True
    for n in walk(node):
        if n.type == "field_expression":
            if not (builtin(n, "blockIdx") or builtin(n, "gridDim") or
                    (thread and builtin(n, "threadIdx") == "x")):
                return False
            continue
        if n.parent is not None and n.parent.type == "field_expression":
            continue
        if n.is_named and n.type not in _PURE:
            return False
        if n.type == "identifier" and text(n) in locals_ and text(n) not in uniform:
            return False
    return True


def _value_of(write: Node) -> Node | None:
    if write.type == "init_declarator":
        return write.child_by_field_name("value")
    if write.type == "assignment_expression":
        return write.child_by_field_name("right")
    return None  # ++h: the name itself


def _headers(loop: Node) -> list[Node]:
    return [p for f in ("initializer", "condition", "update")
            if (p := loop.child_by_field_name(f)) is not None]


def _uniform_locals(plan: Plan, levels: list[list[Node]], layout: Layout) -> set[str]:
    """The locals every thread holds alike: every write of one is a declaration or an
    assignment statement at the barriers' level, or a barrier loop's header, with a
    uniform value (a fixed point: a value naming a local that is not uniform is not)."""
    sites = [s for level in levels for s in level
             if s.type in ("declaration", "expression_statement") and not _has_barrier(s)]
    sites += [p for loop in layout.barrier_loops for p in _headers(loop)]
    at_sites = {w.id for s in sites for _, w in _writes(s)}
    uniform = {name for s in sites for name, _ in _writes(s)}
    changed = True
    while changed:
        changed = False
        for name, write in _writes(plan.body):
            if name in uniform and (write.id not in at_sites or
                                    not _pure(_value_of(write), uniform, layout.locals)):
                uniform.discard(name)
                changed = True
    return uniform


def _check_headers(layout: Layout) -> None:
    """Every thread runs a barrier loop or guard alike: its header reads uniform values."""
    for loop in layout.barrier_loops:
        for part in _headers(loop):
            writes = _writes(part)
            pure = all(_pure(_value_of(w), layout.uniform, layout.locals) for _, w in writes) \
                if writes else _pure(part, layout.uniform, layout.locals)
            if not pure or any(name not in layout.uniform for name, _ in writes):
                raise Refused(f"the barrier loop's `{text(part)[:50]}` reads a value threads "
                              "may hold apart", loop)
    for guard in layout.guards:
        cond = guard.child_by_field_name("condition")
        if not _pure(cond, layout.uniform, layout.locals):
            raise Refused(f"the barrier's guard `{text(cond)[:50]}` reads a value threads "
                          "may hold apart", guard)


def _shared(decl: Node) -> bool:
    return any(text(c) == "__shared__" for c in decl.children)


def _kind(stmt: Node, layout: Layout) -> str:
    """``barrier``, ``level`` (a barrier loop or guard), ``uniform``, ``derived`` or
    ``work`` for a statement at the barriers' level."""
    if is_barrier(stmt):
        return "barrier"
    if stmt in layout.barrier_loops or stmt in layout.guards:
        return "level"
    if stmt.type == "declaration" and _shared(stmt):
        return "uniform"
    writes = _writes(stmt)
    declarators = stmt.children_by_field_name("declarator")
    if stmt.type in ("declaration", "expression_statement") and writes and all(
            name in layout.uniform for name, _ in writes) and (
            len(writes) == len(declarators) if stmt.type == "declaration"
            else _only_writes(stmt)):
        return "uniform"
    cond = _guard_return(stmt)
    if cond is not None and _pure(cond, layout.uniform, layout.locals):
        return "return"
    if stmt.type == "declaration" and len(writes) == 1 and \
            len(stmt.children_by_field_name("declarator")) == 1 and \
            stmt.children_by_field_name("declarator")[0].type == "init_declarator" and \
            _pure(_value_of(writes[0][1]), layout.uniform | layout.derivable, layout.locals,
                  thread=True):
        layout.derivable.add(writes[0][0])
        return "work"
    return "work"


def _only_writes(stmt: Node) -> bool:
    expr = stmt.named_children[0] if stmt.named_children else None
    return expr is not None and expr.type in ("assignment_expression", "update_expression")


def _guard_return(stmt: Node) -> Node | None:
    """``c`` of ``if (c) return;`` (or ``{ return; }``), else None."""
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
        return None
    then = stmt.child_by_field_name("consequence")
    inner = _statements(then) if then is not None and then.type == "compound_statement" \
        else [then]
    if len(inner) != 1 or inner[0] is None or text(inner[0]).replace(" ", "") != "return;":
        return None
    return stmt.child_by_field_name("condition")


def _split(level: list[Node], layout: Layout) -> None:
    """Group ``level``'s per-thread work into runs: barriers, barrier loops, guards and
    uniform statements end a run."""
    run: list[Node] = []
    for stmt in level:
        kind = _kind(stmt, layout)
        if kind == "work":
            run.append(stmt)
            continue
        if kind == "return":
            layout.guards.append(stmt)
        if run:
            layout.runs.append(run)
        run = []
    if run:
        layout.runs.append(run)


def _after(run: list[Node]) -> tuple[int, int]:
    """The bytes past ``run`` its declarations are in scope for."""
    parent = run[-1].parent
    return run[-1].end_byte, parent.end_byte if parent is not None else run[-1].end_byte


def _read_after(plan: Plan, run: list[Node], names: set[str]) -> list[Node]:
    """Reads of ``names`` past ``run`` while its declarations are in scope (a name declared
    again past it is another variable from there on)."""
    start, end = _after(run)
    live, out = set(names), []
    for n in walk(plan.body):
        if not (start <= n.start_byte < end) or n.type != "identifier" or text(n) not in live:
            continue
        parent = n.parent
        if parent is not None and parent.child_by_field_name("declarator") == n:
            live.discard(text(n))
            continue
        out.append(n)
    return out


def _hoist(plan: Plan, layout: Layout) -> None:
    """Thread-derived declarations read past their run leave it (with those they read),
    to be recomputed from each item wherever a run reads them."""
    names = {_writes(s)[0][0]: s for run in layout.runs for s in run
             if s.type == "declaration" and _writes(s) and
             _writes(s)[0][0] in layout.derivable and not _assigned_anywhere(plan, _writes(s)[0][0])}
    want: set[str] = set()
    for run in layout.runs:
        mine = {n for n, s in names.items() if any(s == x for x in run)}
        want |= {text(n) for n in _read_after(plan, run, mine)}
    stack = list(want)
    while stack:
        decl = names[stack.pop()]
        for n in walk(decl):
            if n.type == "identifier" and text(n) in names and text(n) not in want:
                want.add(text(n))
                stack.append(text(n))
    layout.derived = sorted((names[n] for n in want), key=lambda d: d.start_byte)
    layout.runs = [r for r in ([s for s in run if s not in layout.derived]
                               for run in layout.runs) if r]


def refuse_read_past(plan: Plan, run: list[Node], past: str) -> None:
    """Refused where a value the run declares is read after the run (``past`` names what
    ends it): each thread's copy would be gone, or another item's."""
    declared = {text(name): stmt for stmt in run if stmt.type == "declaration"
                for d in stmt.children_by_field_name("declarator")
                if (name := _declarator_name(d)) is not None}
    for n in _read_after(plan, run, set(declared)):
        decl = declared[text(n)]
        raise Refused(f"`{text(n)}` (line {decl.start_point.row + 1}), a per-thread value, "
                      f"is read at line {n.start_point.row + 1} past {past}", n)


def _check_runs(plan: Plan, layout: Layout) -> None:
    """No per-thread value lives across a barrier; no run leaves its level."""
    for run in layout.runs:
        for stmt in run:
            for n in walk(stmt):
                if n.type == "return_statement":
                    raise Refused("a thread returns inside a phase: its items would stop "
                                  "the thread's other items", n)
                if n.type in ("break_statement", "continue_statement") and \
                        _leaves(n, stmt):
                    raise Refused(f"`{text(n)}` leaves the phase's run", n)
        refuse_read_past(plan, run, "a barrier or a uniform statement")
    for decl in layout.derived:
        for n in walk(decl):
            if n.type == "identifier" and text(n) in layout.uniform and \
                    _assigned_anywhere(plan, text(n)):
                raise Refused(f"the thread-derived `{text(decl)[:50]}` reads `{text(n)}`, "
                              "which changes between the phases", decl)


def _leaves(jump: Node, top: Node) -> bool:
    """Whether ``break``/``continue`` ``jump`` targets a statement outside ``top``."""
    n = jump.parent
    while n is not None:
        if n.type in LOOPS or (n.type == "switch_statement" and
                                jump.type == "break_statement"):
            return False
        if n == top:
            return True
        n = n.parent
    return True


def _assigned_anywhere(plan: Plan, name: str) -> bool:
    return any(n.type in ("assignment_expression", "update_expression") and
               name in {w for w, _ in _writes(n)} for n in walk(plan.body))


# -- rows per block ------------------------------------------------------------------------


@dataclass(frozen=True)
class RowPlan:
    """ROWS_PER_BLOCK's edits: the row count's argument, the guards to fold into a per-row
    flag, the shared declarations to give a slice each row."""

    count: str
    guards: tuple[Node, ...]
    shared: tuple[Node, ...]


def _rows_plan(plan: Plan, layout: Layout) -> RowPlan:
    for n in walk(plan.body):
        if n.type == "field_expression" and (builtin(n, "gridDim") or
                                              builtin(n, "blockIdx") in ("y", "z")):
            raise Refused(f"`{text(n)}`: the grid is read beyond one block a row", n)
        if n.type == "sizeof_expression":
            raise Refused(f"`{text(n)}`: a size the rows' slices would change", n)
    count = next((arg for arg, expr in plan.scalars.items()
                  if expr.replace(" ", "") == plan.grid[0].replace(" ", "")), None)
    if count is None:
        raise Refused(f"the grid {plan.grid[0]} is no kernel argument: the rows past it "
                      "cannot be told apart", plan.body)
    row_locals = {name for name in layout.uniform if _reads_row(plan, name)}
    for loop in layout.barrier_loops:
        header = [loop.child_by_field_name(f) for f in ("initializer", "condition", "update")]
        for part in header:
            if part is not None and any(builtin(n, "blockIdx") or text(n) in row_locals
                                        for n in walk(part)):
                raise Refused(f"the barrier loop `{text(loop).splitlines()[0][:50]}` runs "
                              "as many times as its row says: rows of a block would part at "
                              "its barriers", loop)
    for guard in layout.guards:
        if guard.parent != plan.body or guard.start_byte > layout.first_barrier or any(
                r[0].start_byte < guard.start_byte for r in layout.runs):
            raise Refused(f"the guard `{text(guard).splitlines()[0][:50]}` is not at the "
                          "kernel's top before its first phase", guard)
    shared = [d for d in walk(plan.body) if d.type == "declaration" and _shared(d)]
    for d in shared:
        if d.parent != plan.body or any(text(c) == "extern" for c in d.children):
            raise Refused(f"`{text(d)[:50]}`: a shared array not declared at the kernel's "
                          "top with its size", d)
    if _shared_bytes(shared) is None:
        raise Refused("a shared array's size does not evaluate", shared[0] if shared
                      else plan.body)
    return RowPlan(count, tuple(layout.guards), tuple(shared))


def _reads_row(plan: Plan, name: str, depth: int = 0) -> bool:
    for n, write in _writes(plan.body):
        if n != name:
            continue
        value = _value_of(write)
        if value is not None and any(
                builtin(x, "blockIdx") or (x.type == "identifier" and text(x) != name and
                                           depth < 8 and _reads_row(plan, text(x), depth + 1))
                for x in walk(value)):
            return True
    return False


def _shared_bytes(shared: list[Node]) -> int | None:
    total = 0
    for decl in shared:
        size = element_bytes(text(decl.child_by_field_name("type")))
        d = decl.child_by_field_name("declarator")
        count = 1
        while d is not None and d.type == "array_declarator":
            extent = const_eval(d.child_by_field_name("size"))
            if extent is None:
                return None
            count *= extent
            d = d.child_by_field_name("declarator")
        if size is None:
            return None
        total += size * count
    return total


# -- emission ------------------------------------------------------------------------------


def _thread_spans(node: Node) -> list[Node]:
    return [n for n in walk(node)
            if n.type == "field_expression" and builtin(n, "threadIdx") == "x"]


def _needed(run: list[Node], derived: list[Node]) -> list[Node]:
    """The thread-derived declarations ``run`` reads, with those they read, in order."""
    names = {_writes(d)[0][0]: d for d in derived}
    want: set[str] = set()
    stack = [text(n) for s in run for n in walk(s) if n.type == "identifier"]
    while stack:
        name = stack.pop()
        if name in names and name not in want:
            want.add(name)
            stack += [text(n) for n in walk(names[name]) if n.type == "identifier"]
    return [d for d in derived if _writes(d)[0][0] in want]


def _emit_threads(plan: Plan, layout: Layout, items: int, threads: str, live: bool,
                  skip: set[int]) -> None:
    """Each run (but those starting at a node of ``skip``: row copies) a block-stride loop
    over the items; ``threadIdx.x`` in it (and in the thread-derived declarations, moved
    into the runs that read them) the item."""
    runs = [r for r in layout.runs if r[0].id not in skip]
    for node in [*layout.derived, *(s for run in runs for s in run)]:
        for n in _thread_spans(node):
            plan.rw.replace(n, "wb_t")
    for decl in layout.derived:
        plan.rw.replace(decl, "")
    flag = "wb_live && " if live else ""
    for run in runs:
        needed = _needed(run, layout.derived)
        opening = (f"{{\n#pragma unroll\nfor (int wb_k = 0; wb_k < ({items} + {threads} - 1) / "
                   f"{threads}; ++wb_k) {{ const int wb_t = threadIdx.x + wb_k * {threads}; "
                   f"if ({flag}({items} % {threads} == 0 || wb_t < {items})) {{")

        plan.rw.replace_span(run[0].start_byte, run[0].start_byte,
                             make=recomputed(opening, needed))
        plan.rw.insert(run[-1].end_byte, "\n}}}")


def recomputed(opening: str, needed: list[Node]) -> Callable[[Rewriter], str]:
    """The text that opens a phase's loop over the thread's items: ``opening``, then the
    thread-derived declarations the phase reads, each rendered again on one line."""
    def make(rw: Rewriter) -> str:
        return opening + "".join(" " + rw.render(d.start_byte, d.end_byte).replace(
            "\n", " ") for d in needed) + "\n"
    return make


def _emit_rows(plan: Plan, layout: Layout, row: RowPlan, threads: str, rows: str) -> None:
    """Each row its ``threadIdx.y`` slice and row index; the guards one per-row flag."""
    declared = [_declarator_name(d) for decl in row.shared
                for d in decl.children_by_field_name("declarator")]
    names = {text(n) for n in declared if n is not None}
    for name in declared:
        if name is not None:
            plan.rw.replace(name, f"{text(name)}[{rows}]")
    for n in walk(plan.body):
        if n.type == "identifier" and text(n) in names and n not in declared:
            plan.rw.replace(n, f"{text(n)}[threadIdx.y]")
        if n.type == "field_expression" and builtin(n, "blockIdx") == "x":
            plan.rw.replace(n, f"(blockIdx.x * {rows} + threadIdx.y)")
    conditions = [f"(blockIdx.x * {rows} + threadIdx.y) < {row.count}"]
    for guard in row.guards:
        cond = guard.child_by_field_name("condition")
        assert cond is not None
        inner = cond.named_children[0] if cond.type == "condition_clause" else cond
        spelled = plan.rw.render(inner.start_byte, inner.end_byte)
        if _guard_return(guard) is not None:
            conditions.append(f"!({spelled})")
            plan.rw.replace(guard, "")
        else:
            if spelled.replace(" ", "") != conditions[0].replace(" ", ""):
                conditions.append(f"({spelled})")
            then = guard.child_by_field_name("consequence")
            assert then is not None
            plan.rw.replace_span(guard.start_byte, then.start_byte, "")
    # no guard: the flag reads only the block, the thread and the row count, so it opens the
    # body (at the first run's start it would land inside that run's block-stride loop)
    first = max((g.start_byte for g in row.guards), default=plan.body.start_byte + 1)
    plan.rw.insert(first, f"const bool wb_live = {' && '.join(conditions)};\n  ")
    plan.grid = [f"ceil_div({plan.grid[0]}, {rows})"]
    plan.block = [threads, rows]
    plan.launch_bounds = f"{threads} * {rows}"
    size = _shared_bytes(list(row.shared)) or 0
    plan.add_param(rows, {"kind": "choice", "values": [1, 2, 4, 8], "default": 1,
                          "description": "rows per block, each its threadIdx.y slice of the "
                                         "shared arrays (as written: 1)"},
                   f"{layout.runs[0][0].start_point.row + 1}: blockIdx.x, the row")
    plan.constrain(f"{threads} * {rows} <= 1024")
    if size:
        plan.constrain(f"{size} * {rows} <= 49152")
    plan.note(ROWS, True, f"{rows} rows a block on threadIdx.y, each its slice of the "
              f"{size} shared bytes; rows past {row.count} run along to the "
              "barriers and work on nothing", layout.runs[0][0])
