"""Output rows per thread for 2-D convolutions / 2-D window kernels, on the parse.

Recognised by roles, not by one spelling: a 2-D block of literal sizes; the output point
``x = blockIdx.x * L + threadIdx.x`` and ``y = ...`` at the top level; a bounds check that
bounds y from above only (an early return or an ``if`` around the rest); an accumulator
``T acc = init;``; a window loop ``for (i = lo; i < hi; ++i)`` (or ``<=``) with
compile-time bounds around exactly one inner loop over ``j``, whose body declares locals
and then accumulates ``acc += E`` (optionally under ``if (C)``); one store ``out[IDX] =
f(acc)`` after the loops, with ``IDX`` linear in y. ``E``'s factors are split into the
*value* (the factors that depend on y: they must depend on y and i only through ``y + i``,
checked on polynomials of the index expressions, clamps and bounds checks included) and the
*weight* (the rest: it must not depend on y). Zero padding (``if (C)`` or a ternary) and
clamped edges both qualify; the value may read several arrays (``|l - r|``: a tile of the
value holds one input's elements, so USE_SMEM stages a tile per read there instead,
:mod:`.conv_fold_tiles`).

The rewrite makes each thread compute ``OUT_Y`` consecutive output rows: the ``KS + OUT_Y
- 1`` input rows ``r`` are walked once, each input value is loaded once per ``(r, j)`` and
feeds ``acc[k] += w(i = r - k, j) * v`` for every output row ``k`` whose window holds the
row; all loops over compile-time counts are ``#pragma unroll`` so ``acc[]`` stays in
registers. Per output row the contributions arrive in the original order (i, then j), so
results match the kernel as written. A true convolution's flipped filter (the value reads
the point and a window loop only through ``y - i`` / ``x - j``, ``in[y + R - i]``; with or
without a channel loop) walks its inputs downwards instead (:func:`_walk`, :func:`_tap`), so
each output still takes its taps in the written order; USE_SMEM's tiles (filled once or
refilled per channel) still hold them upwards, the kept reads' registers in the walk's
order. The store may go through a local pointer set once into an output argument
(``float *dst = out + blockIdx.z * plane``, :func:`_output_base`). The grid's y divisor
becomes ``BLOCK_Y * OUT_Y`` (tied in the launch rule) and every output row's store is
guarded by the author's bounds check. Loads of input rows that only rows beyond the check need are skipped, so a kernel without
padding reads nothing it did not read before. Anything else refuses with the reason and the
line.

Channels: the window may sit inside, around or between one more loop (over channels or
planes: ``for (c) for (i) for (j)``, ``for (i) for (j) for (c)``, ``for (i) for (c) for
(j)``). That loop is kept as written at its depth, so each output still sums its taps in
the written order (channel by channel, never reordered across channels); its bound may be
known only at run time, and it may count down (``for (int c = hi; c >= lo; --c)``). The loops around the taps hold only declarations and the next loop
(a write there, or any other statement, is refused with its line), except that an
outermost channel loop may end in a fold of its window sum into locals (the accumulator
then may be declared in it: a best match over candidates, :mod:`.conv_fold`), run per
output on its own copy of them. USE_SMEM = 1 stages a
tile per channel before the check (compile-time count; the bytes of all of them
constrained); USE_SMEM = 2 (:mod:`.conv_refill`) refills one tile per channel where the
channel loop is outermost. The fill before the check re-declares what the value reads that
is declared after it (``int plane = blockIdx.z * H * W;`` after the early return) where it
reads no memory, calls nothing and reads no thread index (:func:`fill_blocker`). Around an outermost channel loop the reads it does not move are
kept in registers across it (:mod:`.conv_fold_keep`, OUT_X then reaches 8 where the kept
registers fit) and the loop is written twice: without the per-tap test where the thread's
last output passes the check.

Zero padding written as skips: ``if (C) continue;`` in any loop of the nest (``int yy = y + i;
if (yy < 0 || yy >= h) continue;``) skips the taps after it in that loop, so it is the
accumulation under ``!C`` (each skip a conjunct of its condition, as an ``if (C)`` around
it), where what the skip jumps over is declarations that read no memory and call nothing
(they now run for every tap), the loops below and the accumulation; ``C`` reads and writes
no memory. Anything else with a ``continue`` is refused as before. The accumulation may also be ``acc = acc + w * v`` or ``acc =
fmaf(w, v, acc)`` (kept fused); calls in the tap value must be pure or read-only
(:mod:`.conv_reads`). A dilated window (the value reads ``y + D * i`` / ``x + D * j``) is
:mod:`.conv_dilate`'s reading of the same rewrite.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import pairwise

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    factors,
    inside,
    int_value,
    line,
    shares_or_syncs,
    strip,
    subscript_index,
    text,
    walk,
    write_target,
)
from workbench.templater.conv_dilate import (
    RowWalk,
    dilation,
    fill_split,
    first_needing,
    row_accumulate,
    shifted_value,
    tap_index,
    tap_test,
)
from workbench.templater.conv_fold import (
    Fold,
    check_uses,
    enclosing_before,
    fold_text,
    per_output,
    read_fold,
    state_arrays,
)
from workbench.templater.conv_fold_keep import (
    Kept,
    fill,
    interior_split,
    kept_constraints,
    kept_note,
    kept_reads,
    live_registers,
)
from workbench.templater.conv_fold_tiles import (
    Channel,
    Tiles,
    staged_reads,
    tile_bytes,
    tile_fill,
    tile_note,
)
from workbench.templater.conv_reads import call_arguments, unmovable_call, why_unmovable
from workbench.templater.conv_refill import (
    Refill,
    live_flag,
    refill_block,
    refill_close,
    refill_refusal,
    wrapped_live,
)
from workbench.templater.macros import integer_macros, macro_texts
from workbench.templater.plan import Plan
from workbench.templater.regtile import (
    _ELEM,
    _MAX_SMEM,
    Refused,
    _assigned,
    _locals,
    apply_or_note,
    fresh_names,
    render,
    single_assignment_values,
)
from workbench.templater.rules import literal, scale_divisor
from workbench.templater.stencil import (
    Poly,
    _bounds_from_above,
    _guard,
    derivative,
    point_decls,
    poly_of,
    poly_text,
    statements,
)

OUT_Y_VALUES = [1, 2, 4, 8]
#: OUT_Y where the window has no channel loop: a thread then keeps only its OUT_Y x OUT_X
#: sums and one input row's values live, so 16 rows (16 sums, OUT_X 1) fit beside the
#: 4 x 4 and 8 x 2 tiles the same ``OUT_X * OUT_Y <= 16`` cap already admits; a 7 x 7
#: filter's expert walks 16 rows a thread (u8_filter7x7_const, set 26: its tuned ITEMS_Y).
OUT_Y_PLAIN_VALUES = [*OUT_Y_VALUES, 16]
OUT_X_VALUES = [1, 2, 4]


@dataclass(frozen=True)
class _Window:
    """A window loop ``for (int var = lo; var < lo + count; ++var)``."""

    loop: Node
    var: str
    lo_text: str
    count: int  # 0: a bound only known at run time (a channel loop kept as written)
    body: list[Node]
    downward: bool = False  # from lo + count - 1 down to lo (a channel loop only)
    #: the value reads the point and this loop only through ``y - i`` (a true convolution's
    #: flipped filter, ``in[y + R - i]``): the rewrite walks the input rows downwards so
    #: each output still takes its taps in the written order
    flipped: bool = False
    #: the value reads the point and this loop through ``y + dil * i`` (a dilated window,
    #: :mod:`.conv_dilate`): the walk covers ``dil * (count - 1) + 1`` inputs per output
    dil: int = 1

    @property
    def span(self) -> int:
        """The inputs one output's window covers along this loop."""
        return self.dil * (self.count - 1) + 1


def lift_conv(plan: Plan) -> bool:
    """OUT_Y: consecutive output rows per thread with input rows reused from registers;
    False when the kernel is not of the family or the analysis refused (the finding says
    why). A 1-D tap loop along the rows (a column filter) is :mod:`.conv_line`'s."""
    from workbench.templater.conv_line import lift_line  # it builds on this module's parts
    return _lift_window(plan) or lift_line(plan)


def _lift_window(plan: Plan) -> bool:
    # a 2-D block, or a 3-D one of depth 1 (the grid's z walks output channels or images)
    if len(plan.block) not in (2, 3) or any(literal(b) is None for b in plan.block[:2]) or \
            plan.block[2:] not in ([], ["1"]):
        return False
    if shares_or_syncs(plan.body):
        return False
    stmts = statements(plan.body)
    idx = point_decls(plan, stmts, "xy", "OUT_Y")
    if set(idx) != {"x", "y"}:
        return False
    windows = [n for s in stmts for n in walk(s) if n.type == "for_statement"]
    if not windows:
        return False
    return apply_or_note(plan, "OUT_Y", lambda: _analyse(plan, stmts, idx))


# -- compile-time integers and polynomials over the kernel's names --------------------------

def _const(raw: str, defs: dict[str, str], depth: int = 0) -> int | None:
    """The value of a constant integer expression over the file's macros (C division)."""
    try:
        tree = ast.parse(raw.strip().rstrip("uUlL"), mode="eval").body
    except SyntaxError:
        return None

    def ev(n: ast.expr) -> int | None:
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.Name) and n.id in defs and depth < 8:
            return _const(defs[n.id], defs, depth + 1)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            v = ev(n.operand)
            return None if v is None else -v
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            if a is None or b is None:
                return None
            if isinstance(n.op, ast.Add):
                return a + b
            if isinstance(n.op, ast.Sub):
                return a - b
            if isinstance(n.op, ast.Mult):
                return a * b
            if isinstance(n.op, ast.Div) and b:
                q = abs(a) // abs(b)
                return q if (a >= 0) == (b > 0) else -q
        return None
    return ev(tree)


class _Expr:
    """Expansion of single-assignment locals, dependence and polynomial checks."""

    def __init__(self, plan: Plan, keep: set[str]) -> None:
        self.locals = set(_locals(plan.body))
        self.values = single_assignment_values(plan.body, keep)

    def names(self, node: Node, depth: int = 0) -> set[str]:
        """Identifiers ``node`` reads, single-assignment locals expanded (their names too)."""
        out: set[str] = set()
        for n in walk(node):
            if n.type == "identifier":
                out.add(text(n))
                value = self.values.get(text(n))
                if value is not None and depth < 12:
                    out |= self.names(value, depth + 1)
        return out

    def poly(self, node: Node, opaque: list[Node], depth: int = 0) -> Poly:
        return poly_of(node, self.values, opaque=opaque, depth=depth)

    def via_sum(self, node: Node, y: str, i: str, sign: int = 1) -> Node | None:
        """The first part of ``node`` that depends on ``y`` or ``i`` other than through
        ``y + i`` (None when it depends on them only through their sum); ``sign`` -1: other
        than through ``y - i`` (a convolution's ``x[n - k]``)."""
        if not self.names(node) & {y, i}:
            return None
        opaque: list[Node] = []
        p = self.poly(node, opaque)
        if derivative(p, y) != {m: sign * c for m, c in derivative(p, i).items()}:
            return node
        for o in opaque:
            if o.type == "identifier":  # a local assigned more than once, or y / i hidden
                if self.names(o) & {y, i}:
                    return o
                continue
            for child in o.named_children:
                bad = self.via_sum(child, y, i, sign)
                if bad is not None:
                    return bad
        return None


