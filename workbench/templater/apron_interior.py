"""INTERIOR for apron tiles (:mod:`.apron`): a block whose whole tile, halo included, lies
inside the grid loads it without the per-load bounds tests.

Known practice for stencils (the expert kernels' interior fast path): the tile's value is
written once as a function of the global position with its bounds test, ``(y >= 0 && y < ny
&& x >= 0 && x < nx) ? u[y * nx + x] : 0.0f``, so every load of the tile (each element of the
nest, each value of the row window read straight from the source at USE_SMEM = 0) carries
four compares and a predicate: wave2d_o4 at 128 x 1, OUT_Y = 4, USE_SMEM = 0 compiles to
58 ``setp`` and 42 branches for 28 loads. Only the blocks at the grid's edge need them.

The rule, legal on the parse. Each ``c ? a : b`` of the stored value whose condition ``c``
is a bounds test: an ``&&`` of comparisons (one side reads memory, the other not: where the
true side reads, ``c`` holds over an interior block; ``||``, the false side reads: it fails
there), each comparison ``<``, ``<=``, ``>``, ``>=`` of two signed integer expressions that
are polynomials (single-assignment locals expanded) of the tile position, ``blockIdx`` and
kernel scalars the kernel never assigns, of degree at most one in each coordinate of the
position. Such a comparison is monotone in each coordinate, so over the block's tile (rows 0
to EY - 1, columns 0 to EX - 1, every position a load reads) it takes its worst value at a
corner: at the row end the coefficient's sign names (both where the coefficient is not a
number), likewise for the column. The block's test is those corners' comparisons, the
kernel's own text at those positions: block-uniform (no thread index), pure (compares of
integers) and exactly the tests of the loads when each holds at every position.

The rewrite, a knob INTERIOR (0: as written): from the tile's first load to the end of the
work, ``if (wb_inside) { interior copy } else { as lifted }`` with ``wb_inside = INTERIOR &&
(the corners' tests)``; in the interior copy each such condition reads ``(true)`` /
``(false)`` (the same ``?:``, so the same type and value), the rest unchanged. The branch is
block-uniform, so each copy's barriers are reached by the whole block. Refused (noted with
the line; the lift stands without the knob) where no condition of the value is such a test
(a clamped index ``min(max(x, 0), nx - 1)`` or a periodic one ``(x + nx) % nx`` has no test
to drop), where a comparison is unsigned (``(unsigned)x < nx`` wraps, not monotone), reads
memory or a name assigned in the kernel, or where the copied span declares shared memory.
Integer positions are assumed not to overflow, as the kernel's own indexing assumes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import binary, int_value, strip, text, walk, write_target
from workbench.templater.apron_loads import Deps, Load, declared_type
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused
from workbench.templater.stencil import Poly, add, derivative, scale

KNOB = "INTERIOR"
FLAG = "wb_inside"  # the block's tile with its halo lies inside: the interior copy runs
_COMPARE = ("<", "<=", ">", ">=")
_SIGNED = frozenset({"int", "long", "long long", "long int", "long long int", "short", "signed",
                     "signed int", "int32_t", "int64_t", "ptrdiff_t", "signed char"})


@dataclass(frozen=True)
class Bound:
    """One bounds test of a load's value: the condition of ``c ? a : b``, its value at every
    position of an interior block's tile, and the corners to test per comparison."""

    load: Load
    cond: Node
    holds: bool
    corners: tuple[tuple[Node, tuple[str, ...], tuple[str, ...]], ...]  # (compare, ys, xs)


@dataclass
class Copy:
    """Which copy the rewriter is rendering: the interior one (its tests known) or not."""

    interior: bool = False


