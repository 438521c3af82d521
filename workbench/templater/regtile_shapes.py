"""The shapes a tiled kernel as written is correct at (:mod:`.regtile`, :mod:`.smem_tiles`).

A kernel that never bounds its rows by the matrix's row count (``if (row < M)``, ``r < M ?
A[..] : 0``) reads and writes whole tiles only: as written it is correct where M is a
multiple of its tile (the CUDA samples' ``matrixMul`` is the best known), and nowhere else.
The lift's tiles are other sizes, so a config whose BM does not divide M would read rows
past the matrix and write rows past C, at a shape where the kernel as written is right. Per
dimension, the space then keeps the size a multiple of the lifted tile: ``M % BM == 0`` for
rows (the grid's y rule ``ceil_div(M, BM)`` names M), ``N % BN == 0`` for columns (its x
rule), ``K % BK == 0`` for the depth (the loop over k's bound) — the same assumption the
kernel as written makes of its own tile, now of the config's.

A tile tied to a square block through one macro (:mod:`.smem_tiles`, the samples' own
``matrixMul``: ``for (a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep)``) follows
the same rule with its one TILE: each size a grid rule divides by the tile, and each size
an index reads, that the kernel bounds nothing by, stays a multiple of TILE.

A size counts as bounded when a comparison of the kernel names it, a local set from it
(``const int rows = M;``) included, other than the test of a loop over tiles (a loop that
synchronises the block: its test bounds the tile's start, not its elements). A clamp
(``min(r, M - 1)``) is no comparison: such a kernel gets the constraint too, which keeps
only configs that are right either way.

The same holds of every family that resizes the work a block covers (the block size, items a
thread, rows a block, 2-D items): once the lift is done, each grid rule ``ceil_div(S, E)``
whose E reads a lifted parameter, where no comparison bounds S, keeps S a multiple of E
(:func:`constrain_whole_blocks`): the kernel as written touches every element of the blocks
it launches, so it is right only where they tile S exactly, and so is each config.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from tree_sitter import Node

from workbench.templater.analysis import calls, text, walk
from workbench.templater.plan import Plan

_COMPARISONS = ("<", "<=", ">", ">=")
_CEIL_DIV = r"ceil_div\((.+), (.+)\)"  # ceil_div(S, E): S the extent, E the block's share


def constrain_unguarded(plan: Plan, tiles: dict[str, str], k_test: Node | None) -> None:
    """Keep each size the kernel never bounds a multiple of its lifted tile. ``tiles``: the
    parameter of the rows, columns and depth (``{"y": "BM", "x": "BN", "k": "BK"}``) as the
    grid rules (y, x) and the loop over k (its test ``k_test``) name them."""
    sizes: dict[str, str] = {}
    for i, dim in enumerate(("x", "y")):
        shape = _grid_size(plan, i, tiles[dim])
        if shape is not None:
            sizes[dim] = shape
    depth = _depth(k_test)
    if depth is not None and depth in plan.scalars:
        sizes["k"] = str(plan.scalars[depth]).strip()
    for dim, shape in sizes.items():
        what = {"y": "rows", "x": "columns", "k": "depth along k"}[dim]
        _whole(plan, shape, tiles[dim], what)


def constrain_whole_tiles(plan: Plan, tile: str) -> None:
    """Keep each size a multiple of ``tile`` that a grid rule divides by it or an index
    reads, where the kernel bounds nothing by that size."""
    shapes = [s for i in range(min(2, len(plan.grid))) if (s := _grid_size(plan, i, tile))]
    indexed = {text(n) for n in walk(plan.body) if n.type == "subscript_expression"
               for n in walk(n.child_by_field_name("indices") or n) if n.type == "identifier"}
    shapes += [str(plan.scalars[a]).strip() for a in sorted(indexed) if a in plan.scalars]
    for shape in dict.fromkeys(shapes):
        _whole(plan, shape, tile, "extent")


def constrain_whole_blocks(plan: Plan, written: Sequence[str]) -> None:
    """Keep S a multiple of E for each grid rule ``ceil_div(S, E)`` whose E reads a lifted
    parameter, where the rule as ``written`` tiles the same S (``ceil_div(S, 256)``: the
    author's blocks cover S whole) and the kernel bounds nothing by S (run once every family
    has lifted). A rule written as a count (``h``: a block a row, exact at every h) is left to
    the family that tiles it, which bounds what it adds."""
    for dim, (rule, before) in enumerate(zip(plan.grid, written, strict=False)):
        found = re.fullmatch(_CEIL_DIV, rule.strip())
        if found is None or _tiled_size(before) != _tiled_size(rule) or \
                _index_bounded(plan, "xyz"[dim]):
            continue
        tile = found.group(2).strip()
        knobs = [w for w in re.findall(r"\w+", tile) if w in plan.params]
        if knobs:
            _whole(plan, found.group(1).strip(),
                   tile if re.fullmatch(r"\w+", tile) else f"({tile})", "extent", knobs[0])


def _tiled_size(rule: str) -> str | None:
    """S of a grid rule that tiles S, ``ceil_div(S, L)`` or its long spelling ``(S + L - 1)
    // L``, as the rules' language prints it; None for any other rule."""
    try:
        node = ast.parse(rule.strip(), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "ceil_div" and len(node.args) == 2:
        return ast.unparse(node.args[0])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv) and \
            isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Add):
        return ast.unparse(node.left.left)
    return None


def _grid_size(plan: Plan, dim: int, tile: str) -> str | None:
    """S of the grid rule ``ceil_div(S, tile)`` along ``dim``, or None."""
    rule = plan.grid[dim].strip() if dim < len(plan.grid) else ""
    found = re.fullmatch(rf"ceil_div\((.+), {tile}\)", rule)
    return found.group(1).strip() if found else None