# -- the analysis --------------------------------------------------------------------------

def _window(plan: Plan, loop: Node, defs: dict[str, str], *, sized: bool = True,
            downward: bool = False, most: int = 64) -> _Window:
    """The loop's parts; ``sized=False`` accepts a bound known only at run time (count 0),
    ``downward`` a loop ``for (int v = hi; v >= lo; --v)`` (lo_text: its last value);
    ``most``: the steps a compile-time window may have (its family unrolls them)."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update, body = loop.child_by_field_name("update"), loop.child_by_field_name("body")
    if init is None or cond is None or update is None or body is None or \
            init.type != "declaration" or len(init.children_by_field_name("declarator")) != 1:
        raise Refused("the window loop is not `for (int v = lo; v < hi; ++v)`", loop)
    d = init.children_by_field_name("declarator")[0]
    value = d.child_by_field_name("value")
    var = text(d.child_by_field_name("declarator"))
    parts = binary(strip(cond))
    if downward and value is not None and parts is not None and \
            text(strip(parts[0])) == var and parts[1] in (">", ">=") and \
            text(update).replace(" ", "") in (f"--{var}", f"{var}--", f"{var}-=1"):
        return _down(loop, var, (text(value), text(parts[2]), parts[1] == ">"), body, defs)
    if value is None or parts is None or text(strip(parts[0])) != var or \
            parts[1] not in ("<", "<=") or text(update).replace(" ", "") not in (
                f"++{var}", f"{var}++", f"{var}+=1"):
        raise Refused(f"the window loop over {var} is not `for (int {var} = lo; {var} < hi; "
                      f"++{var})`", loop)
    lo, hi = _const(text(value), defs), _const(text(parts[2]), defs)
    if lo is None or hi is None:
        if sized:
            raise Refused(f"the window over {var} is not a compile-time size "
                          f"(`{text(value)}` .. `{text(parts[2])}`)", loop)
        count = 0  # known at run time
    else:
        count = hi - lo + (1 if parts[1] == "<=" else 0)
        if count < 1 or count > most:
            raise Refused(f"the window over {var} has {count} steps (1 .. {most} are "
                          "unrolled)", loop)
    if var in _assigned(body):
        raise Refused(f"the window loop's {var} is assigned inside the loop", body)
    inner = statements(body) if body.type == "compound_statement" else [body]
    return _Window(loop, var, text(value), count, inner)


def _down(loop: Node, var: str, bounds: tuple[str, str, bool], body: Node,
          defs: dict[str, str]) -> _Window:
    """A channel loop counted down from ``bounds[0]`` while ``var >= bounds[1]`` (``>``
    where ``bounds[2]``): its values are lo .. lo + count - 1, visited from the top."""
    first, last, strict = bounds
    lo_text = f"({last}) + 1" if strict else last
    hi, lo = _const(first, defs), _const(last, defs)
    count = 0 if hi is None or lo is None else hi - lo - (1 if strict else 0) + 1
    if count < 0 or count > 64 or var in _assigned(body):
        raise Refused(f"the loop over {var} counted down is not `for (int {var} = hi; {var} "
                      f">= lo; --{var})` of 1 .. 64 steps, {var} not assigned in it", loop)
    inner = statements(body) if body.type == "compound_statement" else [body]
    return _Window(loop, var, lo_text, count, inner, downward=True)


def _compile_time_defs(plan: Plan) -> dict[str, str]:
    """Name -> value text of the file's object-like macros and its file-scope ``constexpr``
    integers (``constexpr int R = 2;``), and of the named constants the lift reads (a
    struct's ``static constexpr int W = 2 * R + 1;`` read as ``Taps::W``,
    :func:`~.reduce_consts.spell_members`): the names a window's bounds may be written
    with."""
    root = plan.source.tree.root_node
    defs = {name: texts[-1] for name, texts in macro_texts(root).items()}
    for n in root.children:
        if n.type != "declaration" or "constexpr" not in {text(c) for c in n.children}:
            continue
        for d in n.children_by_field_name("declarator"):
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            if value is not None:
                defs.setdefault(text(d.child_by_field_name("declarator")), text(value))
    for n in walk(plan.body):  # the named constants every transform reads (Taps::W)
        if n.type == "identifier" and (known := int_value(n)) is not None:
            defs.setdefault(text(n), str(known))
    return defs


def _declared(declarator: Node) -> str:
    """The name a declarator declares (``* p = ...`` declares ``p``)."""
    d: Node | None = declarator
    while d is not None and d.type in ("init_declarator", "pointer_declarator",
                                       "array_declarator", "reference_declarator"):
        d = d.child_by_field_name("declarator")
    return text(d) if d is not None else text(declarator)


def _pragma(stmt: Node) -> bool:
    return stmt.type == "preproc_call" and text(stmt).lstrip().startswith("#pragma")


def skip_condition(stmt: Node) -> Node | None:
    """``C`` of ``if (C) continue;`` (or ``{ continue; }``) with no else, else None."""
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
        return None
    c, cons = stmt.child_by_field_name("condition"), stmt.child_by_field_name("consequence")
    if c is not None and c.type == "condition_clause" and c.named_child_count == 1:
        c = c.named_children[0]
    inner = statements(cons) if cons is not None and cons.type == "compound_statement" \
        else [cons]
    if c is None or len(inner) != 1 or inner[0] is None or \
            inner[0].type != "continue_statement":
        return None
    return c


#: Calls a skipped declaration or a skip's condition may make (pure, no memory read).
_PURE_CALLS = ("min", "max", "abs", "fminf", "fmaxf", "umin", "umax", "llmin", "llmax")


def _impure(node: Node) -> Node | None:
    """The first part of ``node`` that reads or writes memory or calls a function other than
    a pure integer/float helper (None: pure arithmetic on locals and arguments)."""
    for n in walk(node):
        if n.type in ("subscript_expression", "assignment_expression", "update_expression",
                      "field_expression") or (
                n.type == "pointer_expression" and
                text(n.child_by_field_name("operator")) == "*"):
            return n
        if n.type == "call_expression" and \
                text(n.child_by_field_name("function")) not in _PURE_CALLS:
            return n
    return None


def _skips(nest: list[_Window]) -> tuple[Node, ...]:
    """The conditions of the nest's ``if (C) continue;`` statements, outermost first;
    refused where a skip's condition or a declaration it jumps over is not pure."""
    found: list[Node] = []
    skipping = False  # a skip jumps over the rest of its loop and the loops inside it
    for w in nest:
        for s in w.body:
            cond = skip_condition(s)
            if cond is not None:
                bad = _impure(cond)
                if bad is not None:
                    raise Refused(f"the skip `{text(s)}` reads `{text(bad)}`: a skip is "
                                  "modelled as a condition on the tap, pure arithmetic", bad)
                found.append(cond)
                skipping = True
            elif skipping and s.type == "declaration":
                bad = _impure(s)
                if bad is not None:
                    raise Refused(f"`{text(s)}` after a `continue` reads `{text(bad)}`: it "
                                  "would run for the taps the skip jumps over", bad)
    return tuple(found)


def _nest(plan: Plan, top: Node, defs: dict[str, str]) -> list[_Window] | None:
    """The loops around the taps, outermost first: a 2-D window, or a 2-D window and one
    channel loop at any depth (None: a single loop, not this family). Each loop but the
    innermost holds only declarations and the next loop."""
    nest = [_window(plan, top, defs, sized=False, downward=True)]
    while True:
        loops = [s for s in nest[-1].body if s.type == "for_statement"]
        if len(loops) != 1:
            break
        if len(nest) == 3:
            raise Refused("four loops nest around the taps: a 2-D window inside at most one "
                          "channel loop is modelled", loops[0])
        nest.append(_window(plan, loops[0], defs, sized=False, downward=True))
    if len(nest) < 2:
        return None
    for loop, next_loop in pairwise(nest):
        for s in loop.body:
            if s is next_loop.loop or s.type == "declaration" or _pragma(s) or \
                    skip_condition(s) is not None:
                continue
            if loop is nest[0] and len(nest) == 3 and s.start_byte > next_loop.loop.end_byte:
                continue  # a fold after a channel's taps (_fold checks it)
            writes = any(n.type in ("assignment_expression", "update_expression")
                         for n in walk(s))
            raise Refused(f"`{text(s)}` in the loop over {loop.var} is neither a declaration "
                          "nor the inner window loop" + (
                              ": a write there would move with the taps" if writes else "")
                          + " (only declarations and the loops around one accumulation are "
                          "modelled)", s)
    return nest


def _roles(nest: list[_Window], expr: _Expr, value_parts: list[Node], y: str, x: str,
           const: Callable[[str], int | None] = lambda _a: None
           ) -> tuple[_Window, _Window, _Window | None]:
    """(window rows, window columns, channel loop or None). The row loop is the one whose
    variable the value reads only through ``y + i``; of three loops, the channel loop is
    the remaining one that leaves the column loop reading through ``x + j`` where one
    does (outermost first), kept as written: each output still sums its taps in the
    written order, channel by channel. Where no loop reads as ``y + i``, the one read only
    through ``y - i`` is the row loop, flipped (a true convolution's filter, with or
    without a channel loop); the columns may read through ``x + j`` or ``x - j``."""
    picks: list[tuple[_Window | None, _Window, _Window]] = [(None, nest[0], nest[1])]
    if len(nest) == 3:
        picks = [(nest[0], nest[1], nest[2]), (nest[2], nest[0], nest[1]),
                 (nest[1], nest[0], nest[2]), (nest[0], nest[2], nest[1])]

    def first_bad(v: str, loop_var: str, sign: int = 1) -> Node | None:
        return next((b for part in value_parts
                     if (b := expr.via_sum(part, v, loop_var, sign)) is not None), None)

    def columns_ok(pick: tuple[_Window | None, _Window, _Window]) -> bool:
        # through x + j, or x - j (a flipped filter's columns, :func:`_columns`)
        return first_bad(x, pick[2].var) is None or first_bad(x, pick[2].var, -1) is None
    rows_ok = [pick for pick in picks if first_bad(y, pick[1].var) is None]
    # a flipped filter's rows (``y - i``): read only where no loop reads as ``y + i``
    flipped_ok = [] if rows_ok else [pick for pick in picks
                                     if first_bad(y, pick[1].var, -1) is None]
    if flipped_ok:
        channel, outer, inner = ([p for p in flipped_ok if columns_ok(p)] or flipped_ok)[0]
        outer = replace(outer, flipped=True)
        rows_ok = [(channel, outer, inner)]
    if not rows_ok:  # a dilated window, y + D * i (refused in a channel loop: _analyse)
        rows_ok = [(channel, replace(outer, dil=dil), inner) for channel, outer, inner in picks
                   if (dil := dilation(expr, value_parts, y, outer.var, const)) is not None][:1]
    both_ok = [pick for pick in rows_ok if columns_ok(pick)]
    if not rows_ok:
        _, outer, inner = picks[0]
        bad = first_bad(y, outer.var)
        assert bad is not None
        swapped = all(expr.via_sum(part, y, inner.var) is None for part in value_parts)
        raise Refused(f"`{text(bad)}` depends on {y} and {outer.var} other than through "
                      f"{y} + {outer.var}" + (f" (the row loop is the inner loop over "
                                              f"{inner.var}: only the outer loop is marched)"
                                              if swapped else ""), bad)
    channel, outer, inner = (both_ok or rows_ok)[0]
    for w in (outer, inner):
        if w.count == 0:
            raise Refused(f"the window over {w.var} is not a compile-time size", w.loop)
    return outer, inner, channel


