"""The warp shuffles of a warp-per-item kernel, as people write them, and what follows LANES.

Legal shapes (anything else holding a shuffle is refused with its line):

* an offset loop halving from 16: ``for (o = 16; o > 0; o >>= 1 | o /= 2)`` (``o >= 1``,
  ``o != 0`` or a bare ``o`` alike; start -> LANES / 2);
* an offset loop doubling from 1: ``for (o = 1; o < 32; o <<= 1 | o *= 2)`` (the bound 32 ->
  LANES; ``o <= 16`` -> LANES / 2), xor shuffles only (a butterfly in either order);
* a broadcast from the item's first lane outside such loops: ``__shfl_sync(mask, v, 0)``;
* an unrolled tree: consecutive statements ``s += __shfl_down_sync(mask, s, 16);`` .. ``1``
  (down or xor), or ``1`` .. ``16`` (xor), one shuffle a statement, literal offsets; each
  step whose offset is not below LANES is skipped (``if (16 < LANES) ...``), leaving the
  tree over LANES / 2 .. 1 that the offset loop would run.

Each shuffle is a 3-argument ``__shfl_xor_sync`` / ``__shfl_down_sync`` / ``__shfl_sync``, or a
4-argument one whose width is 32 (the width then becomes LANES). The width of a shuffle
makes every lane index relative to its group of LANES lanes, so an offset loop over LANES / 2
.. 1 combines exactly one item's lanes, as the loop over 16 .. 1 combined one warp's.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    declared_name,
    int_expr_value,
    int_value,
    strip,
    text,
    walk,
)
from workbench.templater.plan import Plan
from workbench.templater.vector import Illegal

_SHUFFLES = ("__shfl_xor_sync", "__shfl_down_sync", "__shfl_sync")


@dataclass(frozen=True)
class OffsetLoop:
    """One offset loop: the literal that follows LANES, its replacement, its shuffles."""

    node: Node
    replacement: str
    shuffles: tuple[Node, ...]


@dataclass(frozen=True)
class TreeStep:
    """One statement of an unrolled offset tree: the statement, its offset, its shuffle."""

    statement: Node
    offset: int
    shuffle: Node


#: The offsets of a whole unrolled tree, in order, and the shuffles that may walk it.
_TREES = {(16, 8, 4, 2, 1): ("__shfl_xor_sync", "__shfl_down_sync"),
          (1, 2, 4, 8, 16): ("__shfl_xor_sync",)}


def shuffle_calls(node: Node) -> list[Node]:
    """The warp shuffles of ``node``, in source order."""
    return [c for c in walk(node) if c.type == "call_expression" and
            text(c.child_by_field_name("function")).startswith("__shfl")]



def _offset_start(loop: Node) -> tuple[Node, str, bool] | None:
    """(literal, replacement, xor only) of a halving or doubling offset loop, else None."""
    init, update = loop.child_by_field_name("initializer"), loop.child_by_field_name("update")
    cond = loop.child_by_field_name("condition")
    if init is None or update is None or cond is None or init.type != "declaration":
        return None
    var, _d, start = declared_name(init)
    if start is None or update.type != "assignment_expression" or \
            text(update.child_by_field_name("left")) != var:
        return None
    op, right = text(update.child_by_field_name("operator")), \
        int_value(update.child_by_field_name("right"))
    test = binary(cond)
    bare = strip(cond).type == "identifier" and text(strip(cond)) == var  # `o` is `o != 0`
    if not bare and (test is None or text(strip(test[0])) != var):
        return None
    if int_expr_value(start) == 16 and (op, right) in ((">>=", 1), ("/=", 2)) and \
            (bare or (test is not None and
                      (test[1], int_expr_value(test[2])) in ((">", 0), (">=", 1), ("!=", 0)))):
        return strip(start), "(LANES / 2)", False
    if int_expr_value(start) == 1 and (op, right) in (("<<=", 1), ("*=", 2)) and test is not None:
        if (test[1], int_expr_value(test[2])) == ("<", 32):
            return strip(test[2]), "LANES", True
        if (test[1], int_expr_value(test[2])) == ("<=", 16):
            return strip(test[2]), "(LANES / 2)", True
    return None


def _check_call(call: Node, widths: list[Node]) -> str:
    fn = text(call.child_by_field_name("function"))
    args = call.child_by_field_name("arguments")
    named = args.named_children if args is not None else []
    if fn not in _SHUFFLES or len(named) not in (3, 4):
        raise Illegal(f"`{text(call)[:50]}` is not a 3-argument xor/down shuffle", call)
    if len(named) == 4:
        if int_expr_value(named[3]) != 32:
            raise Illegal(f"`{text(call)[:50]}` names a width other than 32", call)
        widths.append(strip(named[3]))
    return fn


def shuffle_loops(plan: Plan
                  ) -> tuple[list[OffsetLoop], list[Node], list[Node], list[TreeStep]]:
    """(offset loops, 4th-argument widths, broadcasts, unrolled trees' steps) of the kernel;
    raises Illegal for a shuffle in any other shape."""
    loops: list[OffsetLoop] = []
    widths: list[Node] = []
    seen: set[int] = set()
    for n in walk(plan.body):
        if n.type != "for_statement":
            continue
        body = n.child_by_field_name("body")
        shuffles = shuffle_calls(body) if body is not None else []
        start = _offset_start(n)
        if not shuffles or start is None:
            continue
        node, replacement, xor_only = start
        for call in shuffles:
            fn = _check_call(call, widths)
            if xor_only and fn != "__shfl_xor_sync":
                raise Illegal(f"`{text(call)[:50]}` in a doubling offset loop is not an xor "
                              "shuffle", call)
            seen.add(call.start_byte)
        loops.append(OffsetLoop(node, replacement, tuple(shuffles)))
    broadcasts: list[Node] = []
    rest: list[Node] = []
    for c in shuffle_calls(plan.body):
        if c.start_byte in seen:
            continue
        fn = _check_call(c, widths)
        args = c.child_by_field_name("arguments")
        source = args.named_children[2] if args is not None else None
        if fn == "__shfl_sync" and int_value(source) == 0:
            broadcasts.append(c)
        elif fn == "__shfl_sync":
            raise Illegal(f"the shuffle `{text(c)[:50]}` is outside an offset loop "
                          "`for (o = 16; o > 0; o >>= 1)` and is not a broadcast from lane 0", c)
        else:
            rest.append(c)
    return loops, widths, broadcasts, _tree_steps(rest)


def _tree_steps(calls: list[Node]) -> list[TreeStep]:
    """The steps of the unrolled trees ``calls`` make (consecutive statements, one shuffle
    each, offsets a whole tree of :data:`_TREES`); raises Illegal naming a call that is not."""
    runs: list[list[TreeStep]] = []
    for c in calls:
        statement = c.parent
        while statement is not None and not statement.type.endswith("statement"):
            statement = statement.parent
        args = c.child_by_field_name("arguments")
        offset = int_value(args.named_children[2]) if args is not None else None
        if statement is None or statement.type != "expression_statement" or offset is None or \
                len(shuffle_calls(statement)) != 1:
            raise Illegal(f"the shuffle `{text(c)[:50]}` is outside an offset loop "
                          "`for (o = 16; o > 0; o >>= 1)`, is not a broadcast from lane 0 and "
                          "not a statement of an unrolled tree with a literal offset", c)
        step = TreeStep(statement, offset, c)
        if runs and runs[-1][-1].statement.next_named_sibling == statement:
            runs[-1].append(step)
        else:
            runs.append([step])
    for run in runs:
        fns = {text(s.shuffle.child_by_field_name("function")) for s in run}
        order = tuple(s.offset for s in run)
        if order not in _TREES or not fns <= set(_TREES[order]):
            raise Illegal(f"the unrolled shuffles `{text(run[0].shuffle)[:50]}` .. take the "
                          f"offsets {', '.join(map(str, order))}, not a whole tree 16 .. 1 "
                          "(down or xor) or 1 .. 16 (xor)", run[0].shuffle)
    return [s for run in runs for s in run]


#: Intrinsics whose result depends on which threads share a warp.
WARP_COLLECTIVES = ("__shfl", "__ballot", "__any_sync", "__all_sync", "__reduce_", "__match_",
                    "__activemask")


def warp_collective(plan: Plan) -> Node | None:
    """The first call of the kernel that combines the lanes of a warp (a shuffle, vote,
    match or warp reduce), in place or inside a function of the file it calls (directly or
    through others: ``s = warp_sum(s);``), else None: the threads it combines are fixed by
    the block's shape, so a block lift that regroups them changes what it computes."""
    for c in walk(plan.body):
        if c.type == "call_expression" and \
                text(c.child_by_field_name("function")).startswith(WARP_COLLECTIVES):
            return c
    return collective_helper(plan)


def collective_helper(plan: Plan, more: tuple[str, ...] = ()) -> Node | None:
    """The first call of the kernel to a function of the file that (itself or through the
    functions it calls) calls a warp collective or one of ``more``; None when none does."""
    defined = plan.source.function_definitions()

    def collective(name: str, seen: frozenset[str]) -> bool:
        fn = defined.get(name)
        if fn is None or name in seen:
            return False
        names = {text(n.child_by_field_name("function")) for n in walk(fn)
                 if n.type == "call_expression"}
        return any(c.startswith((*WARP_COLLECTIVES, *more)) for c in names) or \
            any(collective(c, seen | {name}) for c in names)

    for c in walk(plan.body):
        if c.type == "call_expression" and \
                collective(text(c.child_by_field_name("function")), frozenset()):
            return c
    return None
