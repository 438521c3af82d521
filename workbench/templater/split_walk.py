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
at the top level whose body is ``s += E`` alone, ``s`` a local of a type the shuffle moves
(float, double, int, unsigned, long long) read by no E, E without assignments, calls or
jumps; no shared memory, no ``__syncthreads``, no warp intrinsics or atomics, no
``blockDim.x`` read; no memory written before the loop (it would be written once per lane).
The sum's order changes, so float outputs move by rounding (the gate checks them against
the folder's tolerances).
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import (
    builtin,
    calls,
    declared_name,
    int_value,
    line,
    text,
    walk,
)
from workbench.templater.plan import Plan
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
        sum_var = _check(plan, loop)
    except Illegal as exc:
        plan.note(NAME, False, exc.reason, exc.node or loop)
        return
    _rewrite(plan, loop, sum_var)


def _statements(plan: Plan) -> list[Node]:
    return [c for c in plan.body.named_children if c.type != "comment"]


def _accumulation(loop: Node) -> Node | None:
    """The ``s += E`` expression that is the loop's whole body, else None."""
    body = loop.child_by_field_name("body")
    if body is not None and body.type == "compound_statement":
        inner = [c for c in body.named_children if c.type != "comment"]
        body = inner[0] if len(inner) == 1 else None
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


def _check(plan: Plan, loop: Node) -> str:
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
    if start is None or text(cond.child_by_field_name("operator")) != "<" or \
            text(bound) != var or not _unit_step(update, var):
        raise Illegal("the walk is not `for (int r = A; r < B; ++r)` (a unit step counting "
                      "up to a bound)", loop)
    value = acc.child_by_field_name("right")
    assert value is not None
    for n in walk(value):
        if n.type in ("assignment_expression", "update_expression", "call_expression", *_JUMPS):
            raise Illegal(f"the summand `{text(value)[:60]}` has side effects or calls", n)
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
    return s


def _unit_step(update: Node, var: str) -> bool:
    if update.type == "update_expression":
        return text(update.child_by_field_name("argument")) == var and "++" in text(update)
    return (update.type == "assignment_expression"
            and text(update.child_by_field_name("left")) == var
            and text(update.child_by_field_name("operator")) == "+="
            and int_value(update.child_by_field_name("right")) == 1)


def _rewrite(plan: Plan, loop: Node, s: str) -> None:
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
    plan.rw.replace(update, f"{_var} += {NAME}")
    mask = (f"(0xffffffffu >> (32 - {NAME})) << ((threadIdx.x & 31u) & "
            f"~((unsigned){NAME} - 1u))")
    combine = (f"\n  for (int wb_lane = {NAME} / 2; wb_lane > 0; wb_lane /= 2)  "
               f"// the group's partial sums\n"
               f"    {s} += __shfl_xor_sync({mask}, {s}, wb_lane);")
    ls, le = loop.start_byte, loop.end_byte
    plan.rw.replace_span(ls, le, make=lambda rw: rw.render(ls, le) + combine)
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