def _check_channel(channel: _Window, expr: _Expr, point: set[str]) -> None:
    """The channel loop runs the same channels for every output of the thread: its bounds
    read neither the point nor the accumulator."""
    for field in ("initializer", "condition"):
        part = channel.loop.child_by_field_name(field)
        if part is not None and expr.names(part) & point:
            raise Refused(f"the channel loop's `{text(part)}` reads "
                          f"{', '.join(sorted(expr.names(part) & point))}: its channels "
                          "would differ between the outputs of one thread", part)


@dataclass(frozen=True)
class _Accumulate:
    acc: str
    cond: Node | None  # the ``if`` around it, or None
    value: list[Node]  # factors that depend on y
    weight: list[Node]  # the other factors
    stmt: Node
    fused: str = ""  # `acc = fmaf(w, v, acc)`: the call (the rewrite keeps it fused)
    skips: tuple[Node, ...] = ()  # conditions of `if (C) continue;` around it (taps skipped)

    def condition(self, show: Callable[[Node], str] = text) -> str:
        """The condition the tap is added under, as text ("" when always); ``show``: each
        part's text (a dilated walk's shifted point, :mod:`.conv_dilate`)."""
        parts = [f"!({show(c)})" for c in self.skips]
        parts += [f"({show(self.cond)})"] if self.cond is not None else []
        return show(self.cond) if self.cond is not None and not self.skips else \
            " && ".join(parts)


def _accumulation(stmt: Node, expr: _Expr, y: str) -> _Accumulate:
    cond: Node | None = None
    inner = stmt
    if stmt.type == "if_statement" and stmt.child_by_field_name("alternative") is None:
        c = stmt.child_by_field_name("condition")
        cons = stmt.child_by_field_name("consequence")
        if c is not None and c.type == "condition_clause" and c.named_child_count == 1:
            c = c.named_children[0]
        body = statements(cons) if cons is not None and cons.type == "compound_statement" \
            else [cons]
        if c is not None and len(body) == 1 and body[0] is not None:
            cond, inner = c, body[0]
    e = strip(inner.named_children[0]) if inner.type == "expression_statement" and \
        inner.named_child_count == 1 else None
    raw = e.child_by_field_name("left") if e is not None and \
        e.type == "assignment_expression" else None
    left = strip(raw) if raw is not None else None
    right = e.child_by_field_name("right") if e is not None else None
    if e is None or left is None or left.type != "identifier" or right is None:
        raise Refused(f"`{text(stmt)}` is not the accumulation `acc += w * v` (optionally "
                      "under an `if`)", stmt)
    acc, op = text(left), text(e.child_by_field_name("operator"))
    term = strip(right) if op == "+=" else _addend(strip(right), acc) if op == "=" else None
    if term is not None:
        fs = factors(term)
        value = [f for f in fs if y in expr.names(f)]
        return _Accumulate(acc, cond, value, [f for f in fs if f not in value], stmt)
    fused = _fused(strip(right), acc) if op == "=" else None
    if fused is None:
        raise Refused(f"`{text(stmt)}` is not the accumulation `acc += w * v`, `acc = acc + "
                      "w * v` or `acc = fmaf(w, v, acc)` (optionally under an `if`)", stmt)
    callee, a, b = fused
    # the value is the one argument that depends on the point; the product stays fused
    value = [arg for arg in (a, b) if y in expr.names(arg)]
    if len(value) > 1:
        raise Refused(f"both factors of `{text(right)}` depend on {y}: one value times a "
                      "weight is modelled", right)
    return _Accumulate(acc, cond, value, [arg for arg in (a, b) if arg not in value], stmt,
                       callee)


#: Fused multiply-adds an accumulation may be written with (``acc = fmaf(w, v, acc)``).
_FMA = ("fmaf", "fma", "__fmaf_rn", "__fma_rn")


def _addend(right: Node, acc: str) -> Node | None:
    """``E`` of ``acc = acc + E`` or ``acc = E + acc`` (one rounding, as ``acc += E``)."""
    parts = binary(right)
    if parts is None or parts[1] != "+":
        return None
    for mine, other in ((parts[0], parts[2]), (parts[2], parts[0])):
        if text(strip(mine)) == acc:
            return strip(other)
    return None


def _fused(right: Node, acc: str) -> tuple[str, Node, Node] | None:
    """(callee, a, b) of ``fmaf(a, b, acc)``."""
    if right.type != "call_expression":
        return None
    callee = text(right.child_by_field_name("function"))
    args_node = right.child_by_field_name("arguments")
    args = [a for a in args_node.named_children if a.type != "comment"] \
        if args_node is not None else []
    if callee not in _FMA or len(args) != 3 or text(strip(args[2])) != acc:
        return None
    return callee, strip(args[0]), strip(args[1])