def analyse_bounds(plan: Plan, deps: Deps, loads: list[Load], region: int
                   ) -> tuple[Bound, ...] | Refused:
    """The bounds tests of the tile's loads an interior block may drop, or why there are
    none (the refusal's reason and node). ``region``: where the copied span begins (the
    block's test runs before it)."""
    assigned = {text(t) for n in walk(plan.body)
                if n.type in ("assignment_expression", "update_expression")
                and (t := write_target(n)) is not None and t.type == "identifier"}
    types = declared_types(plan.body)
    late = {name for name, spans in _declared_at(plan.body).items()
            if any(at >= region for at in spans)}
    found: list[Bound] = []
    why: Refused | None = None
    for ld in loads:
        if ld.value is None or ld.part is None:
            why = why or Refused("the tile is loaded by one flat loop over its elements: its "
                                 "value's position is not followed", None)
            continue
        for n in walk(ld.value):
            if n.type != "conditional_expression":
                continue
            try:
                found.append(_bound(plan, deps, ld, n, assigned, _Names(types, late)))
            except Refused as exc:
                why = why or exc
    if not found:
        return why or Refused("the tile's value has no bounds test (`c ? load : fill`): "
                              "nothing to drop in an interior block", loads[0].value)
    return tuple(found)


@dataclass(frozen=True)
class _Names:
    types: dict[str, set[str]]  # every declared name -> the types it is declared with
    late: set[str]  # names declared inside the copied span (the block's test cannot read)


def _declarators(body: Node) -> list[tuple[str, str, int]]:
    """(name, declared type, where) of every declaration in ``body`` (for-loop ones too)."""
    out = []
    for d in walk(body):
        if d.type != "declaration":
            continue
        typ = d.child_by_field_name("type")
        for top in d.children_by_field_name("declarator"):
            inner: Node | None = top
            while inner is not None and inner.type in ("init_declarator", "pointer_declarator",
                                                       "array_declarator"):
                inner = inner.child_by_field_name("declarator")
            if inner is not None and inner.type == "identifier" and typ is not None:
                pointer = top.type == "pointer_declarator" or any(
                    c.type in ("pointer_declarator", "array_declarator") for c in walk(top))
                out.append((text(inner), "*" if pointer else text(typ), d.start_byte))
    return out


def declared_types(body: Node) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name, typ, _at in _declarators(body):
        out.setdefault(name, set()).add(_clean(typ))
    return out


def _declared_at(body: Node) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for name, _typ, at in _declarators(body):
        out.setdefault(name, []).append(at)
    return out


def _bound(plan: Plan, deps: Deps, ld: Load, n: Node, assigned: set[str], names: _Names
           ) -> Bound:
    cond = n.child_by_field_name("condition")
    yes, no = n.child_by_field_name("consequence"), n.child_by_field_name("alternative")
    if cond is None or yes is None or no is None:
        raise Refused(f"`{text(n)[:50]}` is not a whole `c ? a : b`", n)
    reads_yes, reads_no = _reads_memory(plan, yes), _reads_memory(plan, no)
    if reads_yes == reads_no:
        raise Refused(f"`{text(n)[:60]}`: {'both' if reads_yes else 'neither'} side reads "
                      "memory, so it is no bounds test of a load", n)
    holds = reads_yes
    compares = _joined(strip(cond), "&&" if holds else "||")
    if compares is None:
        raise Refused(f"`{text(cond)[:60]}` is not an {'&&' if holds else '||'} of "
                      "comparisons: the block's test could not bound it", cond)
    corners = []
    for c in compares:
        corners.append(_corners(plan, deps, ld, c, assigned, names, holds))
    return Bound(ld, cond, holds, tuple(corners))


def _reads_memory(plan: Plan, node: Node) -> bool:
    return any(n.type == "subscript_expression" or
               (n.type == "pointer_expression" and text(n).startswith("*")) or
               (n.type == "call_expression" and text(n.child_by_field_name("function"))
                .startswith("__ldg"))
               for n in walk(node))


