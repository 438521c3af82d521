"""T_ITEMS: consecutive outputs along the sliding axis per thread, their overlapping input
windows read once (a register window), for the channel-mixing kernels of :mod:`.conv_mix`.

Known practice for 1-D convolutions (temporal convolutions, FIR filters): a thread that
computes ``T_ITEMS`` consecutive outputs ``t .. t + T_ITEMS - 1`` of a K-tap filter needs the
inputs ``t + lo .. t + T_ITEMS - 1 + hi``; loaded once into registers per input channel that
is ``T_ITEMS + K - 1`` loads instead of ``T_ITEMS * K``, and each value feeds every output
whose window holds it.

Legal only where the analysis on the parse shows (refusals name the line): the sliding
index is declared ``T t = blockIdx.x * B + threadIdx.x`` (``B`` the block's size, any
order, casts allowed) and ``blockIdx.x``/``threadIdx.x``/``blockDim.x`` are read nowhere
else, ``gridDim.x`` nowhere; one bounds check guards the work (``if (t < X) { ... }`` or
``if (t >= X) return;``), bounding ``t`` from above only, with ``X`` the grid's extent
``ceil_div(X, B)``; every statement that depends on ``t`` (assigned from it or under a
condition on it) lies inside that check; and exactly one memory read that depends on ``t``
lies in a loop of constant trips (the taps, counter ``k``), reading ``t`` and ``k`` only
through ``t + k`` (locals expanded), as do the conditions between the loop and the read.

The rewrite (done with the channels, in :func:`.conv_mix._emit`): the thread's items are
``t * T_ITEMS + u``; what depends on ``t`` runs per item in an unrolled loop over ``u``
under the item's own check (the check at the thread's first item guards the rest: it bounds
from above, so an item is live only if the first is); locals that depend on ``t`` become one
copy per item. Before the tap loop, slot ``j`` of the window is loaded where the first item
that reads it (``u = max(0, j - K + 1)``, tap ``k = lo + j - u``) is live and passes the
read's conditions (they depend on ``t + k`` only: the same for every item reading the slot),
so nothing is read that the kernel as written does not read. The read becomes the slot
``u + k - lo``: each output sums the same values in the same order, bit for bit. The grid's
x divides by ``B * T_ITEMS``; ``T_ITEMS = 1`` is the kernel as written. Where the thread
can test its whole window before the loop around the taps, that loop is written twice: an
interior copy with the checks known true and the general one (:mod:`.conv_mix_interior`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import builtin, factors, line, mentions, strip, terms, text, walk
from workbench.templater.conv import _compile_time_defs, _Expr, _window
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, render
from workbench.templater.stencil import _bounds_from_above, _guard, statements

KNOB = "T_ITEMS"
#: Consecutive outputs per thread offered (the window is ``T_ITEMS + K - 1`` registers).
CHOICES = (1, 2, 4, 8)


@dataclass
class Slide:
    """The sliding axis: its index, its bounds check and the windowed read."""

    decl: Node  # ``T t = blockIdx.x * B + threadIdx.x;``
    var: str
    guard: Node  # the bounds check (an ``if``)
    cond: Node
    exits: bool  # ``if (cond) return;`` (True) or ``if (cond) { work }`` (False)
    region: list[Node]  # the statements the check guards
    loop: Node  # the tap loop
    k: str
    k_type: str
    lo: str
    count: int
    read: Node  # the windowed read
    conds: list[tuple[Node, bool]]  # conditions on the way to the read (node, holds)
    elem: str  # the window's element type
    expand: dict[str, tuple[str, Node]]  # locals the window's loads expand: (type, value)
    bound: str  # X
    dep: set[str]  # the locals that depend on the index
    sign: int = 1  # the read at ``t + k`` (1) or, a convolution's, at ``t - k`` (-1)

    def require_grid(self, plan: Plan) -> None:
        """Refused unless the grid's x is ``ceil_div`` of the check's bound by the block: the
        items a thread takes past the bound would otherwise be written."""
        grid = grid_bound(plan.grid[0], plan.block[0])
        if grid is None or grid.replace(" ", "") != \
                plan.scalars.get(self.bound, self.bound).replace(" ", ""):
            raise Refused(f"the grid's x `{plan.grid[0]}` is not ceil_div(`{self.bound}`, "
                          f"{plan.block[0]}): items past the check's bound would be written",
                          self.guard)

    def at(self, data: bytes, index: str) -> Callable[[Node], str | None]:
        """A renderer's substitution: the slide's index spelled ``index``, and each local the
        windowed read expands spelled out by its value (nested up to 12 deep)."""
        def sub(m: Node, depth: int = 0) -> str | None:
            if m.type != "identifier":
                return None
            if text(m) == self.var:
                return index
            held = self.expand.get(text(m))
            if held is None or depth > 12:
                return None
            return f"(({held[0]})({render(data, held[1], lambda x: sub(x, depth + 1))}))"
        return sub


def find_slide(plan: Plan, depending: Callable[[str, Node], set[str]], *,
               most: int = 64, mirrored: bool = False) -> Slide | None:
    """The sliding axis of the family, or None where the kernel has none (silently);
    raises Refused where it has one the analysis cannot follow. ``depending(t, check)``:
    the locals that depend on ``t`` (assigned from it or under a condition on it other than
    the bounds check ``check``: a value set under it alone is the same for every item);
    ``most``: the taps a tap loop may have (1 .. 64 where the window holds them all);
    ``mirrored``: a read through ``t - k`` is a slide too (:attr:`Slide.sign` -1)."""
    if len(plan.grid) < 1 or len(plan.block) < 1:
        return None
    stmts = statements(plan.body)
    found = _index_decl(plan, stmts)
    if found is None:
        return None
    decl, var = found
    for n in walk(plan.body):
        if n.type != "field_expression" or (decl.start_byte <= n.start_byte and
                                            n.end_byte <= decl.end_byte):
            continue
        for b in ("blockIdx", "threadIdx", "blockDim", "gridDim"):
            if builtin(n, b) == "x":
                raise Refused(f"`{text(n)}` is read besides the sliding index `{var}`: a "
                              "thread's items would read it for one item", n)
    rest = stmts[stmts.index(decl) + 1:]
    try:
        guard, cond, exits, region = _guard(rest)
    except Refused as exc:
        raise Refused(f"no bounds check on `{var}` guards the work: {exc.reason}", decl) \
            from None
    dep = depending(var, guard)
    bad = _bounds_from_above(cond, var, exits)
    if bad is not None or not mentions(cond, {var}):
        raise Refused(f"`{text(bad or cond)}` does not bound `{var}` from above only",
                      bad or cond)
    bound = _bound(cond, var, exits)
    if bound is None:
        raise Refused(f"`{text(cond)}` is not one comparison of `{var}` with a bound",
                      cond)
    inside = {id(s) for s in region}
    for s in rest:
        if s is guard or id(s) in inside:
            continue
        if mentions(s, dep):
            raise Refused(f"`{text(s)[:60]}` depends on `{var}` outside its bounds check",
                          s)
    for s in stmts[:stmts.index(decl)]:
        if mentions(s, {var}):
            raise Refused(f"`{text(s)[:60]}` reads `{var}` before it is declared", s)
    for s in region:
        for n in walk(s):
            if n.type in ("return_statement", "goto_statement"):
                raise Refused(f"`{text(n)}` leaves the work of one item, not the thread's",
                              n)
    loop, read, conds = _windowed_read(plan, region, dep, var)
    defs = _compile_time_defs(plan)
    w = _window(plan, loop, defs, most=most)
    k = w.var
    init = loop.child_by_field_name("initializer")
    typ = init.child_by_field_name("type") if init is not None else None
    expr = _Expr(plan, {var, k})
    sign = -1 if mirrored and expr.via_sum(read, var, k) is not None and \
        expr.via_sum(read, var, k, -1) is None else 1
    for part in [read, *(c for c, _ in conds)]:
        names = expr.names(part)
        if {var, k} - names and part is read:
            raise Refused(f"`{text(read)}` does not read along both `{var}` and the tap `{k}`",
                          read)
        off = expr.via_sum(part, var, k, sign)
        if off is not None:
            raise Refused(f"`{text(off)[:60]}` reads `{var}` and `{k}` other than through "
                          f"`{var} {'+' if sign > 0 else '-'} {k}`: the items would not "
                          "share the values", off)
    expand = _expansions(plan, expr, loop, dep, [read, *(c for c, _ in conds)], var, k)
    elem = _element_type(plan, read)
    return Slide(decl, var, guard, cond, exits, region, loop, k,
                 text(typ) if typ is not None else "int", w.lo_text, w.count, read, conds,
                 elem, expand, bound, dep, sign)


def _index_decl(plan: Plan, stmts: list[Node]) -> tuple[Node, str] | None:
    """``T t = blockIdx.x * B + threadIdx.x;`` at the top level, ``B`` the block's size
    (``blockDim.x`` or what the launch's block reads), in any order, casts allowed."""
    for s in stmts:
        ds = s.children_by_field_name("declarator") if s.type == "declaration" else []
        value = ds[0].child_by_field_name("value") if len(ds) == 1 and \
            ds[0].type == "init_declarator" else None
        if value is None or len(terms(value)) != 2 or any(sign != 1 for sign, _ in terms(value)):
            continue
        ts = [t for _, t in terms(value)]
        thread = [t for t in ts if builtin(t, "threadIdx") == "x"]
        rest = [t for t in ts if t not in thread]
        if len(thread) != 1 or len(rest) != 1:
            continue
        fs = factors(rest[0])
        blk = [f for f in fs if builtin(f, "blockIdx") == "x"]
        size = [f for f in fs if builtin(f, "blockIdx") is None]
        if len(fs) != 2 or len(blk) != 1 or len(size) != 1:
            continue
        if builtin(size[0], "blockDim") != "x" and \
                plan.rw.text(size[0]).replace(" ", "") != plan.block[0].replace(" ", ""):
            continue
        name = ds[0].child_by_field_name("declarator")
        if name is None or name.type != "identifier":
            continue
        return s, text(name)
    return None


def _bound(cond: Node, var: str, exits: bool) -> str | None:
    """``X`` of ``var < X`` (``var >= X`` where the check leaves), casts stripped."""
    c = strip(cond)
    if c.type != "binary_expression":
        return None
    left, right = c.child_by_field_name("left"), c.child_by_field_name("right")
    op = text(c.child_by_field_name("operator"))
    if left is None or right is None:
        return None
    want = (">=",) if exits else ("<",)
    flip = ("<=",) if exits else (">",)
    if text(strip(left)) == var and op in want:
        return _uncast(right)
    if text(strip(right)) == var and op in flip:
        return _uncast(left)
    return None


def _uncast(n: Node) -> str:
    n = strip(n)
    while n.type == "cast_expression":
        value = n.child_by_field_name("value")
        if value is None:
            break
        n = strip(value)
    return text(n)


def _windowed_read(plan: Plan, region: list[Node], dep: set[str], var: str
                   ) -> tuple[Node, Node, list[tuple[Node, bool]]]:
    """The one read depending on the index inside a loop: (its loop, the read, the
    conditions between them)."""
    found: list[tuple[Node, Node]] = []
    for s in region:
        for n in walk(s):
            if n.type != "subscript_expression" or not mentions(n, dep):
                continue
            parent = n.parent
            if parent is not None and parent.type == "assignment_expression" and \
                    parent.child_by_field_name("left") == n:
                continue  # a store
            loop = _enclosing_loop(n, plan.body)
            if loop is not None:
                found.append((loop, n))
    if len(found) != 1:
        raise Refused(f"{len(found)} reads depending on `{var}` lie in loops (one tap read "
                      "is modelled)", found[1][1] if len(found) > 1 else region[0])
    loop, read = found[0]
    up = read.parent
    if up is not None and up.type == "pointer_expression":
        raise Refused(f"`{text(up)}` takes the read's address: a register window has none",
                      up)
    conds: list[tuple[Node, bool]] = []
    child = read
    while up is not None and up != loop:
        if up.type in ("for_statement", "while_statement", "do_statement",
                       "switch_statement"):
            raise Refused("a loop or switch stands between the tap loop and its read", up)
        cond = up.child_by_field_name("condition")
        if up.type == "if_statement" and cond is not None and child != cond:
            inner = cond.named_children[0] if cond.type == "condition_clause" else cond
            conds.append((inner, not _in_alternative(child, up)))
        elif up.type == "conditional_expression" and cond is not None and child != cond:
            conds.append((cond, up.child_by_field_name("consequence") == child))
        elif up.type == "binary_expression" and \
                text(up.child_by_field_name("operator")) in ("&&", "||") and \
                up.child_by_field_name("right") == child:
            left = up.child_by_field_name("left")
            assert left is not None
            conds.append((left, text(up.child_by_field_name("operator")) == "&&"))
        child, up = up, up.parent
    return loop, read, conds


def _in_alternative(child: Node, stmt: Node) -> bool:
    alt = stmt.child_by_field_name("alternative")
    return alt is not None and alt.start_byte <= child.start_byte and \
        child.end_byte <= alt.end_byte


def _enclosing_loop(n: Node, body: Node) -> Node | None:
    up = n.parent
    while up is not None and up != body:
        if up.type in ("for_statement", "while_statement", "do_statement"):
            return up
        up = up.parent
    return None


def _expansions(plan: Plan, expr: _Expr, loop: Node, dep: set[str], parts: list[Node],
                var: str, k: str) -> dict[str, tuple[str, Node]]:
    """The locals the window's loads (before the loop) must expand: those declared inside
    the loop or depending on the index; each single-assignment, with its declared type."""
    out: dict[str, tuple[str, Node]] = {}
    todo = [n for p in parts for n in walk(p) if n.type == "identifier"]
    while todo:
        n = todo.pop()
        name = text(n)
        if name in (var, k) or name in out:
            continue
        d = plan.facts.defs.get(name)
        if d is None:
            continue
        in_loop = loop.start_byte <= d.decl.start_byte and d.decl.end_byte <= loop.end_byte
        if not in_loop and name not in dep:
            continue
        value = expr.values.get(name)
        typ = d.decl.child_by_field_name("type")
        if value is None or typ is None or d.is_pointer:
            raise Refused(f"`{name}` (read by the windowed load) is not a plain local with "
                          "one value: the window could not read it before the loop", d.decl)
        out[name] = (" ".join(t for t in text(typ).split() if t != "const"), value)
        todo.extend(m for m in walk(value) if m.type == "identifier")
    return out


def _element_type(plan: Plan, read: Node) -> str:
    base = strip(read.child_by_field_name("argument") or read)
    name = text(base)
    if base.type == "identifier" and any(p.name == name for p in plan.kernel.params):
        return plan.kernel.param(name).base_type
    d = plan.facts.defs.get(name)
    typ = d.decl.child_by_field_name("type") if d is not None else None
    if d is None or typ is None or not d.is_pointer:
        raise Refused(f"the element type of `{text(read)}` is not known: the window would "
                      "convert it", read)
    words = [w for w in text(typ).split() if w not in ("const", "volatile", "__restrict__")]
    return " ".join(words)


def origin(slide: Slide) -> str:
    return f"{line(slide.decl)}: {text(slide.decl)[:60]}"


def grid_bound(rule: str, block: str) -> str | None:
    """``X`` of a grid rule ``ceil_div(X, block)``, else None."""
    m = re.fullmatch(r"\s*ceil_div\((.+),\s*" + re.escape(block) + r"\s*\)\s*", rule)
    return m.group(1) if m else None