def _analyse(plan: Plan, stmts: list[Node], idx: dict[str, tuple[Node, str, Node]]
             ) -> Callable[[], None] | None:
    ydecl, y, _ysize = idx["y"]
    x = idx["x"][1]
    ky = stmts.index(ydecl)
    region = stmts[ky + 1:]
    loops = [s for s in region if s.type == "for_statement"]
    guard_if = [s for s in region if s.type == "if_statement"]
    if not loops and guard_if:
        cons = guard_if[-1].child_by_field_name("consequence")
        loops = [s for s in (statements(cons) if cons is not None and
                             cons.type == "compound_statement" else [])
                 if s.type == "for_statement"]
    if len(loops) != 1:
        return None  # not one window loop at the point's top level: not this family
    defs = _compile_time_defs(plan)
    nest = _nest(plan, loops[0], defs)
    if nest is None:
        return None
    keep = {x, y, *(w.var for w in nest)}
    expr = _Expr(plan, keep)
    body_decls = [s for s in nest[-1].body if s.type == "declaration"]
    rest = [s for s in nest[-1].body if s.type != "declaration" and skip_condition(s) is None]
    if len(rest) != 1 or nest[-1].body[-1] is not rest[0]:
        raise Refused("the innermost loop's body is not declarations followed by one "
                      "accumulation", rest[1] if len(rest) > 1 else nest[-1].loop)
    acc = _accumulation(rest[0], expr, y)
    acc = replace(acc, skips=_skips(nest))
    if not acc.value:
        raise Refused(f"the accumulation `{text(rest[0])}` reads nothing that depends on {y}",
                      rest[0])
    value_parts = [*acc.value, *([acc.cond] if acc.cond is not None else []), *acc.skips]
    const = _constant(defs)
    outer, inner, channel = _roles(nest, expr, value_parts, y, x, const)
    nest = [outer if w.loop is outer.loop else w for w in nest]
    for w in (outer, inner):
        if w.downward:
            raise Refused(f"the window loop over {w.var} counts down: the window's rows and "
                          "columns are walked upwards (a channel loop may count down)", w.loop)
    j = inner.var
    if outer.dil > 1:
        dilated_refusal(f"{y} + {outer.dil} * {outer.var}", channel, outer.flipped, outer.loop)
    if channel is not None:
        _check_channel(channel, expr, {x, y, acc.acc})
    for f in acc.weight:
        if y in expr.names(f) or acc.acc in expr.names(f):
            raise Refused(f"the weight `{text(f)}` depends on {y}", f)
    nest_decls = [s for w in nest for s in w.body if s.type == "declaration"]
    loop_locals = {_declared(d) for s in nest_decls
                   for d in s.children_by_field_name("declarator")}
    for part in [*value_parts, *acc.weight, *nest_decls]:
        call = unmovable_call(plan.source, part)
        if call is not None:
            raise Refused(why_unmovable(plan.source, call), call)
    for part in [*value_parts, *acc.weight]:
        for name in expr.names(part):
            if name in expr.locals and name not in expr.values and name not in keep:
                raise Refused(f"`{name}` (read by `{text(part)}`) is assigned more than once",
                              part)
            if name == acc.acc:
                raise Refused(f"`{text(part)}` reads the accumulator", part)
    arrays = {a for part in acc.value for a in _read_bases(plan, part)}
    for name in list(arrays):
        value = expr.values.get(name)
        if value is not None:  # a local holding a read (`float v = in[...]`) or a pointer
            arrays.discard(name)  # into an input (`const float* plane = in + c * h * w`)
            arrays |= _read_bases(plan, value) | {n for n in expr.names(value)
                                                  if plan.pointer(n)}
    for name in [n for part in acc.value for n in expr.names(part) if n in expr.values]:
        arrays |= _read_bases(plan, expr.values[name]) | {
            m for arg in call_arguments(plan.source, expr.values[name])
            for m in expr.names(arg) if plan.pointer(m)}  # `int a = pixel(img, ..);`
    # pointers handed to a read-only helper (`pixel_or_zero(plane, ...)`) are what it reads
    arrays |= {n for part in acc.value for arg in call_arguments(plan.source, part)
               for n in expr.names(arg) if plan.pointer(n)}
    inputs = sorted(a for a in arrays if plan.pointer(a))
    if not inputs:
        raise Refused("the value read per window point reads no input", rest[0])
    src = inputs[0]
    fold = _fold(nest, channel, acc.acc, expr, {x, y, outer.var, inner.var} |
                 (loop_locals - {acc.acc}))
    # writes: only the accumulator and the window loops' own locals inside the loop
    top = nest[0].loop
    for n in walk(top):
        if fold is not None and any(inside(n, s) for s in fold.stmts):
            continue  # read_fold checked it
        if n.type in ("assignment_expression", "update_expression"):
            t = write_target(n) or n
            if t.type != "identifier" or text(t) not in {acc.acc, *(w.var for w in nest)}:
                where = f"the channel loop over {channel.var}" if channel is not None \
                    else "the window loop"
                raise Refused(f"`{text(n)}` writes inside {where}", n)
            if text(t) == acc.acc and n.parent is not None and \
                    strip(n.parent) is not acc.stmt and n.parent is not acc.stmt and \
                    not inside(n, acc.stmt):
                raise Refused(f"`{text(n)}` writes the accumulator a second time", n)
        if n.type in ("return_statement", "break_statement", "continue_statement",
                      "goto_statement") and not (
                n.parent is not None and skip_condition(n.parent) is not None) and not (
                n.parent is not None and n.parent.parent is not None and
                skip_condition(n.parent.parent) is not None):
            raise Refused(f"`{text(n)}` leaves the loop nest early", n)
    # the guard, the accumulator's declaration and the store
    guard_stmt, cond, out_when_true, guarded = _guard(region)
    bad_cond = _bounds_from_above(cond, y, out_when_true)
    if bad_cond is not None:
        raise Refused(f"`{text(bad_cond)}` does not bound {y} from above only", bad_cond)
    for n in walk(cond):
        if n.type == "identifier" and text(n) in expr.values and y in expr.names(n):
            raise Refused(f"the bounds check reads `{text(n)}`, which depends on {y}", n)
    if top not in guarded:
        raise Refused("the window loop is not inside the bounds check", top)
    for n in (m for s in guarded[:guarded.index(top)] for m in walk(s)):
        if n.type in ("return_statement", "goto_statement"):
            # a second check the first one's outputs do not pass: OUT_Y's rows past the
            # thread's first would be stored unread by it (inline_exits joins adjacent ones)
            raise Refused(f"`{text(n.parent or n)}` leaves after the bounds check "
                          f"`{text(guard_stmt)}`: the check is read from one statement", n)
    decl = _acc_decl(region + guarded, acc.acc) or \
        (_acc_decl(nest[0].body, acc.acc) if fold is not None else None)
    if decl is None:
        raise Refused(f"no `T {acc.acc} = init;` declares the accumulator before the loop",
                      outer.loop)
    after = guarded[guarded.index(top) + 1:]
    if len(after) != 1:
        raise Refused("the window loop is not followed by exactly one store", top)
    store_stmt = after[0]
    if fold is not None:
        check_uses(plan.body, fold, store_stmt)
    target, rhs, out, step, init = checked_store(plan, expr, store_stmt, decl, src, (x, y),
                                                 frozenset(inputs[1:]))
    if out in inputs:
        raise Refused(f"the store writes {out}, which the taps read", store_stmt)
    grid_y = scale_divisor(plan.grid[1], plan.block[1], "BLOCK_Y * OUT_Y")
    grid_x = scale_divisor(plan.grid[0], plan.block[0], "BLOCK_X")
    if grid_y is None or grid_x is None:
        raise Refused(f"the grid {plan.grid} does not divide by the block {plan.block}", ydecl)
    # the tap value's type: the input's element, or as the expression gives it (several)
    elem = plan.kernel.param(src).base_type if len(inputs) == 1 else ""
    x_step, x_refused, x_flipped = _columns(expr, x, j, value_parts, acc.weight, cond,
                                            out_when_true, target, rhs, init)
    x_dil = dilation(expr, value_parts, x, j, const) if x_refused is not None else None
    if x_dil is not None:  # x + D * j: the other conditions as for x + j
        x_step, x_refused, _flip = _columns(expr, x, j, [], acc.weight, cond, out_when_true,
                                            target, rhs, init)
        if x_refused is None:
            inner = replace(inner, dil=x_dil)
            nest = [inner if w.loop is inner.loop else w for w in nest]
    if outer.dil > 1 or inner.dil > 1:
        dilated_refusal(f"{y} + {outer.dil} * {outer.var}" if outer.dil > 1 else
                        f"{x} + {inner.dil} * {j}", channel,
                        outer.flipped or inner.flipped, outer.loop)
    if x_flipped:
        inner = replace(inner, flipped=True)
        nest = [inner if w.loop is inner.loop else w for w in nest]
    if x_refused is not None:
        plan.note("OUT_X", False, x_refused.reason, x_refused.node)
    # a tile is filled for the block's first point: a local the thread derived from its
    # own point before the nest would hold the wrong value there
    own = sorted(n for n in {m for part in [*value_parts, *nest_decls] for m in expr.names(part)}
                 if n in expr.values and n not in loop_locals and n not in (x, y) and
                 expr.names(expr.values[n]) & {x, y})
    refill = None
    staged = _staged_refusal(inputs, fold)
    if staged:
        pass  # a tile per read is tried below, once the facts are read
    elif channel is not None:
        why = refill_refusal(plan.source, guarded[:guarded.index(top)],
                             channel is nest[0], own)
        if why is None:
            refill = Refill(guard_stmt, wraps=not out_when_true)
        else:
            plan.note("USE_SMEM=2", False, f"one shared tile refilled per channel: {why}",
                      channel.loop)
    smem = None if staged else \
        _smem_refusal(plan, expr, guard_stmt, nest, channel, value_parts, own)
    facts = _Facts(y, outer, inner, acc, loop_locals, body_decls, elem, decl, init,
                   store_stmt, target, rhs, step, cond, out_when_true, src, out,
                   x, x_step if x_refused is None else None,
                   smem[0] if smem is not None else None,
                   tuple(nest), channel, refill, fold, tuple(inputs))
    facts = replace(facts, fill_decls=_value_decls(expr, nest, value_parts)[1],
                    fill_late=smem[1] if smem is not None else ())
    if outer.dil > 1 or inner.dil > 1:  # the value expands what reads the shifted point
        shifted = {p for w, p in ((outer, y), (inner, x)) if w.dil > 1}
        facts = replace(facts, fill_decls=tuple(d for d in facts.fill_decls
                                                if not expr.names(d) & shifted),
                        shifted=tuple(d for d in nest_decls if expr.names(d) & shifted))
    if staged and (outer.flipped or inner.flipped):
        plan.note("USE_SMEM", False, f"{staged}; a tile per read walks the window upwards: "
                  "a flipped filter is modelled with one tile of the tap value", outer.loop)
    elif staged and (outer.dil > 1 or inner.dil > 1):
        plan.note("USE_SMEM", False, f"{staged}; a tile per read is modelled for a window "
                  "read without dilation", outer.loop)
    elif staged:
        facts = replace(facts, staged=_tiles(plan, expr, facts, guard_stmt, staged, own))
    if channel is nest[0] and facts.smem_at is None and refill is None:
        try:
            facts = replace(facts, keep=kept_reads(
                plan, expr.names, (channel.var, inner.var), (channel.body, outer.body,
                                                             inner.body),
                acc.value, [*([acc.cond] if acc.cond is not None else []), *acc.skips]))
        except Refused as why:
            plan.note("KEPT_READS", False, why.reason, why.node)
    if x_refused is None:
        grid_x = scale_divisor(plan.grid[0], plan.block[0], "BLOCK_X * OUT_X") or grid_x

    def emit() -> None:
        _emit(plan, idx, facts, expr, grid_x, grid_y)
    return emit


def _constant(defs: dict[str, str]) -> Callable[[str], int | None]:
    """A name's compile-time integer value over ``defs`` (None: not one)."""
    return lambda name: _const(defs[name], defs) if name in defs else None


def dilated_refusal(what: str, channel: _Window | None, flipped: bool, node: Node) -> None:
    """A dilated window (:mod:`.conv_dilate`) is rewritten without a channel loop or a
    flipped filter; Refused where one is there."""
    why = ("a channel loop around it" if channel is not None else
           "a flipped filter" if flipped else "")
    if why:
        raise Refused(f"the window reads {what} (dilated): modelled without {why}", node)


def _fold(nest: list[_Window], channel: _Window | None, acc: str, expr: _Expr,
          point: set[str]) -> Fold | None:
    """The statements after the taps in the outermost loop, read as a fold of each
    channel's window sum (:mod:`.conv_fold`); None where there are none."""
    after = [s for s in nest[0].body if s.start_byte > nest[1].loop.end_byte]
    if not after:
        return None
    if channel is not nest[0]:
        raise Refused(f"`{text(after[0])}` after the window in the loop over {nest[0].var}: "
                      "a fold is modelled in a channel loop around the window only", after[0])
    return read_fold(after, acc, enclosing_before(nest[0].loop), lambda n: expr.names(n) & point,
                     _PURE_CALLS)


def _staged_refusal(inputs: list[str], fold: Fold | None) -> str:
    """Why no USE_SMEM tile is offered ("" where one may be): a tile holds one input's
    elements, and a fold's channels are staged one after another."""
    if len(inputs) > 1:
        return (f"the tap value reads {', '.join(inputs)}: a tile stages one input's "
                "elements")
    if fold is not None:
        return ("a fold after the taps: the tiles' fill and refill are modelled for an "
                "accumulation only")
    return ""


def _columns(expr: _Expr, x: str, j: str, value_parts: list[Node], weights: list[Node],
             cond: Node, out_when_true: bool, target: Node, rhs: Node, init: Node
             ) -> tuple[Poly, Refused | None, bool]:
    """OUT_X's conditions (the x / j mirror of OUT_Y's): the value reads x and j only
    through x + j (or only through x - j: flipped), the weights and the stored value not at
    all, the check bounds x from above, the store's index is linear in x. (the index's x
    step, why not, flipped) ."""
    bad = next((b for part in value_parts if (b := expr.via_sum(part, x, j)) is not None),
               None)
    flipped = bad is not None and all(expr.via_sum(part, x, j, -1) is None
                                      for part in value_parts)
    if bad is not None and not flipped:
        return {}, Refused(f"`{text(bad)}` depends on {x} and {j} other than through "
                           f"{x} + {j}", bad), False
    for f in [*weights, rhs, init]:
        if x in expr.names(f):
            return {}, Refused(f"`{text(f)}` depends on {x}", f), False
    bad_cond = _bounds_from_above(cond, x, out_when_true)
    if bad_cond is not None:
        return {}, Refused(f"`{text(bad_cond)}` does not bound {x} from above only",
                           bad_cond), False
    for n in walk(cond):
        if n.type == "identifier" and text(n) in expr.values and x in expr.names(n):
            return {}, Refused(f"the bounds check reads `{text(n)}`, which depends on {x}",
                               n), False
    opaque: list[Node] = []
    step = derivative(expr.poly(subscript_index(target), opaque), x)
    if not step or any(x in m for m in step) or any(x in expr.names(o) for o in opaque):
        return {}, Refused(f"the index of the store is not linear in {x}", target), False
    return step, None, flipped