def _whole(plan: Plan, shape: str, tile: str, what: str, knob: str | None = None) -> None:
    """``(shape) % tile == 0`` where no comparison reads the arguments ``shape`` is (or, for
    a product of sizes such as ``rows * cols``, those it names)."""
    names = set(re.findall(r"[A-Za-z_]\w*", shape))
    args = {a for a, s in plan.scalars.items() if str(s).strip() == shape} or \
        {a for a, s in plan.scalars.items() if str(s).strip() in names}
    if not args or _compared(plan, args) or f"({shape}) % {tile} == 0" in plan.constraints:
        return
    plan.constrain(f"({shape}) % {tile} == 0")
    plan.note(knob or tile, True, f"no comparison bounds the {what} by {' or '.join(sorted(args))}: "
              f"the kernel as written reads and writes whole tiles only (correct where {shape} "
              f"is a multiple of its tile), so the space keeps {shape} a multiple of {tile}",
              plan.body)


def _depth(test: Node | None) -> str | None:
    """The size the loop over k runs to: the name ``k < K`` compares with, or the one a
    count of whole tiles divides (``t < K / TILE``)."""
    if test is None or test.type != "binary_expression":
        return None
    right = test.child_by_field_name("right")
    if right is not None and right.type == "binary_expression" and \
            text(right.child_by_field_name("operator")) == "/":
        right = right.child_by_field_name("left")
        return text(right) if right is not None and right.type == "identifier" else None
    names = [text(n) for n in walk(test) if n.type == "identifier"]
    return names[-1] if len(names) == 2 else None


def unbounded_size(plan: Plan, name: str) -> bool:
    """Whether ``name`` is a kernel argument no comparison reads (a loop over tiles' test
    aside): the kernel as written is right only where it is a multiple of its tile, which
    :func:`constrain_unguarded` keeps of the lifted one."""
    return name in plan.scalars and not _compared(plan, {name})


def _compared(plan: Plan, args: set[str]) -> bool:
    """Whether a comparison in the kernel, other than a loop over tiles' test, reads one of
    ``args`` or a local set from one."""
    names = _set_from(plan, args)
    return any(_reads(n, names) for n in _comparisons(plan))


def _index_bounded(plan: Plan, dim: str) -> bool:
    """Whether a comparison bounds the thread's place along ``dim`` from above: the smaller
    side reads ``blockIdx.<dim>`` (or a local set from it), the larger no block or thread index
    (``if (gx < WIDTH)`` with WIDTH a macro for the size the grid covers by ``w``): the kernel
    guards its points, so a block that overhangs the extent writes nothing past it. A test that
    makes the thread leave (``if (idx >= total) return;``, or ``continue``) bounds it the other
    way round: the place on the larger side (and ``if (idx < lo) return;`` bounds it from
    below only)."""
    seeds = {d.name for d in plan.facts.defs.values() if d.value is not None and
             any(n.type == "field_expression" and text(n) == f"blockIdx.{dim}"
                 for n in walk(d.value))}
    places = _set_from(plan, seeds) | {f"blockIdx.{dim}"}
    for n in _comparisons(plan):
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        op = text(n.child_by_field_name("operator") or n)
        if left is None or right is None:
            continue
        # place < bound where the thread works; if (place >= bound) return; where it leaves
        upper = (op in ("<", "<=")) != _exits(n)
        near, far = (left, right) if upper else (right, left)
        if _reads(near, places) and not _reads(far, places | {"blockIdx", "threadIdx"}):
            return True
    return False


def _exits(test: Node) -> bool:
    """Whether ``test`` is the whole condition of an ``if`` with no ``else`` whose
    consequence is ``return;`` or ``continue;`` (alone or in braces)."""
    clause = test.parent
    while clause is not None and clause.type == "parenthesized_expression":
        clause = clause.parent
    stmt = clause.parent if clause is not None and clause.type == "condition_clause" else None
    if stmt is None or stmt.type != "if_statement" or \
            stmt.child_by_field_name("alternative") is not None:
        return False
    body = stmt.child_by_field_name("consequence")
    if body is not None and body.type == "compound_statement":
        inner = [c for c in body.named_children if c.type != "comment"]
        body = inner[0] if len(inner) == 1 else None
    return body is not None and body.type in ("return_statement", "continue_statement") and \
        not body.named_children


def _set_from(plan: Plan, names: set[str]) -> set[str]:
    """``names`` and every local set, directly or through others, from one of them."""
    names = set(names)
    grew = True
    while grew:
        grew = False
        for d in plan.facts.defs.values():
            if d.name not in names and d.value is not None and \
                    any(n.type == "identifier" and text(n) in names for n in walk(d.value)):
                names.add(d.name)
                grew = True
    return names


def _comparisons(plan: Plan) -> list[Node]:
    """The kernel's comparisons (<, <=, >, >=) other than a loop over tiles' test (a loop
    that synchronises the block: its test bounds the tile's start, not its elements)."""
    walks = {(t.start_byte, t.end_byte) for n in walk(plan.body)
             if n.type in ("for_statement", "while_statement", "do_statement")
             and "__syncthreads" in calls(n)
             and (t := n.child_by_field_name("condition")) is not None}
    return [n for n in walk(plan.body) if n.type == "binary_expression"
            and not any(a <= n.start_byte and n.end_byte <= b for a, b in walks)
            and (op := n.child_by_field_name("operator")) is not None
            and text(op) in _COMPARISONS]


def _reads(node: Node, names: set[str]) -> bool:
    """Whether ``node`` reads one of ``names`` (identifiers, or ``blockIdx.x``-like fields)."""
    return any((m.type == "identifier" and text(m) in names) or
               (m.type == "field_expression" and text(m) in names) for m in walk(node))
