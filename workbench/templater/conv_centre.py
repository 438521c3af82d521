"""OUT_Y for window filters whose taps read the output's own state (edge-preserving filters).

A bilateral, range or guided filter is a 2-D window around the output point whose weight
depends on the output's *centre value* (``w = exp(-(v - centre)^2 ...)``) and that sums into
several accumulators (``num += w * v; den += w;``). :mod:`.conv` splits each tap into a
value and a weight that does not depend on the point, with one accumulator; these kernels
fall outside that, yet share what makes OUT_Y pay: neighbouring output rows read the same
input rows.

Recognised by roles: a 2-D block of literal sizes; the point ``x = blockIdx.x * L +
threadIdx.x`` and ``y = ...`` at the top level; a bounds check that bounds ``y`` from above
only (an early return or an ``if`` around the rest); after it, declarations (the output's
*state*: a centre value read at the point, accumulators), one window loop over compile-time
rows ``i`` around one loop over compile-time columns ``j``, and statements after the loop
(the store). The taps (the two loops' declarations and the inner body) write only the state
and their own locals; every memory read in them reads an input the kernel does not write,
depends on ``y`` and ``i`` only through ``y + i`` (polynomials of the index expressions,
clamps included) and reads no state. This family takes a window only where :mod:`.conv`
cannot: the taps read the state, or accumulate into more than one local.

The rewrite is a loop interchange: each thread computes ``OUT_Y`` consecutive rows; the
``n + OUT_Y - 1`` input rows ``r`` are walked once, each tap read is loaded once per ``(r,
j)`` (where the first output row that needs it passes the check, as that row's thread
would), and the taps of every output row ``k`` with ``0 <= r - k < n`` run as written on
that row's own state (``y`` and ``i`` re-declared as ``y0 + k`` and ``r - k``, the state as
references into per-row arrays held in registers). Each output adds its taps in the written
order (``i``, then ``j``) on its own state, so results are bit-identical to the kernel as
written; the state of a row past the check starts from zeros and is never stored. Anything
else refuses with the reason and the line. The taps' math is then offered FAST_MATH
(:mod:`.ilp_fastmath`: ``expf`` as ``__expf`` ..., a knob the gate checks against the
folder's tolerance): it runs per tap, it is what such a kernel spends its time on.

Several outputs a point (a multi-channel filter's ``float acc[COUT]``, initialised and
stored in loops, its taps read through a read-only helper) are :mod:`.conv_centre_arrays`'
reading; USE_SMEM (the one tap read's block window staged in shared memory) is
:mod:`.conv_centre_stage`'s; the stores after the window are offered STORE_VEC
(:mod:`.store_vec`), run per row.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    JUMPS,
    builtin,
    line,
    shares_or_syncs,
    strip,
    text,
    walk,
    write_target,
)
from workbench.templater.conv import (
    OUT_Y_VALUES,
    _compile_time_defs,
    _declared,
    _Expr,
    _pragma,
    _Window,
    _window,
    block_params,
)
from workbench.templater.conv_centre_arrays import (
    accumulates,
    array_extent,
    helper_read,
    loop_counters,
    shared_prefix,
    state_write,
    window_loop,
    zero,
)
from workbench.templater.conv_centre_stage import Stage, fill, stage_param, staged_read, tile_read
from workbench.templater.ilp_fastmath import apply_fastmath
from workbench.templater.macros import integer_macros
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls
from workbench.templater.regtile import Refused, apply_or_note, fresh_names
from workbench.templater.rewrite import Rewriter
from workbench.templater.rules import literal, scale_divisor
from workbench.templater.stencil import _bounds_from_above, _guard, point_decls, statements
from workbench.templater.store_vec import apply_store_vec

NAME = "OUT_Y"
_WRITES = ("assignment_expression", "update_expression")


@dataclass(frozen=True)
class _Read:
    """One memory read of the taps, loaded once per input row and column."""

    node: Node
    elem: str  # the input's element type
    needs: tuple[Node, ...]  # the loops' declarations it reads, in the written order
    when: tuple[tuple[Node, bool], ...] = ()  # conditions it is read under (True: negated)

    def guard(self) -> str:
        """The conditions it is read under, as text ("" when always)."""
        return " && ".join(f"!({text(c)})" if neg else f"({text(c)})" for c, neg in self.when)


@dataclass(frozen=True)
class _Centre:
    y: str
    y_type: str
    outer: _Window
    inner: _Window
    cond: Node
    out_when_true: bool
    pre: tuple[Node, ...]  # the state's declarations (after the check, before the loop)
    state: tuple[tuple[str, str], ...]  # (name, type) of each state local
    extents: tuple[tuple[str, str], ...]  # (name, extent) of each state array
    after: tuple[Node, ...]  # the statements after the loop (the store)
    reads: tuple[_Read, ...]
    guard_stmt: Node | None = None  # the bounds check (USE_SMEM's fill goes before it)
    stage: Stage | None = None  # USE_SMEM offered: the read's window in shared memory


def lift_centre(plan: Plan) -> bool:
    """OUT_Y over a centre-weighted window; False when the kernel is not of the family
    (or is and the analysis refused: the finding says why)."""
    if len(plan.block) != 2 or any(literal(b) is None for b in plan.block) or \
            shares_or_syncs(plan.body):
        return False
    stmts = statements(plan.body)
    idx = point_decls(plan, stmts, "xy", NAME)
    if set(idx) != {"x", "y"}:
        return False
    if not apply_or_note(plan, NAME, lambda: _analyse(plan, stmts, idx)):
        return False
    apply_fastmath(plan, taps=True)  # the taps' math runs per output: the kernel's cost
    apply_store_vec(plan)  # a pixel's output channels stored per row as one vector
    return True


def _analyse(plan: Plan, stmts: list[Node], idx: dict[str, tuple[Node, str, Node]]
             ) -> Callable[[], None] | None:
    (xdecl, x, _xsize), (ydecl, y, _ysize) = idx["x"], idx["y"]
    region = stmts[max(stmts.index(xdecl), stmts.index(ydecl)) + 1:]
    try:
        guard_stmt, cond, out_when_true, guarded = _guard(region)
    except Refused:
        return None
    loops = [s for s in guarded if s.type == "for_statement"]
    top = loops[0] if len(loops) == 1 else window_loop(plan, loops)
    if top is None:
        return None
    pre = guarded[:guarded.index(top)]
    after = guarded[guarded.index(top) + 1:]
    defs = _compile_time_defs(plan)
    arrays = {_declared(d): e for s in pre if s.type == "declaration"
              for d in s.children_by_field_name("declarator")
              if (e := array_extent(plan, d)) is not None}
    try:  # a loop nest of another form is conv's to read (and to refuse)
        outer = _window(plan, top, defs, sized=False)
        inner_loops = [s for s in outer.body if s.type == "for_statement"]
        if len(inner_loops) != 1 or ((not arrays or len(loops) == 1) and any(
                s.type == "for_statement" for s in walk(inner_loops[0])
                if s is not inner_loops[0])):
            return None  # not a 2-D window (a line filter, or a channel loop: conv's)
        inner = _window(plan, inner_loops[0], defs, sized=False)
    except Refused:
        return None
    names = {_declared(d) for s in pre if s.type == "declaration"
             for d in s.children_by_field_name("declarator")}
    # a pointer declared there (`const float *t = taps;`, read `t[idx]`) is never the
    # state this family keeps per row (:func:`_state` refuses it): conv's to read
    pointers = {_declared(d) for s in pre if s.type == "declaration"
                for d in s.children_by_field_name("declarator")
                if any(n.type == "pointer_declarator" for n in walk(d))}
    taps = [*(s for s in outer.body if s.type == "declaration"), *inner.body]
    mentioned = {text(n) for s in taps for n in walk(s) if n.type == "identifier"}
    accumulated = {t for s in inner.body for t in _targets(s)}
    if not (mentioned & names - accumulated - pointers) and len(accumulated & names) < 2:
        return None  # one accumulator, no state read: conv's window
    if arrays and not accumulates(taps, set(arrays)):
        return None  # values gathered into an array, not sums: gather_stage's
    expr = _Expr(plan, {x, y, outer.var, inner.var})
    shared = shared_prefix(plan, pre, y, expr.names) if arrays else 0
    names -= {_declared(d) for s in pre[:shared] for d in s.children_by_field_name("declarator")}
    shared_decls, pre = pre[:shared], pre[shared:]  # the plane's pointer stays where it is, read by every row
    state = _state(pre, set(arrays))
    for w in (outer, inner):
        if w.count == 0:
            raise Refused(f"the window over {w.var} is not a compile-time size", w.loop)
    for s in outer.body:
        if s is not inner.loop and s.type != "declaration" and not _pragma(s):
            raise Refused(f"`{text(s)}` in the loop over {outer.var} is neither a declaration "
                          "nor the inner window loop", s)
    bad = _bounds_from_above(cond, y, out_when_true)
    if bad is not None:
        raise Refused(f"`{text(bad)}` does not bound {y} from above only", bad)
    for n in walk(cond):
        if n.type == "identifier" and text(n) != y and text(n) in expr.values and \
                y in expr.names(n):
            raise Refused(f"the bounds check reads `{text(n)}`, which depends on {y}", n)
    _check_writes(plan, taps, pre, after, (names, set(arrays)), outer, inner, expr)
    _check_stale(expr, [*pre, *taps, *after], y, stmts)
    reads = tuple(_reads(plan, expr, outer, inner, names, y, set(arrays)))
    if not reads:
        raise Refused("the taps read no input", inner.loop)
    grid_y = scale_divisor(plan.grid[1], plan.block[1], "BLOCK_Y * OUT_Y")
    grid_x = scale_divisor(plan.grid[0], plan.block[0], "BLOCK_X")
    if grid_y is None or grid_x is None:
        raise Refused(f"the grid {plan.grid} does not divide by the block {plan.block}", ydecl)
    ytype = text(ydecl.child_by_field_name("type"))
    stage = staged_read(plan, expr, [(r.node, r.elem, r.guard(), r.needs) for r in reads],
                        (cond, out_when_true), (x, y), (outer, inner), shared_decls)
    facts = _Centre(y, ytype, outer, inner, cond, out_when_true, tuple(pre), tuple(state),
                    tuple(arrays.items()), tuple(after), reads, guard_stmt, stage)

    def emit() -> None:
        _emit(plan, idx, facts, (grid_x, grid_y))
    return emit


def _state(pre: list[Node], arrays: set[str]) -> list[tuple[str, str]]:
    """(name, type) of each local the statements before the loop declare: plain
    identifiers of one arithmetic type each (a per-row copy of each is kept), or arrays of
    a compile-time extent (``arrays``: then statements that write them may follow)."""
    out: list[tuple[str, str]] = []
    for s in pre:
        if s.type != "declaration" and arrays:
            continue  # an initialising loop: _check_writes reads what it writes
        if s.type != "declaration":
            raise Refused(f"`{text(s)}` before the window loop is not a declaration (the "
                          "output's state is declared there)", s)
        typ = s.child_by_field_name("type")
        for d in s.children_by_field_name("declarator"):
            name = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            if name is not None and name.type == "array_declarator" and \
                    _declared(name) in arrays and typ is not None:
                out.append((_declared(name), text(typ)))
                continue
            if typ is None or name is None or name.type != "identifier":
                raise Refused(f"`{text(s)}` declares `{text(d)}`: the state is modelled as "
                              "plain locals", s)
            out.append((text(name), text(typ)))
    return out


def _targets(stmt: Node) -> set[str]:
    """The identifiers ``stmt`` assigns or increments."""
    out: set[str] = set()
    for n in walk(stmt):
        t = write_target(n)
        if t is not None and t.type == "identifier":
            out.add(text(t))
    return out


def _check_writes(plan: Plan, taps: list[Node], pre: list[Node], after: list[Node],
                  states: tuple[set[str], set[str]], outer: _Window, inner: _Window,
                  expr: _Expr) -> None:
    """The taps write only the state and their own locals, call only pure or read-only
    functions and never leave the loops; nothing the kernel writes is read by it; the
    statements before the loop (beside the state's declarations) write only the state."""
    state, arrays = states
    pure = pure_calls(plan.source)
    tap_locals = {_declared(d) for s in taps if s.type == "declaration"
                  for d in s.children_by_field_name("declarator")} | loop_counters(taps)
    for s in (p for p in pre if p.type != "declaration"):
        own = loop_counters([s])
        for n in walk(s):
            t = write_target(n) if n.type in _WRITES else None
            if t is not None and not state_write(n, arrays, expr.names) and not (
                    t.type == "identifier" and text(t) in state | own):
                raise Refused(f"`{text(n)}` before the window writes other than the output's "
                              "state", n)
            if n.type == "call_expression" and helper_read(plan, n) is None and \
                    text(n.child_by_field_name("function")) not in pure:
                raise Refused(f"`{text(n)}` before the window calls other than a pure or "
                              "read-only function", n)
    for s in taps:
        for n in walk(s):
            if n.type in JUMPS:
                raise Refused(f"`{text(n)}` leaves the window early", n)
            if n.type in _WRITES and state_write(n, arrays, expr.names):
                continue
            if n.type in _WRITES:
                t = write_target(n) or n
                if t.type != "identifier" or text(t) not in state | tap_locals:
                    raise Refused(f"`{text(n)}` writes inside the window: the taps may write "
                                  "the output's state and their own locals only", n)
                if text(t) in (outer.var, inner.var):
                    raise Refused(f"`{text(n)}` writes the window's counter", n)
        call = next((n for n in walk(s) if n.type == "call_expression" and
                     text(n.child_by_field_name("function")) not in pure and
                     helper_read(plan, n) is None), None)
        if call is not None:
            raise Refused(f"the taps call `{text(call.child_by_field_name('function'))}`, "
                          "which is not a pure function (a read is modelled as `in[index]`, "
                          "loaded once for every row)", call)
    for s in [*pre, *after]:
        for n in walk(s):
            if n.type in JUMPS:
                raise Refused(f"`{text(n)}` leaves the output's work early", n)
    written = {text(strip(t.child_by_field_name("argument")))  # type: ignore[arg-type]
               for n in walk(plan.body) if n.type in _WRITES
               for t in [strip(n.child_by_field_name("left") or
                               n.child_by_field_name("argument") or n)]
               if t.type == "subscript_expression"}
    read = {text(strip(n.child_by_field_name("argument")))  # type: ignore[arg-type]
            for s in [*pre, *taps] for n in walk(s) if n.type == "subscript_expression"}
    if (written & read) - arrays:  # a state array is each row's own
        raise Refused(f"the kernel writes {', '.join(sorted((written & read) - arrays))}, which it reads: "
                      "an output row would read what another writes", after[0] if after
                      else inner.loop)


def _check_stale(expr: _Expr, replicated: list[Node], y: str, stmts: list[Node]) -> None:
    """Each row re-declares ``y``; a local derived from ``y`` outside the rewritten
    statements would keep the thread's first row's value."""
    inside_ids = {id(n) for s in replicated for n in walk(s)}
    for s in stmts:
        if s.type != "declaration" or id(s) in inside_ids:
            continue
        for d in s.children_by_field_name("declarator"):
            name = _declared(d)
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            if name == y or value is None or y not in expr.names(value):
                continue
            use = next((n for r in replicated for n in walk(r)
                        if n.type == "identifier" and text(n) == name), None)
            if use is not None:
                raise Refused(f"`{name}` (line {line(s)}) derives from {y} outside the "
                              "output's work and is read in it: each row re-declares "
                              f"{y} only", use)


def _reads(plan: Plan, expr: _Expr, outer: _Window, inner: _Window, state: set[str],
           y: str, arrays: Collection[str] = ()) -> list[_Read]:
    """The taps' memory reads, each loadable once per input row and column (under the
    conditions it is read under: zero padding written as ``if (inside) { v = in[..]; }``)."""
    decls = [s for s in [*outer.body, *inner.body] if s.type == "declaration"]
    by_name = {_declared(d): s for s in decls for d in s.children_by_field_name("declarator")}
    found: list[_Read] = []
    for s in [*(d for d in outer.body if d.type == "declaration"), *inner.body]:
        for n in walk(s):
            if n.type == "pointer_expression" and \
                    text(n.child_by_field_name("operator")) == "*":
                raise Refused(f"`{text(n)}` reads through a pointer: the taps' reads are "
                              "modelled as `in[index]`", n)
            helper = helper_read(plan, n) if n.type == "call_expression" else None
            if n.type != "subscript_expression" and helper is None:
                continue
            base = text(strip(n.child_by_field_name("argument") or
                              n.child_by_field_name("function")))  # type: ignore[arg-type]
            index = n.child_by_field_name("indices") or n.child_by_field_name("index")
            if base in arrays and index is not None and not expr.names(index) & set(arrays):
                continue  # the row's own state array, bound by reference
            if expr.names(n) & state:
                raise Refused(f"`{text(n)}` reads the output's state: it differs between "
                              "the rows of one thread", n)
            if y not in expr.names(n):
                continue  # the same element for every row (a table of spatial weights)
            if helper is not None and any(m is not n and (m.type == "call_expression" or
                                                          m.type == "subscript_expression")
                                          and y in expr.names(m) for m in walk(n)):
                raise Refused(f"`{text(n)}` reads through a helper whose arguments read "
                              "memory or call", n)
            if helper is None and not plan.pointer(base):
                raise Refused(f"`{text(n)}` reads {base}, not an input of the kernel", n)
            if n.parent is not None and n.parent.type == "pointer_expression":
                raise Refused(f"`{text(n.parent)}` takes the address of a read: the value is "
                              "loaded once, its address is not", n)
            when = _conditions(n, s)
            for part in [n, *(c for c, _neg in when)]:
                if expr.names(part) & state:
                    raise Refused(f"`{text(part)}` reads the output's state: it differs "
                                  "between the rows of one thread", part)
                bad = expr.via_sum(part, y, outer.var)
                if bad is not None:
                    raise Refused(f"`{text(bad)}` depends on {y} and {outer.var} other than "
                                  f"through {y} + {outer.var}", bad)
            for c, _neg in when:
                if any(m.type == "subscript_expression" for m in walk(c)):
                    raise Refused(f"the read `{text(n)}` is taken under `{text(c)}`, which "
                                  "reads memory", c)
            needs = _needs([n, *(c for c, _neg in when)], by_name, decls)
            for d in needs:
                if expr.names(d) & state or any(m.type == "subscript_expression"
                                                for m in walk(d)):
                    raise Refused(f"`{text(d)}`, which the read `{text(n)}` needs, reads "
                                  "the output's state or memory", d)
            found.append(_Read(n, helper or plan.kernel.param(base).base_type, tuple(needs),
                               tuple(when)))
    return found


def _conditions(read: Node, stmt: Node) -> list[tuple[Node, bool]]:
    """The conditions ``read`` is evaluated under inside ``stmt`` (True: negated), from an
    ``if``/``else``, a ``?:`` or the right side of ``&&``/``||``."""
    out: list[tuple[Node, bool]] = []
    child, node = read, read.parent
    while node is not None and child != stmt:
        if node.type in ("if_statement", "conditional_expression"):
            cond = node.child_by_field_name("condition")
            if cond is not None and cond.type == "condition_clause" and \
                    cond.named_child_count == 1:
                cond = cond.named_children[0]
            for field, negated in (("consequence", False), ("alternative", True)):
                branch = node.child_by_field_name(field)
                if cond is not None and branch is not None and \
                        branch.start_byte <= child.start_byte < branch.end_byte:
                    out.append((strip(cond), negated))
        elif node.type == "binary_expression" and \
                text(node.child_by_field_name("operator")) in ("&&", "||"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is not None and right is not None and right == child:
                out.append((strip(left), text(node.child_by_field_name("operator")) == "||"))
        child, node = node, node.parent
    return out


def _needs(nodes: list[Node], by_name: dict[str, Node], decls: list[Node]) -> list[Node]:
    """The loops' declarations ``nodes`` read, directly or through one another, in the
    written order."""
    seen: set[int] = set()
    todo = list(nodes)
    while todo:
        n = todo.pop()
        for m in walk(n):
            d = by_name.get(text(m)) if m.type == "identifier" else None
            if d is not None and id(d) not in seen:
                seen.add(id(d))
                todo.append(d)
    return [d for d in decls if id(d) in seen]


# -- the rewrite ---------------------------------------------------------------------------

def _emit(plan: Plan, idx: dict[str, tuple[Node, str, Node]], f: _Centre,
          grid: tuple[str, str]) -> None:
    rw = plan.rw
    macros = integer_macros(plan.source)
    names: dict[str, str] = {}
    for d in "xy":
        size = idx[d][2]
        named = text(strip(size))
        want = f"BLOCK_{d.upper()}"
        names[want] = named if named in macros and builtin(size, "blockDim") is None \
            else fresh_names(plan, [want])[want]
        if builtin(size, "blockDim") is None:
            rw.replace(size, names[want])
    oy = fresh_names(plan, ["OUT_Y"])["OUT_Y"]
    smem = fresh_names(plan, ["USE_SMEM"])["USE_SMEM"] if f.stage is not None else ""
    value = idx["y"][0].children_by_field_name("declarator")[0].child_by_field_name("value")
    assert value is not None
    rw.insert(value.start_byte, "(")
    rw.insert(value.end_byte, f") * {oy}")
    loaded = [f"wb_v{k}" for k in range(len(f.reads))]
    for r, v in zip(f.reads, loaded, strict=True):
        rw.replace(r.node, v)
    y, i, j = f.y, f.outer.var, f.inner.var
    n, m = f.outer.count, f.inner.count

    def passes(shift: str) -> str:
        c = re.sub(rf"\b{re.escape(y)}\b", f"({y} + {shift})", text(f.cond))
        return f"!({c})" if f.out_when_true else f"({c})"

    def row_of(stmts: tuple[Node, ...] | list[Node]) -> str:
        """Declarations re-binding the row's ``y`` and state for ``stmts``."""
        used = {text(q) for s in stmts for q in walk(s) if q.type == "identifier"}
        out = f"const {f.y_type} {y} = wb_y0 + wb_k; " if y in used else ""
        return out + "".join(f"auto& {s} = wb_{s}[wb_k]; " for s, _t in f.state if s in used)

    def build(_rw: Rewriter) -> str:
        extents = dict(f.extents)
        arrays = "".join(f"  {t} wb_{s}[{oy}]{f'[{extents[s]}]' if s in extents else ''} = "
                         f"{{}};  // {s} of each output row\n" for s, t in f.state)
        pre = "\n      ".join(rw.text(s) for s in f.pre)
        keep = "".join(f" wb_{s}[wb_k] = {s};" if s not in extents else
                       f"\n#pragma unroll\n      for (int wb_e = 0; wb_e < {extents[s]}; ++wb_e) "
                       f"wb_{s}[wb_k][wb_e] = {s}[wb_e];" for s, _t in f.state)
        outer_decls = [s for s in f.outer.body if s.type == "declaration"]
        inner_stmts = [s for s in f.inner.body if not _pragma(s)]
        row_needs = [d for d in outer_decls if any(d in r.needs for r in f.reads)]
        col_needs = [d for d in inner_stmts if any(d in r.needs for r in f.reads)]
        loads = "".join(f"      const {r.elem} {v} = {passes('wb_first')}"
                        f"{' && ' + r.guard() if r.when else ''} ? ({r.elem})"
                        f"({text(r.node)}) : {zero(r.elem)};\n"
                        for r, v in zip(f.reads, loaded, strict=True))
        if f.stage is not None:  # USE_SMEM: the one read from the block's window
            loads = (f"#if {smem}\n      const {f.reads[0].elem} {loaded[0]} = "
                     f"{tile_read(f.inner, oy)};\n#else\n{loads}#endif\n")
        taps = [*outer_decls, *inner_stmts]
        tap_text = "\n          ".join(rw.text(s) for s in taps)
        after_text = "\n      ".join(rw.text(s) for s in f.after)
        return (
            f"const {f.y_type} wb_y0 = {y};  // the thread's first output row\n{arrays}"
            f"#pragma unroll\n  for (int wb_k = 0; wb_k < {oy}; ++wb_k) {{  // each row's "
            f"state (a row past the check keeps zeros)\n"
            f"    const {f.y_type} {y} = wb_y0 + wb_k;\n"
            f"    if ({passes('0')}) {{\n      {pre}\n     {keep}\n    }}\n  }}\n"
            f"  // {n} + {oy} - 1 input rows feed {oy} output rows: each tap read is loaded "
            f"once\n#pragma unroll\n  for (int wb_r = 0; wb_r < {n} + {oy} - 1; ++wb_r) {{\n"
            f"    const int wb_first = wb_r > {n - 1} ? wb_r - {n - 1} : 0;  // the first row "
            f"that reads it\n"
            f"    const int {i} = ({f.outer.lo_text}) + wb_r;  // window row of output row 0\n"
            + "".join(f"    {text(d)}\n" for d in row_needs) +
            f"#pragma unroll\n    for (int {j} = {f.inner.lo_text}; {j} < ({f.inner.lo_text}) "
            f"+ {m}; ++{j}) {{\n"
            + "".join(f"      {text(d)}\n" for d in col_needs) + loads +
            f"#pragma unroll\n      for (int wb_k = 0; wb_k < {oy}; ++wb_k) {{\n"
            f"        if (wb_r - wb_k >= 0 && wb_r - wb_k < {n}) {{  // row k's tap row "
            f"{i} = r - k, as written\n"
            f"          {row_of(taps)}const int {i} = ({f.outer.lo_text}) + wb_r - wb_k;\n"
            f"          {tap_text}\n"
            f"        }}\n      }}\n    }}\n  }}\n"
            f"#pragma unroll\n  for (int wb_k = 0; wb_k < {oy}; ++wb_k) {{  // guarded per "
            f"output row\n    if ({passes('wb_k')}) {{\n      {row_of(f.after)}"
            f"{after_text}\n    }}\n  }}")

    first, last = f.pre[0] if f.pre else f.outer.loop, f.after[-1] if f.after else \
        f.outer.loop
    rw.replace_span(first.start_byte, last.end_byte, make=build)
    if f.stage is not None and f.guard_stmt is not None:
        rw.insert(f.guard_stmt.start_byte, fill(
            f.stage, (smem, names["BLOCK_X"], names["BLOCK_Y"], oy), (idx["x"][1], y, f.y_type),
            (f.outer, f.inner), (text(f.cond), f.out_when_true), zero(f.stage.elem)))
    _params(plan, idx, f, names, oy, grid)
    if f.stage is not None:
        stage_param(plan, f.stage, smem, (names["BLOCK_X"], names["BLOCK_Y"], oy),
                    (f.outer, f.inner))


def _params(plan: Plan, idx: dict[str, tuple[Node, str, Node]], f: _Centre,
            names: dict[str, str], oy: str, grid: tuple[str, str]) -> None:
    bx, by = names["BLOCK_X"], names["BLOCK_Y"]
    block_params(plan, idx, names)
    plan.add_param(oy, {"kind": "choice", "values": OUT_Y_VALUES, "default": 1,
                        "description": f"consecutive output rows ({f.y}) per thread; each "
                                       "tap read is loaded once per input row and feeds every "
                                       "row's taps, each row on its own state (as written: 1)"},
                   f"{line(idx['y'][0])}: {text(idx['y'][0])}")
    plan.block = [bx, by]
    renamed = {"BLOCK_X": bx, "BLOCK_Y": by, "OUT_Y": oy}
    plan.grid = [re.sub(r"\b(BLOCK_X|BLOCK_Y|OUT_Y)\b", lambda m_: renamed[m_.group(1)], g)
                 for g in grid] + plan.grid[2:]  # a z extent (images, planes) as written
    plan.launch_bounds = f"{bx} * {by}"
    plan.constrain(f"{bx} * {by} >= 32")
    plan.constrain(f"{bx} * {by} <= 1024")
    state = ", ".join(s for s, _t in f.state)
    plan.note(NAME, True, f"each thread computes {oy} consecutive rows of the {f.outer.count} "
              f"x {f.inner.count} window, each on its own {state} (the taps read the "
              f"output's state); the {len(f.reads)} read(s) per tap at input row {f.y} + "
              f"{f.outer.var} are loaded once per row and column and feed every output row's "
              f"taps in the written order; the grid's y divisor is {by} * {oy}", f.outer.loop)