def _value_decls(expr: _Expr, nest: list[_Window] | tuple[_Window, ...],
                 value_parts: list[Node]) -> tuple[set[str], tuple[Node, ...]]:
    """(the names the tap value reads, the loops' declarations it needs): a declaration
    counts where it declares a name the value, or a declaration it needs, reads; the rest
    (a weight's local, ``const float w = *tap++;`` read as ``tap[idx]``) stay in the taps,
    after the check, and USE_SMEM's fill leaves them out."""
    nest_decls = [s for w in nest for s in w.body if s.type == "declaration"]
    used = {n for part in value_parts for n in expr.names(part)}
    needed: list[Node] = []
    pending = list(nest_decls)
    while feeds := [d for d in pending if {_declared(c) for c in
                                           d.children_by_field_name("declarator")} & used]:
        pending = [d for d in pending if d not in feeds]
        needed += feeds
        used |= {n for d in feeds for n in expr.names(d)}
    return used, tuple(d for d in nest_decls if d in needed)


def _smem_refusal(plan: Plan, expr: _Expr, guard: Node, nest: list[_Window],
                  channel: _Window | None, value_parts: list[Node], own: list[str]
                  ) -> tuple[Node, tuple[Node, ...]] | None:
    """Where the USE_SMEM tile fill goes (before the bounds check, so every thread of the
    block helps and reaches the barrier) and the declarations after that point the value
    reads, which the fill re-declares; None, noted, where such a declaration reads memory,
    calls or reads the thread index (:func:`fill_blocker`), the value reads a local derived
    from the thread's own point, or a channel loop's count is known only at run time (a
    tile per channel is staged)."""
    if own:
        plan.note("USE_SMEM", False, f"the value reads {', '.join(own)}, derived from the "
                  "thread's own point before the loops: the tile is filled for the block's "
                  "first point", guard)
        return None
    if channel is not None and channel.count == 0:
        plan.note("USE_SMEM", False, f"the channel loop over {channel.var} has a bound known "
                  "only at run time: a shared tile per channel needs a compile-time count",
                  channel.loop)
        return None
    used, _ = _value_decls(expr, nest, value_parts)  # what the tile holds needs
    late = [d for d in walk(plan.body) if d.type == "declaration" and
            d.start_byte >= guard.start_byte and not inside(d, nest[0].loop) and
            {_declared(c) for c in d.children_by_field_name("declarator")} & used]
    # the plane's offset declared after the check: re-declared in the fill where it is
    # the same for every thread of the block (arguments, block indices, constants)
    blocked = [(d, bad) for d in late if (bad := fill_blocker(d)) is not None]
    if blocked:
        names = sorted({_declared(c) for d, _ in blocked
                        for c in d.children_by_field_name("declarator")} & used)
        plan.note("USE_SMEM", False, f"the value reads {', '.join(names)}, declared after "
                  f"the bounds check where the tile would be filled, and `{text(blocked[0][1])}` "
                  "(a read, a call or the thread index) cannot run in the block's fill",
                  blocked[0][0])
        return None
    return guard, tuple(late)


def fill_blocker(decl: Node) -> Node | None:
    """The first part of ``decl`` a block's cooperative fill cannot re-run as written: a
    read of memory, a call or the thread index (None: values of arguments, block indices
    and constants, the same for every thread of the block)."""
    return next((n for n in walk(decl)
                 if n.type in ("call_expression", "subscript_expression", "pointer_expression")
                 or builtin(n, "threadIdx") is not None), None)


def _read_bases(plan: Plan, node: Node) -> set[str]:
    """Arrays ``node`` reads: ``a[i]`` bases and the pointer arguments under ``*(p + i)``."""
    out = set()
    for n in walk(node):
        if n.type == "subscript_expression":
            out.add(text(strip(n.child_by_field_name("argument"))))  # type: ignore[arg-type]
        elif n.type == "pointer_expression" and \
                text(n.child_by_field_name("operator")) == "*":
            out |= {text(m) for m in walk(n) if m.type == "identifier" and plan.pointer(text(m))}
    return out


def _acc_decl(stmts: list[Node], acc: str) -> Node | None:
    for s in stmts:
        if s.type != "declaration":
            continue
        ds = s.children_by_field_name("declarator")
        for d in ds:
            if d.type == "init_declarator" and text(d.child_by_field_name("declarator")) == acc:
                if len(ds) != 1:
                    raise Refused(f"`{text(s)}` declares the accumulator with other variables",
                                  s)
                return s
    return None


def checked_store(plan: Plan, expr: _Expr, store_stmt: Node, decl: Node, src: str,
                  point: tuple[str, str], also: frozenset[str] = frozenset(),
                  ) -> tuple[Node, Node, str, Poly, Node]:
    """The window's one store ``out[i] = f(acc)`` after its taps, checked: the output is a
    pointer other than the input ``src``; the stored value reads neither the row ``y`` (of
    ``point = (x, y)``), the input nor ``also`` besides the accumulator; the kernel stores
    nothing else; the index moves linearly in ``y``; the accumulator (declared by ``decl``)
    starts from a value that does not depend on the point. Returns (target, value, output
    name, the index's step in ``y``, the accumulator's initial value); refuses with the
    line otherwise."""
    x, y = point
    store = _store(store_stmt)
    if store is None:
        raise Refused(f"`{text(store_stmt)}` is not the store `out[i] = f(acc)`", store_stmt)
    target, rhs = store
    out = text(strip(target.child_by_field_name("argument")))  # type: ignore[arg-type]
    base = _output_base(plan, expr, out, point)
    if base is None or base in {src} | also:
        raise Refused(f"the store writes {out}: the output must be a pointer other than "
                      f"the input {src}" + (
                          f" (it points into {base})" if base not in (None, out) else ""),
                      store_stmt)
    if expr.names(rhs) & ({y, src} | also):
        raise Refused(f"the stored value `{text(rhs)}` depends on {y} besides the accumulator",
                      rhs)
    writes = [n for n in walk(plan.body) if n.type in ("assignment_expression",
                                                       "update_expression")
              and strip(n.child_by_field_name("left") or n.child_by_field_name("argument")
                        or n).type == "subscript_expression"]
    if len(writes) != 1:
        raise Refused("the kernel stores to memory more than once", writes[-1] if writes
                      else store_stmt)
    opaque: list[Node] = []
    step = derivative(expr.poly(subscript_index(target), opaque), y)
    if not step or any(y in m for m in step) or any(y in expr.names(o) for o in opaque):
        raise Refused(f"the index of {out} is not linear in {y}", target)
    init = decl.children_by_field_name("declarator")[0].child_by_field_name("value")
    assert init is not None
    if expr.names(init) & {x, y}:
        raise Refused(f"the accumulator's initial value `{text(init)}` depends on the point",
                      init)
    return target, rhs, out, step, init


def _output_base(plan: Plan, expr: _Expr, out: str, point: tuple[str, str]) -> str | None:
    """The pointer argument the store writes through: ``out`` itself, or the one pointer
    argument a local pointer set once reads (``float *dst = out + blockIdx.z * plane``),
    its value reading neither the point nor the block's or thread's x / y (the store's
    index alone moves with them); None otherwise."""
    if plan.pointer(out):
        return out
    value = expr.values.get(out)
    if value is None or out not in expr.locals or expr.names(value) & set(point):
        return None
    spelled = [text(value), *(text(expr.values[n]) for n in expr.names(value)
                              if n in expr.values)]
    if any(re.search(r"\b(threadIdx|blockIdx)\s*\.\s*[xy]\b", t) for t in spelled):
        return None  # it moves with the block's or the thread's point: OUT_Y moves those
    bases = {n for n in expr.names(value) if plan.pointer(n)}
    return bases.pop() if len(bases) == 1 else None


def _store(stmt: Node) -> tuple[Node, Node] | None:
    if stmt.type != "expression_statement" or stmt.named_child_count != 1:
        return None
    e = strip(stmt.named_children[0])
    if e.type != "assignment_expression" or text(e.child_by_field_name("operator")) != "=":
        return None
    left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
    if left is None or right is None or strip(left).type != "subscript_expression":
        return None
    return strip(left), right


@dataclass(frozen=True)
class _Facts:
    y: str
    outer: _Window
    inner: _Window
    acc: _Accumulate
    loop_locals: set[str]
    body_decls: list[Node]
    elem: str
    decl: Node
    init: Node
    store_stmt: Node
    target: Node
    rhs: Node
    step: Poly
    cond: Node
    out_when_true: bool
    src: str
    out: str
    x: str = ""
    x_step: Poly | None = None  # the store index's step per column; None: no OUT_X
    smem_at: Node | None = None  # where the shared tile is filled (USE_SMEM); None: no knob
    nest: tuple[_Window, ...] = ()  # the loops around the taps, outermost first
    channel: _Window | None = None  # the channel loop among them, kept as written
    refill: Refill | None = None  # USE_SMEM = 2 (one tile refilled per channel) offered
    fold: Fold | None = None  # what the channel loop does with each channel's window sum
    reads: tuple[str, ...] = ()  # the inputs the tap value reads
    keep: Kept | None = None  # reads the same for every channel, kept in registers
    staged: tuple[Tiles, Node] | None = None  # a shared tile per read, filled before the node
    fill_decls: tuple[Node, ...] = ()  # the loops' declarations USE_SMEM's fill runs
    #: declarations after the bounds check the value reads (the plane's offset), the same
    #: for the block's threads: USE_SMEM's fill re-declares them
    fill_late: tuple[Node, ...] = ()
    #: a dilated window's loop declarations that read a shifted point: the value reads them
    #: expanded (:func:`.conv_dilate.shifted_value`), the walk leaves them out
    shifted: tuple[Node, ...] = ()

    @property
    def tap_value(self) -> str:
        """The value one window point reads, in a note's words."""
        return f"{self.src}'s value" if len(self.reads) < 2 else \
            f"the tap value (of {', '.join(self.reads)})"


def _decls(w: _Window, acc_decl: tuple[Node, str] | None = None,
           show: Callable[[Node], str] = text) -> str:
    """The loop's declarations as written (``show``: a declaration's text, kept reads read
    from their registers); ``acc_decl``: (the accumulator's declaration, the text it
    becomes) where the loop declares it."""
    shown = (acc_decl[1] if acc_decl is not None and s is acc_decl[0] else show(s)
             for s in w.body if s.type == "declaration")
    return "\n    ".join(t for t in shown if t)  # "": a declaration left out


def _dilated(w: _Window) -> str:
    """``D * `` in a note's words where the window is dilated ("" else)."""
    return f"{w.dil} * " if w.dil > 1 else ""


def _dilated_walk(w: _Window, what: str) -> str:
    """How a dilated walk feeds the outputs, in a note's words ("" where not dilated)."""
    return (f" (dilation {w.dil}: input {what} s past the first output's feeds output k "
            f"through tap (s - k) / {w.dil} where whole, each output's taps in the written "
            "order)") if w.dil > 1 else ""


def _walk(w: _Window, step: str, outs: str) -> str:
    """The window index of output 0 at the walk's ``step``: the input rows (columns) are
    walked in the order each output takes its taps, upwards, or downwards where the
    filter is flipped (``y - i``: step s is tap ``s - (outs - 1)`` of output 0, tap ``s -
    (outs - 1) + k`` of output k)."""
    return f"({w.lo_text}) + {step} - ({outs} - 1)" if w.flipped else \
        f"({w.lo_text}) + {step}"


