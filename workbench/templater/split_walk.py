"""WALK_SPLIT: several lanes share one thread's serial sum (a column walk, a dot product).

A kernel that gives each thread one output and a loop of its own over a long dimension
(``for (int r = 0; r < rows; ++r) s += x[r * cols + c];`` then ``out[c] = s``) runs few
threads with a long dependent walk each: with 16 K columns an H100 holds about 124 threads
per SM and the kernel is latency-bound. The transform keeps the kernel's program per
output and runs it on ``WALK_SPLIT`` consecutive lanes of a warp: every ``threadIdx.x``
becomes ``threadIdx.x / WALK_SPLIT`` (so the lanes of a group compute the same index and
take the same branches), the walk strides by ``WALK_SPLIT`` from the lane's offset, the
partial sums are combined with ``__shfl_xor_sync`` inside the group, and only the group's
first lane runs what follows the loop. The block gets ``BLOCK_THREADS * WALK_SPLIT``
threads; the grid is unchanged. ``WALK_SPLIT = 1`` is the kernel as written.

Legal only where the analysis shows: one loop ``for (int r = A; r < B; ++r | r++ | r += 1)``
at the top level whose body is ``s += E`` followed by nothing but steps, ``s`` a local of a
type the shuffle moves
(float, double, int, unsigned, long long) read by no E, E without assignments, jumps or
calls other than pure ones (:mod:`.purity`) and ``__ldg``; no shared memory, no ``__syncthreads``, no warp intrinsics or atomics, no
``blockDim.x`` read; no memory written before the loop (it would be written once per lane).
The sum's order changes, so float outputs move by rounding (the gate checks them against
the folder's tolerances).

A step is a local (a pointer or an index) advanced by the same amount every iteration after
``E`` has read it (``a += cols;`` closing the body, or ``++r, a += cols`` in the update):
strength-reduced addressing, ``E`` reading ``*a`` where another author writes
``A[r * cols]``. ``K`` reads nothing the loop writes and has no side effects, and the local
is read by nothing after the loop. A lane starts it ``lane`` steps on, before the loop, and
steps it ``WALK_SPLIT`` times as far, so at iteration ``r`` it holds what it held there as
written.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    builtin,
    calls,
    declared_name,
    int_value,
    line,
    strip,
    text,
    walk,
)
from workbench.templater.conv_reads import READ_CALLS
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls
from workbench.templater.rewrite import TextFn
from workbench.templater.vector import Illegal

NAME = "WALK_SPLIT"
_SHUFFLED = {"float", "double", "int", "unsigned", "unsigned int", "long long",
             "unsigned long long", "long long int"}
_WARP_CALLS = ("__shfl", "__syncwarp", "__ballot", "__any", "__all", "atomic", "__reduce",
               "__match", "__activemask", "__syncthreads")
_JUMPS = ("return_statement", "break_statement", "continue_statement", "goto_statement")


def apply_split_walk(plan: Plan) -> None:
    """Apply WALK_SPLIT where legal; otherwise note why not (only for kernels that have a
    candidate walk: a top-level ``for`` accumulating into a local)."""
    if plan.block != ["BLOCK_THREADS"]:
        return
    loop = _candidate(plan)
    if loop is None:
        return
    try:
        _not_rewritten(plan, loop)
        sum_var, steps = _check(plan, loop)
    except Illegal as exc:
        plan.note(NAME, False, exc.reason, exc.node or loop)
        return
    _rewrite(plan, loop, sum_var, steps)


def _statements(plan: Plan) -> list[Node]:
    return [c for c in plan.body.named_children if c.type != "comment"]


@dataclass(frozen=True)
class Step:
    """``var += amount`` (``-=``, ``++``, ``--``, ``var = var + amount``): a local advanced
    by the same amount every iteration of the walk (``amount`` None: by one)."""

    node: Node
    var: str
    minus: bool
    amount: Node | None


def _body(loop: Node) -> list[Node]:
    body = loop.child_by_field_name("body")
    if body is None:
        return []
    if body.type == "compound_statement":
        return [c for c in body.named_children if c.type != "comment"]
    return [body]


def _accumulation(loop: Node) -> Node | None:
    """The ``s += E`` expression the loop's body opens with (what follows it must be steps:
    :func:`_steps`), else None."""
    stmts = _body(loop)
    body = stmts[0] if stmts else None
    if body is None or body.type != "expression_statement" or not body.named_children:
        return None
    expr = body.named_children[0]
    if expr.type == "assignment_expression" and \
            text(expr.child_by_field_name("operator")) == "+=" and \
            (left := expr.child_by_field_name("left")) is not None and left.type == "identifier":
        return expr
    return None


def _candidate(plan: Plan) -> Node | None:
    for stmt in _statements(plan):
        if stmt.type == "for_statement" and _accumulation(stmt) is not None:
            return stmt
    return None


def _not_rewritten(plan: Plan, loop: Node) -> None:
    """Refuse a walk an earlier transform regenerates (the loop or one of its statements
    replaced whole, as items per thread rename an item's locals): edits inside it would be
    rendered by that transform's own text, or lost."""
    for node in (loop, *_body(loop)):
        for e in plan.rw.edits:
            if e.start < e.end and e.start <= node.start_byte and node.end_byte <= e.end:
                first, last = (plan.rw.data[:at].count(b"\n") + 1 for at in (e.start, e.end))
                raise Illegal(f"an earlier transform rewrites lines {first}..{last} whole, the "
                              "walk with them; splitting it too would be lost", node)


def _check(plan: Plan, loop: Node) -> tuple[str, list[Step]]:
    acc = _accumulation(loop)
    assert acc is not None
    s = text(acc.child_by_field_name("left"))
    d = plan.facts.defs.get(s)
    if d is None or d.is_shared or d.is_pointer:
        raise Illegal(f"`{s}` is not a local scalar of the kernel", acc)
    typ = " ".join(text(d.decl.child_by_field_name("type")).split())
    if typ not in _SHUFFLED:
        raise Illegal(f"`{s}` is a {typ}, which __shfl_xor_sync does not combine", d.decl)
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or cond is None or update is None or init.type != "declaration":
        raise Illegal("the walk is not `for (int r = A; r < B; ++r)`", loop)
    var, _d, start = declared_name(init)
    bound = cond.child_by_field_name("left") if cond.type == "binary_expression" else None
    counters = [u for u in _comma_parts(update) if _unit_step(u, var)]
    if start is None or text(cond.child_by_field_name("operator")) != "<" or \
            text(bound) != var or len(counters) != 1:
        raise Illegal("the walk is not `for (int r = A; r < B; ++r)` (a unit step counting "
                      "up to a bound)", loop)
    value = acc.child_by_field_name("right")
    assert value is not None
    # each iteration still runs once, in one lane: what it calls need only be free of
    # side effects (math, the file's pure helpers, read-only loads)
    pure = pure_calls(plan.source) | READ_CALLS
    for n in walk(value):
        if n.type in ("assignment_expression", "update_expression", *_JUMPS) or \
                (n.type == "call_expression" and
                 text(n.child_by_field_name("function")) not in pure):
            raise Illegal(f"the summand `{text(value)[:60]}` has side effects or calls a "
                          "function not shown pure", n)
        if n.type == "identifier" and text(n) == s:
            raise Illegal(f"the summand reads `{s}` (not a plain sum)", n)
    if any(x.is_shared for x in plan.facts.defs.values()):
        raise Illegal("the block shares __shared__ memory; lanes of a group would share it")
    used = [c for c in calls(plan.body) if c.startswith(_WARP_CALLS)]
    if used:
        raise Illegal(f"the kernel calls {used[0]}, whose lanes would change")
    if any(builtin(n, "blockDim") == "x" for n in walk(plan.body)):
        raise Illegal("the kernel reads blockDim.x, which would count the split lanes")
    for stmt in _statements(plan):
        if stmt == loop:
            break
        for n in walk(stmt):
            if n.type in ("assignment_expression", "update_expression"):
                target = n.child_by_field_name("left") or n.child_by_field_name("argument")
                if target is not None and target.type != "identifier":
                    raise Illegal(f"`{text(n)[:60]}` writes memory before the walk (each "
                                  "lane of a group would write it)", n)
    return s, _steps(plan, loop, var, s)


def _comma_parts(expr: Node) -> list[Node]:
    if expr.type == "comma_expression":
        return [p for c in expr.named_children for p in _comma_parts(c)]
    return [expr]


def _step(expr: Node) -> Step | None:
    if expr.type == "update_expression":
        arg = expr.child_by_field_name("argument")
        if arg is not None and arg.type == "identifier":
            return Step(expr, text(arg), "--" in text(expr), None)
        return None
    left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
    if expr.type != "assignment_expression" or left is None or right is None or \
            left.type != "identifier":
        return None
    op = text(expr.child_by_field_name("operator"))
    if op in ("+=", "-="):
        return Step(expr, text(left), op == "-=", right)
    right = strip(right)
    sum_op = text(right.child_by_field_name("operator")) if right.type == "binary_expression" \
        else None
    first, amount = right.child_by_field_name("left"), right.child_by_field_name("right")
    if op == "=" and sum_op in ("+", "-") and first is not None and amount is not None and \
            text(strip(first)) == text(left):
        return Step(expr, text(left), sum_op == "-", amount)
    return None


def _steps(plan: Plan, loop: Node, var: str, s: str) -> list[Step]:
    """The walk's steps (after ``s += E`` in the body, beside the counter in the update),
    each a local no later statement reads, by an amount the loop does not change."""
    update = loop.child_by_field_name("update")
    assert update is not None
    parts = [u for u in _comma_parts(update) if not _unit_step(u, var)]
    for stmt in _body(loop)[1:]:
        if stmt.type != "expression_statement" or stmt.named_child_count != 1:
            raise Illegal(f"`{text(stmt)[:60]}` in the walk is neither the sum nor a step of "
                          "a local", stmt)
        parts.append(stmt.named_children[0])
    steps = []
    for part in parts:
        step = _step(part)
        d = plan.facts.defs.get(step.var) if step is not None else None
        if step is None or d is None or d.is_shared or step.var in (s, var):
            raise Illegal(f"`{text(part)[:60]}` in the walk is not a step of a local", part)
        steps.append(step)
    written = {s, var} | {st.var for st in steps}
    for st in steps:
        for n in walk(st.amount) if st.amount is not None else []:
            if n.type in ("assignment_expression", "update_expression", "call_expression") or \
                    (n.type == "identifier" and text(n) in written):
                raise Illegal(f"the step `{text(st.node)[:60]}` is not the same every "
                              "iteration", n)
    after = _statements(plan)
    later = [loop.child_by_field_name("condition"), *after[after.index(loop) + 1:]]
    for st in steps:
        for n in (n for stmt in later if stmt is not None for n in walk(stmt)):
            if n.type == "identifier" and text(n) == st.var:
                raise Illegal(f"`{st.var}`, stepped in the walk, is read after it (each lane "
                              "ends it elsewhere)", n)
    return steps


def _unit_step(update: Node, var: str) -> bool:
    if update.type == "update_expression":
        return text(update.child_by_field_name("argument")) == var and "++" in text(update)
    return (update.type == "assignment_expression"
            and text(update.child_by_field_name("left")) == var
            and text(update.child_by_field_name("operator")) == "+="
            and int_value(update.child_by_field_name("right")) == 1)


def _rewrite(plan: Plan, loop: Node, s: str, steps: list[Step]) -> None:
    for n in walk(plan.body):
        if builtin(n, "threadIdx") == "x" and n.type == "field_expression":
            plan.rw.replace(n, f"(threadIdx.x / {NAME})")
    init = loop.child_by_field_name("initializer")
    update = loop.child_by_field_name("update")
    assert init is not None and update is not None
    _var, _d, start = declared_name(init)
    assert start is not None
    a, b = start.start_byte, start.end_byte
    plan.rw.replace_span(a, b, make=lambda rw: f"({rw.render(a, b)}) + (int)(threadIdx.x % "
                                               f"{NAME})")
    plan.rw.replace(next(u for u in _comma_parts(update) if _unit_step(u, _var)),
                    f"{_var} += {NAME}")
    starts = [_scaled(st, f"(int)(threadIdx.x % {NAME})") for st in steps]
    for st in steps:
        plan.rw.replace_span(st.node.start_byte, st.node.end_byte, make=_scaled(st, NAME))
    mask = (f"(0xffffffffu >> (32 - {NAME})) << ((threadIdx.x & 31u) & "
            f"~((unsigned){NAME} - 1u))")
    combine = (f"\n  for (int wb_lane = {NAME} / 2; wb_lane > 0; wb_lane /= 2)  "
               f"// the group's partial sums\n"
               f"    {s} += __shfl_xor_sync({mask}, {s}, wb_lane);")
    ls, le = loop.start_byte, loop.end_byte
    plan.rw.replace_span(ls, le, make=lambda rw: "".join(
        f"{start(rw)};  // this lane's first row\n  " for start in starts)
        + rw.render(ls, le) + combine)
    after = _statements(plan)
    rest = after[after.index(loop) + 1:]
    if rest:
        c, e = rest[0].start_byte, rest[-1].end_byte
        plan.rw.replace_span(c, e, make=lambda rw: (
            f"if (threadIdx.x % {NAME} == 0) {{  // the group's first lane\n  "
            f"{rw.render(c, e)}\n  }}"))
    plan.block[0] = f"BLOCK_THREADS * {NAME}"
    plan.launch_bounds = f"BLOCK_THREADS * {NAME}"
    plan.constrain(f"BLOCK_THREADS * {NAME} <= 1024")
    plan.add_param(NAME, {"kind": "choice", "values": [1, 2, 4, 8, 16, 32], "default": 1,
                          "description": "consecutive lanes sharing one thread's serial sum "
                                         "(the block has BLOCK_THREADS * WALK_SPLIT threads)"},
                   f"{line(loop)}: {text(loop)[:60]}")
    plan.note(NAME, True, f"the walk over `{_var}` accumulating `{s}` is split over "
              f"{NAME} lanes and combined with __shfl_xor_sync; the sum's order changes "
              "(floats within the folder's tolerances)", loop)


def _scaled(step: Step, times: str) -> TextFn:
    """``step`` taken ``times`` times, rendered with the edits inside its amount."""
    op = "-=" if step.minus else "+="
    if step.amount is None:
        return lambda rw: f"{step.var} {op} {times}"
    amount = step.amount
    return lambda rw: f"{step.var} {op} ({rw.text(amount)}) * {times}"
