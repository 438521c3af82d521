"""INTERIOR for Z_SUMS (:mod:`.stencil_zsums`): a thread whose every output of its planes
reaches the sum marches without the per-step tests.

The Z_SUMS march decides at every step, by the kernel's own guards (``if (i == 0 || i == nx
- 1 || ... || k == nz - 1) { out[c] = in[c]; return; }``) at the coming output's plane,
whether that output reaches the sum, predicates the plane's loads on those answers and runs
the guards again before each store: box27_smooth at the expert's pick (64 x 8 threads, 32
planes) compiles to 106 PTX instructions a step, 9 ``setp`` and 8 branches of them, for 9
loads and 27 multiply-adds. Known practice (the expert's march) tests the boundary once: a
column inside the grid's interior reaches the sum at every plane between the boundary
layers.

The rule, legal on the parse. Every guard of the prefix is an ``||`` of comparisons
(single-assignment ``bool`` locals expanded: ``bool edge = x < 1 || ...; if (edge)``), each
``<``, ``<=``, ``>``, ``>=``, ``==`` or ``!=`` of integer polynomials (the prefix's locals
expanded) of degree at most one in the plane; a comparison that moves with the plane has
signed operands (an unsigned one wraps). Over the thread's planes ``k0 .. k1 - 1`` each
difference ``a - b`` is then affine in the plane, so its least and greatest values are
those at ``k0`` and ``k1 - 1``: the thread evaluates every difference there (the prefix's
declarations at those planes, as the march does at each step) and no guard fires at any of
its planes exactly when each comparison fails over that range (``a < b``: the least
difference >= 0; ``a == b``: the least > 0 or the greatest < 0; and so on). The lanes vote
(``__all_sync``) so the branch is warp-uniform; a lane whose own test holds but whose warp's
does not runs the general march, as correct.

The rewrite, a knob INTERIOR (0: the march as Z_SUMS writes it; only with Z_SUMS 1): ``if
(wb_zin) { interior march } else { march }``. In the interior march each output in the
thread's range reaches the sum (what the guards answer there), so its flag is set without
the guards, a plane's load is predicated on the outputs that read it being in range (``true``
where the value's plane offsets cover the whole radius: every step's plane is read by one of
them) and the guards before the store read ``(false && (...))``: the same loads, sums and
stores as the general march. Refused (noted with the line; Z_SUMS stands without the knob)
where a guard is anything else (a call, a modulo: a red-black colouring ``(i + j + k) % 2``
is not monotone in the plane).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import binary, builtin, strip, text
from workbench.templater.apron_interior import declared_types, signed
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, single_assignment_values
from workbench.templater.rewrite import warp_all
from workbench.templater.stencil import Poly, add, derivative, poly_of, scale

KNOB = "INTERIOR"
FLAG = "wb_zin"  # every output of the thread's planes reaches the sum
PLANE = "blockIdx.z"
_COMPARE = ("<", "<=", ">", ">=", "==", "!=")


@dataclass(frozen=True)
class Compare:
    """One comparison of a guard: its operands and operator."""

    node: Node
    left: Node
    op: str
    right: Node


def analyse(plan: Plan, prefix: tuple[Node, ...]) -> tuple[Compare, ...] | Refused:
    """The comparisons of the prefix's guards, each shown monotone in the plane, or why
    not (the refusal's reason and node)."""
    values = single_assignment_values(plan.body, set())
    types = declared_types(plan.body)
    found: list[Compare] = []
    for g in prefix:
        if g.type == "declaration":
            continue
        cond = g.child_by_field_name("condition")
        assert cond is not None
        leaves = _or_leaves(strip(cond), values)
        if leaves is None:
            return Refused(f"the guard `{text(cond)[:60]}` is not an `||` of comparisons: "
                           "its planes could not be bounded by the first and the last", g)
        for leaf in leaves:
            parts = binary(leaf)
            assert parts is not None
            left, op, right = parts
            opaque: list[Node] = []
            diff = add(poly_of(left, values, opaque=opaque, leaf=_builtin),
                       scale(poly_of(right, values, opaque=opaque, leaf=_builtin), -1))
            if opaque:
                return Refused(f"`{text(opaque[0])[:40]}` in `{text(leaf)[:50]}` is not an "
                               "integer polynomial (a call, a modulo): not monotone in the "
                               "plane", leaf)
            slope = derivative(diff, PLANE)
            if any(PLANE in mono for mono in slope):
                return Refused(f"`{text(leaf)[:50]}` is not of degree one in the plane", leaf)
            if slope and not (signed(plan, values, types, left) and
                              signed(plan, values, types, right)):
                return Refused(f"`{text(leaf)[:50]}` may compare unsigned values: it wraps "
                               "and is not monotone in the plane", leaf)
            found.append(Compare(leaf, left, op, right))
    return tuple(found)


def _builtin(node: Node) -> Poly | None:
    """A thread, block or grid index or size: an atom of its own."""
    for name in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
        d = builtin(node, name)
        if d is not None and node.type == "field_expression":
            return {(f"{name}.{d}",): 1}
    return None


def _or_leaves(node: Node, values: dict[str, Node], depth: int = 0) -> list[Node] | None:
    """The comparisons an ``||`` tree of them is made of (locals expanded), else None."""
    if node.type == "condition_clause":  # C++'s `if (...)`: the expression inside
        inner = node.child_by_field_name("value")
        if inner is None:
            return None
        node = inner
    node = strip(node)
    if node.type == "identifier" and text(node) in values and depth < 12:
        return _or_leaves(values[text(node)], values, depth + 1)
    parts = binary(node)
    if parts is not None and parts[1] == "||":
        a, b = _or_leaves(parts[0], values, depth), _or_leaves(parts[2], values, depth)
        return None if a is None or b is None else a + b
    if parts is not None and parts[1] in _COMPARE:
        return [node]
    return None


def _never(op: str, lo: str, hi: str) -> str:
    """C test: ``a op b`` fails for every difference ``a - b`` between ``lo`` and ``hi``."""
    least, most = f"({lo} < {hi} ? {lo} : {hi})", f"({lo} < {hi} ? {hi} : {lo})"
    return {"<": f"{least} >= 0", "<=": f"{least} > 0", ">": f"{most} <= 0",
            ">=": f"{most} < 0", "==": f"({least} > 0 || {most} < 0)",
            "!=": f"({least} == 0 && {most} == 0)"}[op]


def thread_test(compares: tuple[Compare, ...], at_plane: Callable[[str], str], knob: str,
                render: Callable[[Node], str]) -> str:
    """The thread's test before its march: each comparison's difference at its first and
    last plane (``at_plane``: the prefix's declarations at a plane), then the flag, voted by
    the warp. ``render``: an operand as the march writes it."""
    n = len(compares)
    diffs = [f"(long long)({render(c.left)}) - (long long)({render(c.right)})"
             for c in compares]
    ends = []
    for name, plane in (("wb_zlo", "wb_zk0"), ("wb_zhi", "wb_zk1 - 1")):
        ends.append(f"  {{\n  {at_plane(plane)}" +
                    "".join(f"  {name}[{j}] = {d};\n" for j, d in enumerate(diffs)) + "  }\n")
    never = " &&\n      ".join(_never(c.op, f"wb_zlo[{j}]", f"wb_zhi[{j}]")
                               for j, c in enumerate(compares))
    return (f"  // {knob}: every output of this thread's planes reaches the sum (no guard "
            "fires at the first plane, the last, or between: each difference is affine in "
            "the plane)\n"
            f"  long long wb_zlo[{n}], wb_zhi[{n}];\n" + "".join(ends) +
            f"  bool {FLAG} = {knob} && wb_zk1 > wb_zk0 && (\n      {never});\n" +
            # the vote only where the knob is on: at 0 the flag folds to false and the
            # interior march compiles away (a vote of a constant is not folded)
            warp_all(FLAG).replace(f"  {FLAG} = ", f"  if ({knob}) {FLAG} = "))