def _walk_note(w: _Window, what: str) -> str:
    return f"window {what} of output {what} 0" + (
        " (flipped: the inputs walked downwards, each output's taps in the written order)"
        if w.flipped else "")


def _first(w: _Window, step: str, outs: str) -> str:
    """The first output that needs the input at the walk's ``step``."""
    return f"{step} < {outs} - 1 ? {outs} - 1 - {step} : 0" if w.flipped else \
        f"{step} > {w.count - 1} ? {step} - {w.count - 1} : 0"


def _tap(w: _Window, step: str, out: str, outs: str) -> str:
    """Output ``out``'s tap (0 .. count - 1) at the walk's ``step``."""
    return f"({step} + {out} - ({outs} - 1))" if w.flipped else f"{step} - {out}"


def _opener(data: bytes, f: _Facts, w: _Window, oy: str, ox: str, refill: str = "",
            acc_decl: tuple[Node, str] | None = None, show: Callable[[Node], str] = text
            ) -> str:
    """The head of one loop of the rewritten nest: the window rows walk the OUT_Y + n - 1
    input rows, the window columns the OUT_X + m - 1 input columns, and a channel loop is
    kept as written, each with its declarations, in the written order."""
    n, m = f.outer.count, f.inner.count
    if w.dil > 1 and w in (f.outer, f.inner):  # a dilated window (:mod:`.conv_dilate`)
        r, first, outs, pad = ("wb_r", "wb_first", oy, "  ") if w is f.outer else \
            ("wb_c", "wb_first_c", ox, "    ")
        return (f"#pragma unroll\n{pad}for (int {r} = 0; {r} < {w.span} + {outs} - 1; "
                f"++{r}) {{\n"
                f"{pad}  const int {w.var} = ({w.lo_text}) + {r} / {w.dil};  // the window "
                f"index at input {r} % {w.dil} past output 0's point (dilation {w.dil})\n"
                f"{pad}  // the first output that needs this input (none of this thread's: "
                f"not read)\n"
                f"{pad}  const int {first} = {first_needing(r, w.dil, w.count)};\n"
                f"{pad}  if ({first} >= {outs}) continue;\n"
                f"{pad}  {_decls(w, show=show)}\n")
    if w is f.outer:
        return (f"#pragma unroll\n  for (int wb_r = 0; wb_r < {n} + {oy} - 1; ++wb_r) {{\n"
                f"    const int {w.var} = {_walk(w, 'wb_r', oy)};  // {_walk_note(w, 'row')}\n"
                f"    {_decls(w, show=show)}\n"
                f"    // the first output row / column that needs this input (past the check: "
                f"no read)\n"
                f"    const int wb_first = {_first(w, 'wb_r', oy)};\n")
    if w is f.inner:
        return (f"#pragma unroll\n    for (int wb_c = 0; wb_c < {m} + {ox} - 1; ++wb_c) {{\n"
                f"      const int {w.var} = {_walk(w, 'wb_c', ox)};  "
                f"// {_walk_note(w, 'column')}\n"
                f"      const int wb_first_c = {_first(w, 'wb_c', ox)};\n"
                f"      {_decls(w, show=show)}\n")
    body = w.loop.child_by_field_name("body")
    assert body is not None
    head = data[w.loop.start_byte:body.start_byte].decode().rstrip()
    return (f"  {head} {{  // the channels in the written order\n{refill}    "
            f"{_decls(w, acc_decl)}\n")


def _row_first(f: _Facts, show: Callable[[Node], str]) -> bool:
    """A window whose columns are dilated (no channel loop, fold or kept reads, one
    element type, no declarations in the column loop) is walked a row at a time
    (:func:`.conv_dilate.row_accumulate`): the row's values first, then each output row
    whose tap row it is, its taps by index. nvcc then unrolls the walk at every OUT_Y x
    OUT_X (a tap test per output inside the column walk leaves the row walk too large to
    unroll from 16 rows on, its tap reads and tests at run time)."""
    return f.inner.dil > 1 and not f.inner.flipped and f.nest == (f.outer, f.inner) and \
        f.fold is None and f.keep is None and f.refill is None and bool(f.elem) and \
        not _decls(f.inner, show=show).strip()


def _smem_param(plan: Plan, f: _Facts, smem: str, modes: list[int],
                tile: tuple[str, str]) -> None:
    """USE_SMEM's values (0: as written; 1: tiles staged before the check; 2: one tile
    refilled per channel), the shared bytes each needs, and the findings."""
    (tile_h, tile_w), ch = tile, f.channel
    what = {1: "1: the block's inputs with the window's halo staged in shared memory once "
               "(zeros / clamps as written)",
            2: "2: one shared tile, refilled for each channel"}
    plan.add_param(smem, {"kind": "choice", "values": [0, *modes], "default": 0,
                          "description": "; ".join(what[k] for k in modes) +
                          "; 0: read per thread (as written)"},
                   f"{line(f.outer.loop)}: {text(f.outer.loop).splitlines()[0]}")
    elem_bytes = _ELEM.get(f.elem, 8)
    if 1 in modes:
        planes = f"{ch.count} * " if ch is not None else ""
        off = f"{smem} == 0" if modes == [1] else f"{smem} != 1"
        plan.constrain(f"{off} or {elem_bytes} * {planes}{tile_h} * {tile_w} <= {_MAX_SMEM}")
        per = f", a tile per channel ({ch.count}: the loop over {ch.var})" \
            if ch is not None else ""
        apron = f" (the dilated apron: dilation {f.outer.dil} x {f.inner.dil})" \
            if f.outer.dil > 1 or f.inner.dil > 1 else ""
        plan.note("USE_SMEM", True, f"{f.src}'s values for the block's {tile_h} x {tile_w} "
                  f"window inputs{apron}{per} staged in shared memory before the bounds check; each "
                  "thread reads them from the tile", f.outer.loop)
    if 2 in modes:
        assert ch is not None
        plan.constrain(f"{smem} != 2 or {elem_bytes} * {tile_h} * {tile_w} <= {_MAX_SMEM}")
        plan.note("USE_SMEM=2", True, f"one {tile_h} x {tile_w} shared tile refilled by the "
                  f"block for each channel of the loop over {ch.var} (barriers around the "
                  "fill; the early return becomes a flag, so every thread reaches them)",
                  ch.loop)


def _tile_rows(f: _Facts) -> dict[str, str]:
    """The window rows' and columns' indices at tile row ``wb_pr`` and column ``wb_pc``:
    tile row (column) p holds the p-th input row upwards, a flipped window's index there
    counted from its last tap."""
    return {w.var: f"{w.count - 1} - {p}" if w.flipped else fill_split(p, "/", w.dil)
            if w.dil > 1 else p for w, p in ((f.outer, "wb_pr"), (f.inner, "wb_pc"))}


def _refill_body(f: _Facts, block: tuple[str, str], outs: tuple[str, str], passes: str,
                 value: str) -> str:
    """The store of one element of the refilled tile (USE_SMEM == 2): the nest's locals
    re-declared for the block's first output and the element's window row and column."""
    (bx, by), (oy, ox) = block, outs
    n, m = f.outer.count, f.inner.count
    where = _tile_rows(f)
    levels = "".join(
        (f"      const int {w.var} = ({w.lo_text}) + {where[w.var]};\n"
         if w.var in where else "") + f"      {_decls(w)}\n" for w in f.nest)
    return (f"      const int {f.y} = (int)blockIdx.y * ({by} * {oy});\n"
            f"      const int {f.x} = (int)blockIdx.x * ({bx} * {ox});\n"
            f"{levels}"
            f"      const int wb_first = wb_pr > {n - 1} ? wb_pr - {n - 1} : 0;\n"
            f"      const int wb_first_c = wb_pc > {m - 1} ? wb_pc - {m - 1} : 0;\n"
            f"      wb_ctile[wb_pr][wb_pc] = {passes} ? ({f.elem})({value}) : ({f.elem})0;\n")


@dataclass(frozen=True)
class WindowFill:
    """One cooperative fill of the block's window of a read (with its halo) in shared
    memory before the bounds check, in the texts its caller knows: ``wb_tile[wb_pr][wb_pc]``
    (``[wb_pch]`` first where a channel loop has a tile per channel) holds the read at
    window row ``wb_pr`` and column ``wb_pc`` upwards from the block's first output's."""

    knob: str  # the ``#if`` condition
    what: str  # what is staged, in the header's words
    elem: str
    tile: tuple[str, str]  # the tile's rows and columns
    planes: int | None  # a tile per channel of a channel loop (its count); None: one tile
    block: tuple[str, str]  # BLOCK_X, BLOCK_Y
    origin: tuple[str, str]  # the declarations of the block's first output row and column
    point: tuple[str, str]  # how the read names the point: "y + i", "x + j"
    reader: str  # what names the point, in the comment's words ("the read names")
    levels: str  # the window counters' and the loops' declarations, lines of text
    reach: tuple[int, int]  # n - 1, m - 1: the window's rows and columns past the first
    passes: str  # the condition the read is taken under (its first output passes the check)
    value: str
    zero: str


def window_fill(w: WindowFill) -> str:
    """The fill's text (``#if`` .. ``#endif``, a barrier after the loop)."""
    (rows, cols), (bx, by), (ry, rx) = w.tile, w.block, w.reach
    planes = f"{w.planes} * " if w.planes is not None else ""
    per = "[wb_pch]" if w.planes is not None else ""
    return (
        f"#if {w.knob}  // {w.what}, staged once\n"
        f"  __shared__ {w.elem} wb_tile{f'[{w.planes}]' if w.planes is not None else ''}"
        f"[{rows}][{cols}];\n"
        f"  for (int wb_e = (int)threadIdx.y * {bx} + (int)threadIdx.x; "
        f"wb_e < {planes}{rows} * {cols}; wb_e += {bx} * {by}) {{\n"
        + (f"    const int wb_pch = wb_e / ({rows} * {cols});\n" if w.planes is not None else "")
        + f"    const int wb_pr = wb_e / {cols}{f' % {rows}' if w.planes is not None else ''}, "
        f"wb_pc = wb_e % {cols};\n"
        f"    // the block's first output row and column ({w.reader} them only "
        f"through {w.point[0]} and {w.point[1]})\n"
        f"    {w.origin[0]};\n    {w.origin[1]};\n"
        f"{w.levels}"
        f"    // read where the first output of the block that needs it is checked in\n"
        f"    const int wb_first = wb_pr > {ry} ? wb_pr - {ry} : 0;\n"
        f"    const int wb_first_c = wb_pc > {rx} ? wb_pc - {rx} : 0;\n"
        f"    wb_tile{per}[wb_pr][wb_pc] = {w.passes} ? ({w.elem})({w.value}) : {w.zero};\n"
        f"  }}\n  __syncthreads();\n#endif\n  ")