def _joined(node: Node, joiner: str) -> list[Node] | None:
    """The comparisons an ``joiner`` tree of them is made of (None: anything else)."""
    parts = binary(node)
    if parts is not None and parts[1] == joiner:
        a, b = _joined(strip(parts[0]), joiner), _joined(strip(parts[2]), joiner)
        return None if a is None or b is None else a + b
    if parts is not None and parts[1] in _COMPARE:
        return [node]
    return None


def _corners(plan: Plan, deps: Deps, ld: Load, c: Node, assigned: set[str], names: _Names,
             holds: bool) -> tuple[Node, tuple[str, ...], tuple[str, ...]]:
    """The tile rows and columns (``lo`` / ``hi``) where comparison ``c`` is at its worst."""
    parts = binary(c)
    assert parts is not None and ld.part is not None
    left, op, right = parts
    for side in (left, right):
        if not signed(plan, deps.values, names.types, side):
            raise Refused(f"`{text(side)}` in `{text(c)}` may be unsigned: its comparison "
                          "wraps and is not monotone in the position", c)
    # the names the test reads once the load's own locals are expanded at a position
    shown = set(re.findall(r"(?<![\w.])[A-Za-z_]\w*", ld.part(lambda _n: None, "0", "0", c)))
    late = sorted(shown & names.late)
    if late:
        raise Refused(f"`{late[0]}` (read by `{text(c)}`) is declared after the tile's load "
                      "begins: the block's test before it could not read it", c)
    opaque: list[Node] = []
    diff: Poly = add(deps.poly(left, opaque), scale(deps.poly(right, opaque), -1))
    if opaque:
        raise Refused(f"`{text(opaque[0])}` in `{text(c)}` is not an integer polynomial of "
                      "the position (a clamp or a wrap has no bound to test)", c)
    ys, xs = ld.position
    allowed = {ys, xs, "blockIdx.x", "blockIdx.y"}
    for mono in diff:
        for atom in mono:
            if atom in allowed:
                continue
            if atom in assigned or plan.pointer(atom) or not _scalar(plan, atom):
                raise Refused(f"`{atom}` in `{text(c)}` is neither the position, the block "
                              "nor a kernel scalar the kernel never assigns", c)
    # where the test must hold: difference >= 0 (>, >=), <= 0 (<, <=); flipped for a
    # condition that must fail
    up = (op in (">", ">=")) == holds  # True: worst at the difference's minimum
    try:
        return (c, _ends(diff, ys, up), _ends(diff, xs, up))
    except Refused as exc:
        raise Refused(f"`{text(c)}`: {exc.reason}", c) from None


def _ends(diff: Poly, atom: str, up: bool) -> tuple[str, ...]:
    """The tile ends (``lo``, ``hi``) to test along ``atom``: none where the comparison does
    not depend on it, the worst one where its coefficient is a number, else both."""
    slope = derivative(diff, atom)
    if any(atom in mono for mono in slope):
        raise Refused(f"the comparison is not of degree one in {atom}: its worst value may "
                      "lie inside the tile", None)
    if not slope:
        return ()
    if set(slope) == {()}:
        rising = slope[()] > 0
        return ("lo",) if rising == up else ("hi",)
    return ("lo", "hi")


def _scalar(plan: Plan, name: str) -> bool:
    try:
        return not plan.kernel.param(name).is_pointer
    except KeyError:
        return False