def _fill(f: _Facts, smem: str, tile: tuple[str, str], block: tuple[str, str],
          outs: tuple[str, str], passes: str, value: str) -> str:
    """USE_SMEM's cooperative fill before the bounds check: the block's inputs with the
    window's halo (one tile per channel of a channel loop), each read where the first
    output of the block that needs it passes the check, as the thread would."""
    (bx, by), (oy, ox) = block, outs
    ch = f.channel
    where = _tile_rows(f)
    if ch is not None:
        where[ch.var] = "wb_pch"
    levels = "".join(f"    const int {w.var} = ({w.lo_text}) + {where[w.var]};\n"
                     f"    {_decls(w, show=lambda d: text(d) if d in f.fill_decls else '')}\n"
                     for w in f.nest)
    return window_fill(WindowFill(
        smem, "the block's inputs with the window's halo", f.elem, tile,
        ch.count if ch is not None else None, block,
        (f"const int {f.y} = (int)blockIdx.y * ({by} * {oy})",
         f"const int {f.x} = (int)blockIdx.x * ({bx} * {ox})"),
        (f"{f.y} + {f.outer.var}", f"{f.x} + {f.inner.var}"), "the value reads",
        "".join(f"    {text(d)}\n" for d in f.fill_late) + levels,
        (f.outer.span - 1, f.inner.span - 1), passes, value, f"({f.elem})0"))


def _tiles(plan: Plan, expr: _Expr, f: _Facts, guard: Node, staged: str,
           own: list[str]) -> tuple[Tiles, Node] | None:
    """A shared tile per read of the tap (:mod:`.conv_fold_tiles`) where a tile of the tap
    value is not offered (``staged``: why not), with where its fill goes; None, noted,
    where refused."""
    ch = f.channel
    if ch is not None and ch is not f.nest[0]:
        plan.note("USE_SMEM", False, f"{staged}; a tile per read is modelled for a channel "
                  "loop around the window", ch.loop)
        return None
    try:
        tiles = staged_reads(plan, expr.names, expr.poly, (f.x, f.inner.var),
                             Channel(ch.var, ch.lo_text, ch.count) if ch is not None else None,
                             [w.body for w in f.nest], f.acc.value,
                             f.acc.cond if f.acc.cond is not None or not f.acc.skips
                             else f.acc.skips[0])
    except Refused as why:
        plan.note("USE_SMEM", False, f"{staged}; a tile per read: {why.reason}", why.node)
        return None
    at = _smem_refusal(plan, expr, guard, list(f.nest), ch, f.acc.value, own)
    if at is not None and at[1]:
        names = {_declared(c) for d in at[1] for c in d.children_by_field_name("declarator")}
        plan.note("USE_SMEM", False, f"{staged}; a tile per read: the value reads "
                  f"{', '.join(sorted(names))}, declared after the bounds check where the "
                  "tiles would be filled", at[1][0])
        return None
    return None if at is None else (tiles, at[0])


def _stage(plan: Plan, f: _Facts, knob: str, sizes: tuple[str, str, str, str],
           passes: Callable[[str, str], str]) -> None:
    """USE_SMEM for a tile per read: the fill before the bounds check, the knob, the shared
    bytes and the finding."""
    assert f.staged is not None
    tiles, at = f.staged
    bx, by, oy, ox = sizes
    n, m = f.outer.count, f.inner.count
    plan.rw.insert(at.start_byte, tile_fill(
        tiles, knob, (f.y, f.x, f"(int)blockIdx.y * ({by} * {oy})",
                      f"(int)blockIdx.x * ({bx} * {ox})"),
        ((f.outer.var, f.outer.lo_text, n), (f.inner.var, f.inner.lo_text, m)), passes,
        sizes))
    plan.add_param(knob, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: each input read of the taps staged for the block "
                                         "in a shared tile of its own before the bounds check "
                                         "(clamps as written); 0: read per thread (as written)"},
                   f"{line(f.outer.loop)}: {text(f.outer.loop).splitlines()[0]}")
    rows, cols = f"{by} * {oy} + {n - 1}", f"{bx} * {ox} + {m - 1}"
    plan.constrain(f"{knob} == 0 or {tile_bytes(tiles, rows, cols)} <= {_MAX_SMEM}")
    plan.note("USE_SMEM", True, tile_note(tiles, rows, cols), f.outer.loop)


# -- the rewrite ---------------------------------------------------------------------------

def block_params(plan: Plan, idx: dict[str, tuple[Node, str, Node]],
                 names: dict[str, str]) -> None:
    """BLOCK_X (8 .. 256) and BLOCK_Y (1 .. 32) of a 2-D window kernel, each a power of two
    range around the block as written (a written size that is no power of two stays a value
    among the powers)."""
    for axis, hi in (("X", 256), ("Y", 32)):
        written = literal(plan.block["XY".index(axis)]) or 1
        lo = min(1 if axis == "Y" else 8, written)
        spec: dict[str, object] = {"kind": "pow2", "min": lo, "max": max(hi, written)} \
            if written & (written - 1) == 0 else {"kind": "choice", "values": sorted(
                {written} | {1 << e for e in range(11) if lo <= 1 << e <= max(hi, written)})}
        at = idx[axis.lower()][0]
        plan.add_param(names[f"BLOCK_{axis}"], {
            **spec, "default": written,
            "description": f"threads per block along {axis.lower()} (as written: {written})"},
            f"{line(at)}: {text(at)}")


def _emit(plan: Plan, idx: dict[str, tuple[Node, str, Node]], f: _Facts, expr: _Expr,
          grid_x: str, grid_y: str) -> None:
    data, rw = plan.source.data, plan.rw
    macros = integer_macros(plan.source)
    sizes = {d: idx[d][2] for d in "xy"}
    names: dict[str, str] = {}
    for d, size in sizes.items():
        want = f"BLOCK_{d.upper()}"
        named = text(strip(size))
        names[want] = named if named in macros and builtin(size, "blockDim") is None \
            else fresh_names(plan, [want])[want]
    oy = fresh_names(plan, ["OUT_Y"])["OUT_Y"]
    ox = fresh_names(plan, ["OUT_X"])["OUT_X"] if f.x_step is not None else "1"
    for d, size in sizes.items():
        if builtin(size, "blockDim") is None:
            rw.replace(size, names[f"BLOCK_{d.upper()}"])
    for d, many in (("y", oy), ("x", ox)):
        if many == "1":
            continue
        value_node = idx[d][0].children_by_field_name("declarator")[0] \
            .child_by_field_name("value")
        assert value_node is not None
        rw.insert(value_node.start_byte, "(")
        rw.insert(value_node.end_byte, f") * {many}")
    y, i, x, j = f.y, f.outer.var, f.x, f.inner.var
    acc = "wb_acc"
    typ = text(f.decl.child_by_field_name("type"))
    acc_text = (f"{typ} {acc}[{oy}][{ox}];  // {oy} rows x {ox} columns of outputs of "
                f"this thread\n"
                f"#pragma unroll\n  for (int wb_k = 0; wb_k < {oy}; ++wb_k)\n"
                f"#pragma unroll\n    for (int wb_q = 0; wb_q < {ox}; ++wb_q) "
                f"{acc}[wb_k][wb_q] = {text(f.init)};")
    # a fold's accumulator may be declared in the channel loop (a sum per channel)
    acc_decl = (f.decl, acc_text) if inside(f.decl, f.nest[0].loop) else None
    if acc_decl is None:
        rw.replace(f.decl, acc_text)
    copies = {f.acc.acc: acc}
    for st in f.fold.state if f.fold is not None else ():
        rw.replace(st.decl, state_arrays(st, oy, ox))
        copies[st.name] = st.name

    def passes(shift_y: str, shift_x: str) -> str:
        shifts = {y: shift_y, x: shift_x}
        c = render(data, f.cond, lambda m: f"({text(m)} + {shifts[text(m)]})"
                   if m.type == "identifier" and text(m) in shifts else None)
        return f"!({c})" if f.out_when_true else f"({c})"

    def weight_sub(m: Node, depth: int = 0) -> str | None:
        if m.type != "identifier":
            return None
        if text(m) == i:
            return tap_index(f.outer.lo_text, "wb_r", "wb_k", f.outer.dil) \
                if f.outer.dil > 1 else f"({i} + wb_k)" if f.outer.flipped else f"({i} - wb_k)"
        if text(m) == j:
            return tap_index(f.inner.lo_text, "wb_c", "wb_q", f.inner.dil) \
                if f.inner.dil > 1 else f"({j} + wb_q)" if f.inner.flipped else f"({j} - wb_q)"
        value = expr.values.get(text(m))
        if text(m) in f.loop_locals and value is not None and {i, j} & expr.names(m) and \
                depth < 12:
            return "(" + render(data, value, lambda n: weight_sub(n, depth + 1)) + ")"
        return None

    n, m = f.outer.count, f.inner.count
    kept, tiles = f.keep, f.staged[0] if f.staged is not None else None

    def show_with(staged: bool) -> Callable[[Node], str]:
        """A node's text, each kept read taken from its registers and (``staged``) each
        staged read from its shared tile."""
        def sub(m: Node) -> str | None:
            return (kept.array(m) if kept is not None else None) or \
                (tiles.at(m, (oy, ox)) if staged and tiles is not None else None)
        return lambda node: render(data, node, sub)
    zero = f"({f.elem})0" if f.elem else "0"  # no element type: as the value's (several inputs)

    shifts = {w_.var: (p_, c_) for w_, p_, c_ in ((f.outer, y, "wb_r"), (f.inner, x, "wb_c"))
              if w_.dil > 1}

    def dilated(at: tuple[str, str]) -> Callable[[Node], str]:
        """A part of the tap at the walk's (or the fill's) row and column counters ``at``."""
        by_point = {p_: fill_split(at[0] if c_ == 'wb_r' else at[1], "%", w_.dil)
                    for w_ in (f.outer, f.inner) if w_.var in shifts
                    for p_, c_ in [shifts[w_.var]]}
        return lambda part: shifted_value(data, [part], expr.values, expr.names, by_point,
                                          {i, j, f.acc.acc})[0]

    def tap(show: Callable[[Node], str], at: tuple[str, str] = ("wb_r", "wb_c")) -> str:
        part = dilated(at) if shifts else show
        value = " * ".join(f"({part(v)})" for v in f.acc.value)
        when = f.acc.condition(dilated(at)) if shifts else f.acc.condition()
        return f"({when}) ? ({value}) : {zero}" if when else value
    show = show_with(False)
    value = tap(show)
    weight = " * ".join(f"({render(data, w, weight_sub)})" for w in f.acc.weight) or "1"
    target = f"{acc}[wb_k][wb_q]"
    update = f"{target} = {f.acc.fused}({weight}, wb_v, {target})" if f.acc.fused \
        else f"{target} += {weight} * wb_v"
    bx_name, by_name = names["BLOCK_X"], names["BLOCK_Y"]

    def read_line(check: str, value: str = value) -> str:
        """The tap value, read where ``check`` (the first output that needs it passes)."""
        return (f"      const {f.elem} wb_v = {check} ? ({f.elem})({value}) : {zero};\n"
                if f.elem else f"      const auto wb_v = {check} ? ({value}) : {zero};\n")
    read_value = read_line(passes('wb_first', 'wb_first_c'))
    smem = fresh_names(plan, ["USE_SMEM"])["USE_SMEM"] \
        if (f.smem_at is not None or f.refill is not None) and ox != "1" else ""
    modes = [1] * (f.smem_at is not None) + [2] * (f.refill is not None) if smem else []
    one = smem if f.refill is None else f"{smem} == 1"  # the tile(s) staged before the check
    tile_h = f"({by_name} * {oy} + {f.outer.span - 1})"
    tile_w = f"({bx_name} * {ox} + {f.inner.span - 1})"
    ch = f.channel
    # a tile per channel (all staged before the check), read at the channel's own tile
    at_ch = f"[({ch.var}) - ({ch.lo_text})]" if ch is not None else ""
    # the tile holds the block's inputs upwards: a flipped walk reads it from the top
    at_r = f"({oy} - 1) - wb_r + {n - 1}" if f.outer.flipped else "wb_r"
    at_c = f"({ox} - 1) - wb_c + {m - 1}" if f.inner.flipped else "wb_c"
    at_thread = f"[(int)threadIdx.y * {oy} + {at_r}][(int)threadIdx.x * {ox} + {at_c}]"
    reads = [(one, f"wb_tile{at_ch}{at_thread}")] * (1 in modes) + \
        [(f"{smem} == 2", f"wb_ctile{at_thread}")] * (2 in modes)
    if reads:
        read_value = "".join(f"#{'if' if k == 0 else 'elif'} {c}\n      const {f.elem} wb_v = "
                             f"{r};\n" for k, (c, r) in enumerate(reads)) + \
            f"#else\n{read_value}#endif\n"
    if 1 in modes:
        assert f.smem_at is not None
        rw.insert(f.smem_at.start_byte, _fill(f, one, (tile_h, tile_w), (bx_name, by_name),
                                              (oy, ox), passes('wb_first', 'wb_first_c'),
                                              tap(show, ("wb_pr", "wb_pc"))))
    refill_head = ""
    if 2 in modes:
        assert f.refill is not None and ch is not None
        cond_text = text(f.cond)
        if f.refill.wraps:
            flag, test = wrapped_live(smem, cond_text, f.refill.live)
            rw.insert(f.refill.guard.start_byte, flag)
            rw.replace(f.cond, test)
        else:
            rw.replace(f.refill.guard, live_flag(smem, text(f.refill.guard), cond_text,
                                                 f.refill.live))
        refill_head = refill_block(smem, f.elem, (tile_h, tile_w), (bx_name, by_name),
                                   _refill_body(f, (bx_name, by_name), (oy, ox),
                                                passes('wb_first', 'wb_first_c'), value),
                                   f.refill.live)

    def kept_fill(staged: bool) -> str:
        if kept is None:
            return ""
        tiled = (lambda m: tiles.at(m, (oy, ox))) if staged and tiles is not None else \
            (lambda m: None)
        return fill(
            kept, (f"    const int {i} = {_walk(f.outer, 'wb_r', oy)};\n"
                   f"    const int wb_first = {_first(f.outer, 'wb_r', oy)};\n",
                   f"        const int {j} = {_walk(f.inner, 'wb_c', ox)};\n"
                   f"        const int wb_first_c = {_first(f.inner, 'wb_c', ox)};\n"),
            ("\n    ".join(text(s) for s in kept.row_decls),
             "\n        ".join(text(s) for s in kept.col_decls)),
            passes("wb_first", "wb_first_c") +
            (f" && ({f.acc.condition()})" if f.acc.condition() else ""),
            (f"{n} + {oy} - 1", f"{m} + {ox} - 1"), lambda r: render(data, r, tiled))

    tr, tc = _tap(f.outer, "wb_r", "wb_k", oy), _tap(f.inner, "wb_c", "wb_q", ox)
    take_r, take_c = (
        tap_test(c_, k_, w_.dil, w_.count) if w_.dil > 1 else f"{t_} >= 0 && {t_} < {w_.count}"
        for w_, c_, k_, t_ in ((f.outer, "wb_r", "wb_k", tr), (f.inner, "wb_c", "wb_q", tc)))
    takes = f"{take_r} && {take_c}"

    def nest_text(read: str, show: Callable[[Node], str] = show) -> str:
        if f.shifted:
            show = (lambda shown: lambda d: "" if d in f.shifted else shown(d))(show)
        if _row_first(f, show):
            return (_opener(data, f, f.outer, oy, ox, show=show) +
                    row_accumulate(RowWalk(
                        _opener(data, f, f.inner, oy, ox, show=show), read, f.elem,
                        f"{f.inner.span} + {ox} - 1", (oy, ox), take_r, f.inner.dil, m,
                        update)) +
                    "  }")
        return (
            "".join(_opener(data, f, w, oy, ox, refill_head, acc_decl, show) for w in f.nest) +
            f"{read}"
            f"#pragma unroll\n      for (int wb_k = 0; wb_k < {oy}; ++wb_k) {{\n"
            f"#pragma unroll\n        for (int wb_q = 0; wb_q < {ox}; ++wb_q) {{\n"
            f"          if ({takes}) {update};\n"
            f"        }}\n      }}\n" + "    }\n" * (len(f.nest) - 1) +
            (refill_close(smem) if refill_head else "") +
            (fold_text(data, f.fold, copies, oy, ox) if f.fold is not None else "") + "  }")

    def loop_text(staged: bool) -> str:
        """The loops over the taps (``staged``: the staged reads from their tiles)."""
        show = show_with(staged)
        value = tap(show)
        nest = nest_text(read_line(passes("wb_first", "wb_first_c"), value) if staged
                         else read_value, show)
        if ch is f.nest[0] and not modes:
            nest = interior_split(passes(f"{oy} - 1", f"{ox} - 1"),
                                  nest_text(read_line("true", value), show), nest)
        return kept_fill(staged) + nest
    tknob = fresh_names(plan, ["USE_SMEM"])["USE_SMEM"] if f.staged is not None else ""
    loops = loop_text(False) if not tknob else \
        f"#if {tknob}\n{loop_text(True)}\n#else\n{loop_text(False)}\n#endif\n"
    rw.replace(f.nest[0].loop, (
        f"// {n} + {oy} - 1 input rows and {m} + {ox} - 1 columns feed {oy} x {ox} outputs: "
        f"each input value is loaded once\n" + loops))
    if f.staged is not None:
        _stage(plan, f, tknob, (names["BLOCK_X"], names["BLOCK_Y"], oy, ox), passes)
    index = text(subscript_index(f.target))
    rhs = per_output(data, f.rhs, copies)
    x_term = f" + (long long)wb_q * ({poly_text(f.x_step)})" if f.x_step else ""
    store = (f"#pragma unroll\n  for (int wb_k = 0; wb_k < {oy}; ++wb_k)\n"
             f"#pragma unroll\n  for (int wb_q = 0; wb_q < {ox}; ++wb_q) {{  // guarded per "
             f"output\n    if ({passes('wb_k', 'wb_q')}) {f.out}[({index}) + (long long)wb_k * "
             f"({poly_text(f.step)}){x_term}] = {rhs};\n  }}")
    rw.replace(f.store_stmt, store)
    bx, by = names["BLOCK_X"], names["BLOCK_Y"]
    block_params(plan, idx, names)
    plan.add_param(oy, {"kind": "choice", "default": 1,
                        "values": OUT_Y_VALUES if ch is not None else OUT_Y_PLAIN_VALUES,
                        "description": f"consecutive output rows ({y}) per thread; each input "
                                       "row is loaded once and feeds every row's accumulator "
                                       "from registers (as written: 1)"},
                   f"{line(idx['y'][0])}: {text(idx['y'][0])}")
    if smem:
        _smem_param(plan, f, smem, modes, (tile_h, tile_w))
    if ox != "1":
        plan.add_param(ox, {"kind": "choice", "values": OUT_X_VALUES + [8] * (kept is not None),
                            "default": 1,
                            "description": f"consecutive output columns ({x}) per thread; "
                                           "each input value of a row feeds every column's "
                                           "accumulator from registers (as written: 1)"},
                       f"{line(idx['x'][0])}: {text(idx['x'][0])}")
        plan.constrain(f"{ox} * {oy} <= 16")
        plan.note("OUT_X", True, f"each thread computes {ox} consecutive columns; "
                  f"{f.tap_value} at input column {x} {'-' if f.inner.flipped else '+'} "
                  f"{_dilated(f.inner)}{j} is loaded once per row and feeds every "
                  f"column's accumulator{_dilated_walk(f.inner, 'column')}; the grid's x divisor is "
                  f"{bx} * {ox}", f.outer.loop)
    plan.block = [bx, by, *plan.block[2:]]
    # the launch rule in the lifted names (a block the author named TX stays TX)
    renamed = {"BLOCK_X": bx, "BLOCK_Y": by, "OUT_Y": oy, "OUT_X": ox}
    plan.grid = [re.sub(r"\b(BLOCK_X|BLOCK_Y|OUT_Y|OUT_X)\b", lambda m_: renamed[m_.group(1)], g)
                 for g in (grid_x, grid_y)] + plan.grid[2:]
    plan.launch_bounds = f"{bx} * {by}"
    if kept is not None:
        live = live_registers(kept, len(f.fold.state) if f.fold is not None else 0,
                              (n, m), (oy, ox))
        for rule in kept_constraints(plan, live, f"{bx} * {by}"):
            plan.constrain(rule)
        plan.note("KEPT_READS", True, kept_note(kept, ch.var if ch is not None else "",
                                                live), f.outer.loop)
    plan.constrain(f"{bx} * {by} >= 32")
    plan.constrain(f"{bx} * {by} <= 1024")
    per = f" per channel (the loop over {ch.var} kept as written: each output sums its " \
        "taps in the written order)" if ch is not None else ""
    plan.note("OUT_Y", True, f"each thread computes {oy} consecutive rows of the {n} x "
              f"{f.inner.count} window sum; {f.tap_value} at input row {y} "
              f"{'-' if f.outer.flipped else '+'} {_dilated(f.outer)}{i} is loaded "
              f"once per row and column{per} and feeds every output row's accumulator"
              f"{_dilated_walk(f.outer, 'row')}; the "
              f"grid's y divisor is {by} * {oy}" + (
                  f"; the fold after each channel's taps (line {line(f.fold.stmts[0])}) runs "
                  f"per output on its own {', '.join(sorted(f.fold.names))}"
                  if f.fold is not None else ""), f.outer.loop)