def signed(plan: Plan, values: Mapping[str, Node], types: dict[str, set[str]], node: Node,
           depth: int = 0) -> bool:
    """Whether ``node`` has a signed integer type by its spelling (a cast, a local or a
    kernel parameter so declared, a literal without ``u``, ``+ - *`` of such)."""
    if depth > 24:
        return False
    if node.type == "parenthesized_expression" and node.named_child_count == 1:
        return signed(plan, values, types, node.named_children[0], depth + 1)
    if node.type == "cast_expression":
        typ = node.child_by_field_name("type")
        return typ is not None and _clean(text(typ)) in _SIGNED
    if node.type == "number_literal":
        return int_value(node) is not None and not any(ch in text(node) for ch in "uU")
    if node.type == "identifier":
        value = values.get(text(node))
        if value is not None:
            return _clean(declared_type(value)) in _SIGNED
        try:
            p = plan.kernel.param(text(node))
        except KeyError:  # a local (a loop's position too): every declaration of it signed
            return bool(types.get(text(node))) and types[text(node)] <= _SIGNED
        return not p.is_pointer and _clean(p.base_type) in _SIGNED
    if node.type == "unary_expression" and text(node.child_by_field_name("operator")) == "-":
        arg = node.child_by_field_name("argument")
        return arg is not None and signed(plan, values, types, arg, depth + 1)
    parts = binary(node)
    if parts is not None and parts[1] in ("+", "-", "*"):
        return signed(plan, values, types, parts[0], depth + 1) and \
            signed(plan, values, types, parts[2], depth + 1)
    return False


def _clean(typ: str) -> str:
    return " ".join(w for w in typ.split() if w not in ("const", "volatile", "__restrict__"))


def block_test(bounds: tuple[Bound, ...], sub: Callable[[Node], str | None], ext_y: str,
               ext_x: str) -> str:
    """C text: every bound's comparisons at their worst tile corners (deduplicated)."""
    terms: list[str] = []
    for b in bounds:
        assert b.load.part is not None
        for c, ys, xs in b.corners:
            for y in ys or ("lo",):
                for x in xs or ("lo",):
                    p = "0" if y == "lo" else f"({ext_y}) - 1"
                    q = "0" if x == "lo" else f"({ext_x}) - 1"
                    t = b.load.part(sub, p, q, c)
                    t = f"({t})" if b.holds else f"!({t})"
                    if t not in terms:
                        terms.append(t)
    return " &&\n      ".join(terms)


def known(copy: Copy, bounds: tuple[Bound, ...], sub: Callable[[Node], str | None]
          ) -> Callable[[Node], str | None]:
    """``sub`` that, while the interior copy renders, writes each bound's condition as its
    known value."""
    at = {(b.cond.start_byte, b.cond.end_byte, b.cond.type): b.holds for b in bounds}

    def wrapped(n: Node) -> str | None:
        if copy.interior:
            value = at.get((n.start_byte, n.end_byte, n.type))
            if value is not None:
                return "(true)" if value else "(false)"
        return sub(n)
    return wrapped


def emit_copies(plan: Plan, copy: Copy, bounds: tuple[Bound, ...], start: int, end: int,
                knob: str, test: str) -> None:
    """``[start, end)`` twice: ``if (wb_inside) { interior } else { as lifted }``. Call
    after every other edit at ``end`` (the close goes last there)."""
    for b in bounds:  # the conditions the rewriter renders itself (a nest's stored value)
        def word(r: object, b: Bound = b) -> str:
            return ("(true || (" if b.holds else "(false && (") if copy.interior else ""
        plan.rw.replace_span(b.cond.start_byte, b.cond.start_byte, make=word)
        plan.rw.replace_span(b.cond.end_byte, b.cond.end_byte,
                             make=lambda r: "))" if copy.interior else "")

    def opening(r: object) -> str:
        if copy.interior:
            return ""  # the interior copy's own rendering of this span
        copy.interior = True
        try:
            fast = plan.rw.render(start, end)
        finally:
            copy.interior = False
        return (f"\n  // {knob}: the block's tile with its halo inside the grid: its loads "
                f"without their bounds tests\n  const bool {FLAG} = {knob} && (\n      {test});"
                f"\n  if ({FLAG}) {{\n  {fast}\n  }} else {{\n  ")
    plan.rw.replace_span(start, start, make=opening)
    plan.rw.replace_span(end, end, make=lambda r: "" if copy.interior else "\n  }")
