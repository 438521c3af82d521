"""Line filters: consecutive outputs per thread down the axis of a 1-D tap loop (OUT_Y).

A column filter ``dst[y][x] = sum_t w(t) * src[y + t][x]`` written with one output per
thread reads each input row once per output that needs it: a 13-tap filter reads every input
value 13 times. The usual practice for separable (column) filters is to let a thread walk
several consecutive outputs of its column, keeping the ``N + OUT_Y - 1`` input rows they
need in registers, so each row is loaded once and feeds every output whose window holds it;
the block also gets a y extent, so one launch can trade threads along a row for rows.

Recognised by roles, not by one spelling: a 1-D block of literal size over a 2-D grid with
``y = blockIdx.y`` (a row per block row), or a 2-D block with ``y = blockIdx.y * B +
threadIdx.y``; ``x = blockIdx.x * B + threadIdx.x`` (``B`` the literal or ``blockDim.x``);
a bounds check (an early return or an ``if`` around the rest) that bounds y from above only
or not at all (then the grid's y extent, a kernel argument, is the bound); an accumulator
``T acc = init;``; ONE tap loop with compile-time bounds, written ``for (int t = lo; t <=
hi; ++t)`` or ``int t = lo; while (t <= hi) { ...; ++t; }``, whose body declares locals and
then accumulates ``acc += E`` (``acc = acc + E``, ``acc = fmaf(w, v, acc)``; optionally
under ``if (C)``); one store ``out[IDX] = f(acc)`` after it, ``IDX`` linear in y. Exactly
one factor of ``E`` (the *value*) depends on y, and it (and ``C``) reads y and t only through
``y + t`` (checked on polynomials of the index expressions, single-assignment locals
expanded; calls in it must be pure or read-only, :mod:`.conv_reads`): mirrored or clamped
edges through a helper or ternaries qualify. The other factors (the *weight*) must not read y.

The rewrite: ``y`` becomes the thread's first row ``((blockIdx.y * BLOCK_Y + threadIdx.y) *
OUT_Y)``; the input rows ``r = 0 .. N + OUT_Y - 2`` are read once into a register window
(each where the first output that needs it passes the bounds check, so nothing is read that
the kernel did not read), all before the first add so the reads are in flight together, then
each row is added to every output ``k`` whose window holds it, at tap ``t = lo + r - k``: per output, the taps arrive in the written order, each addend written as in the kernel
(the value factor replaced by the register), so results are bit-identical. Each output's
store is guarded by the check at its own row. Anything else in the family is refused with
the reason and the line; a kernel whose loop does not march along y is left to others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    shares_or_syncs,
    strip,
    subscript_index,
    text,
    walk,
    write_target,
)
from workbench.templater.conv import (
    _acc_decl,
    _Accumulate,
    _accumulation,
    _compile_time_defs,
    _const,
    _declared,
    _Expr,
    _pragma,
    _read_bases,
    _window,
    checked_store,
)
from workbench.templater.conv_reads import call_arguments, unmovable_call, why_unmovable
from workbench.templater.macros import integer_macros
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, apply_or_note, fresh_names, render
from workbench.templater.rules import literal, scale_divisor
from workbench.templater.stencil import (
    Poly,
    _bounds_from_above,
    _guard,
    point_decls,
    poly_text,
    statements,
)
from workbench.templater.warp_regs import _min_blocks_follows

#: Outputs per thread down the column. The register window is OUT_Y + N - 1 values of one
#: column (a 1-D window, unlike the 2-D convolution's rows of columns), so deeper walks fit
#: than :data:`.conv.OUT_Y_VALUES`; values whose window passes :data:`MAX_WINDOW` are left out.
OUT_Y_VALUES = [1, 2, 4, 8, 16]
MAX_WINDOW = 64
#: Threads along x: a warp's row of 32 reads whole 128-byte lines of a float row (coalesced),
#: so x starts at 32 (or the written size, if smaller).
BLOCK_X_VALUES = [32, 64, 128, 256, 512]
BLOCK_Y_VALUES = [1, 2, 4, 8]
#: Registers besides the window and the sums (indices, bounds, pointers): under a cap the
#: compiler overlaps the rows' reads with the sums (colfilter13 at OUT_Y = 16: 48 registers
#: under a 64-register cap, no spill; a 7-tap box at OUT_Y = 16: 56), ptxas -v, sm_90.
WINDOW_WORKING_REGS = 12


@dataclass(frozen=True)
class _Taps:
    """The tap loop: ``for`` or ``while`` over ``var`` from ``lo``, ``count`` steps."""

    loop: Node
    var: str
    lo: int
    count: int
    body: list[Node]  # its statements (a while loop's final increment left out)
    counter: Node | None = None  # ``int t = lo;`` before a while loop (the rewrite drops it)


@dataclass(frozen=True)
class _Facts:
    y: str
    taps: _Taps
    acc: _Accumulate
    addend: Node  # the accumulating statement (under the if, where there is one)
    value: Node  # the one factor that reads the row
    value_type: str
    body_locals: dict[str, tuple[str, Node]]  # tap-loop local -> (type, value)
    decl: Node
    init: Node
    store_stmt: Node
    target: Node
    rhs: Node
    step: Poly
    cond: Node | None  # the bounds check (None: the kernel has none)
    out_when_true: bool
    extra_bound: str  # "" or the kernel argument that bounds y (the grid's y extent)
    src: str
    out: str
    pragmas: tuple[Node, ...] = ()  # the author's `#pragma`s before the loop (dropped)


def lift_line(plan: Plan) -> bool:
    """OUT_Y for a 1-D tap loop along y; False when the kernel is not of the family or the
    analysis refused (the finding says why)."""
    shape = _block_shape(plan)
    if shape is None or _shares(plan):
        return False
    stmts = statements(plan.body)
    idx = point_decls(plan, stmts, "xy" if len(plan.block) == 2 else "x", "OUT_Y")
    if "x" not in idx:
        return False
    if "y" not in idx:
        if shape[1] != 1:
            return False
        ydecl = _row_decl(stmts)
        if ydecl is None:
            return False
        idx["y"] = ydecl
    loops = [n for s in stmts for n in walk(s) if n.type in ("for_statement", "while_statement")]
    if len(loops) != 1:
        return False
    return apply_or_note(plan, "OUT_Y", lambda: _analyse(plan, stmts, idx, loops[0]))


def _block_shape(plan: Plan) -> tuple[int, int] | None:
    """(threads along x, along y) of a 1-D block over a 2-D grid or a 2-D block."""
    if len(plan.block) == 1 and len(plan.grid) == 2 and literal(plan.block[0]) is not None:
        return literal(plan.block[0]) or 0, 1
    if len(plan.block) == 2 and len(plan.grid) == 2 and \
            all(literal(b) is not None for b in plan.block):
        return literal(plan.block[0]) or 0, literal(plan.block[1]) or 0
    return None


def _shares(plan: Plan) -> bool:
    return shares_or_syncs(plan.body)


def _row_decl(stmts: list[Node]) -> tuple[Node, str, Node] | None:
    """``int y = blockIdx.y;`` at the top level (a block of one row): (decl, name, value)."""
    for s in stmts:
        if s.type != "declaration":
            continue
        ds = s.children_by_field_name("declarator")
        if len(ds) != 1 or ds[0].type != "init_declarator":
            continue
        value = ds[0].child_by_field_name("value")
        if value is not None and builtin(value, "blockIdx") == "y":
            return s, text(ds[0].child_by_field_name("declarator")), value
    return None


def _taps(plan: Plan, loop: Node, defs: dict[str, str], region: list[Node]) -> _Taps:
    if loop.type == "for_statement":
        w = _window(plan, loop, defs)
        lo = _const(w.lo_text, defs)
        assert lo is not None
        return _Taps(loop, w.var, lo, w.count, w.body)
    cond, body = loop.child_by_field_name("condition"), loop.child_by_field_name("body")
    if cond is not None and cond.type == "condition_clause" and cond.named_child_count == 1:
        cond = cond.named_children[0]
    parts = binary(strip(cond)) if cond is not None else None
    inner = statements(body) if body is not None and body.type == "compound_statement" else []
    if parts is None or parts[1] not in ("<", "<=") or strip(parts[0]).type != "identifier" \
            or not inner:
        raise Refused("the tap loop is not `while (t < hi) { ...; ++t; }`", loop)
    var = text(strip(parts[0]))
    step = text(inner[-1]).replace(" ", "").rstrip(";")
    if step not in (f"++{var}", f"{var}++", f"{var}+=1", f"{var}={var}+1"):
        raise Refused(f"the tap loop over {var} does not end with `++{var};`", inner[-1])
    counter = next((s for s in region if s.type == "declaration" and s.end_byte <= loop.start_byte
                    and [_declared(d) for d in s.children_by_field_name("declarator")] == [var]),
                   None)
    start = counter.children_by_field_name("declarator")[0].child_by_field_name("value") \
        if counter is not None else None
    lo, hi = (_const(text(start), defs) if start is not None else None), \
        _const(text(parts[2]), defs)
    if counter is None or start is None or lo is None or hi is None:
        raise Refused(f"the tap loop over {var} does not start from a compile-time "
                      f"`int {var} = lo;` and stop at a compile-time bound", loop)
    count = hi - lo + (1 if parts[1] == "<=" else 0)
    if not 1 <= count <= 64:
        raise Refused(f"the tap loop over {var} has {count} steps (1 .. 64 are unrolled)", loop)
    for n in walk(plan.body):
        if n.type in ("assignment_expression", "update_expression") and \
                not (inside_node(n, inner[-1])):
            target = write_target(n)
            if target is not None and text(target) == var:
                raise Refused(f"`{text(n)}` assigns the tap counter {var} besides its step", n)
    after = [n for s in region if s.start_byte >= loop.end_byte for n in walk(s)
             if n.type == "identifier" and text(n) == var]
    if after:
        raise Refused(f"the tap counter {var} is read after its loop", after[0])
    return _Taps(loop, var, lo, count, inner[:-1], counter)


def inside_node(n: Node, outer: Node) -> bool:
    return outer.start_byte <= n.start_byte and n.end_byte <= outer.end_byte


def _analyse(plan: Plan, stmts: list[Node], idx: dict[str, tuple[Node, str, Node]],
             loop: Node) -> Callable[[], None] | None:
    ydecl, y, _ = idx["y"]
    x = idx["x"][1]
    region = stmts[stmts.index(ydecl) + 1:] if ydecl in stmts else []
    try:
        _, cond, out_when_true, guarded = _guard(region)
    except Refused:  # no check: every thread's point is inside the grid, rows bounded by it
        cond, out_when_true, guarded = None, True, region
    if loop not in guarded:
        return None  # the loop is not at the top of the guarded work: not this family
    defs = _compile_time_defs(plan)
    taps = _taps(plan, loop, defs, guarded)
    t = taps.var
    expr = _Expr(plan, {x, y, t})
    body_decls = [s for s in taps.body if s.type == "declaration"]
    rest = [s for s in taps.body if s.type != "declaration"]
    if len(rest) != 1 or taps.body[-1] is not rest[0]:
        return None  # not one accumulation: not a tap loop
    acc = _accumulation(rest[0], expr, y)
    marching = [v for v in acc.value if t in expr.names(v) and expr.via_sum(v, y, t) is None]
    if not marching:
        return None  # the row is not read through the tap: not a line filter along y
    value = marching[0]
    for other in acc.value:
        if other is not value:  # a second factor reads the row: a weight that moves with it
            raise Refused(f"the weight `{text(other)}` depends on {y}: it would differ "
                          "between the outputs of one thread", other)
    parts = [value, *([acc.cond] if acc.cond is not None else [])]
    if any(expr.via_sum(p, y, t) is not None for p in parts):
        return None  # reads y other than through y + t: another family (a row dot, ...)
    for w in acc.weight:
        if y in expr.names(w) or acc.acc in expr.names(w):
            raise Refused(f"the weight `{text(w)}` depends on {y}", w)
    body_locals = _body_locals(body_decls, expr)
    for part in [*parts, *acc.weight, *body_decls]:
        call = unmovable_call(plan.source, part)
        if call is not None:
            raise Refused(why_unmovable(plan.source, call), call)
    for part in [*parts, *acc.weight]:
        for name in expr.names(part):
            if name in expr.locals and name not in expr.values and name not in {x, y, t}:
                raise Refused(f"`{name}` (read by `{text(part)}`) is assigned more than once",
                              part)
    src = _input(plan, expr, value)
    for n in walk(loop):
        if n.type in ("assignment_expression", "update_expression"):
            tt = write_target(n) or n
            if tt.type != "identifier" or text(tt) not in {acc.acc, t}:
                raise Refused(f"`{text(n)}` writes inside the tap loop", n)
        if n.type in ("return_statement", "break_statement", "continue_statement",
                      "goto_statement"):
            raise Refused(f"`{text(n)}` leaves the tap loop early", n)
    checked = list(walk(cond)) if cond is not None else []
    bad = _bounds_from_above(cond, y, out_when_true) if cond is not None else None
    if bad is not None:
        raise Refused(f"`{text(bad)}` does not bound {y} from above only", bad)
    for n in checked:
        if n.type == "identifier" and text(n) in expr.values and y in expr.names(n):
            raise Refused(f"the bounds check reads `{text(n)}`, which depends on {y}", n)
    extra = "" if any(n.type == "identifier" and text(n) == y for n in checked) \
        else _grid_bound(plan, ydecl)
    decl = _acc_decl(guarded, acc.acc) or _acc_decl(region, acc.acc)
    if decl is None:
        raise Refused(f"no `T {acc.acc} = init;` declares the accumulator before the loop", loop)
    # between the accumulator and the loop: declarations that leave it alone (kept) and
    # the author's pragmas (dropped: the rewrite unrolls its own loops)
    between = [s for s in [*region, *guarded] if s is not decl and s is not taps.counter and
               s.end_byte <= loop.start_byte and s.start_byte >= decl.start_byte]
    pragmas = tuple(s for s in between if _pragma(s))
    for s in between:
        if s not in pragmas and (s.type != "declaration" or acc.acc in expr.names(s)):
            raise Refused(f"`{text(s)}` stands between the accumulator and the tap loop", s)
    after = guarded[guarded.index(loop) + 1:]
    if len(after) != 1:
        raise Refused("the tap loop is not followed by exactly one store `out[i] = f(acc)`",
                      after[0] if after else loop)
    target, rhs, out, step, init = checked_store(plan, expr, after[0], decl, src, (x, y),
                                                 frozenset({t}))
    _only_row_builtins(plan, ydecl)
    addend = rest[0]
    if acc.cond is not None:
        cons = rest[0].child_by_field_name("consequence")
        assert cons is not None
        addend = statements(cons)[0] if cons.type == "compound_statement" else cons
    vtype = _value_type(plan, value, body_locals, plan.kernel.param(src).base_type)
    if vtype is None:
        raise Refused(f"the type of the value `{text(value)}` is not known (a read of the "
                      "input, a local of the loop, a helper of this file or a ternary of "
                      "those is): the register holding it would convert it", value)
    facts = _Facts(y, taps, acc, addend, value, vtype, body_locals, decl, init, after[0],
                   target, rhs, step, cond, out_when_true, extra, src, out, pragmas)
    return lambda: _emit(plan, idx, facts)


def _value_type(plan: Plan, node: Node, body_locals: dict[str, tuple[str, Node]],
                elem: str) -> str | None:
    """The C type of the value factor: ``elem`` for a read of the input, a loop local's
    declared type, a helper's return type, a float literal's; a ternary's where both sides
    agree (None: not known, the lift refuses rather than convert)."""
    node = node if node.type == "cast_expression" else strip(node)
    if node.type == "cast_expression":
        typ = node.child_by_field_name("type")
        return text(typ) if typ is not None else None
    if node.type in ("subscript_expression", "pointer_expression"):
        return elem
    if node.type == "identifier" and text(node) in body_locals:
        return body_locals[text(node)][0]
    if node.type == "number_literal":
        raw = text(node).lower()
        return "float" if raw.endswith("f") else "double" if "." in raw or "e" in raw \
            else "int"
    if node.type == "call_expression":
        name = text(node.child_by_field_name("function"))
        listed = node.child_by_field_name("arguments")
        args = list(listed.named_children) if listed is not None else []
        if name == "__ldg" and len(args) == 1 and strip(args[0]).type == "pointer_expression" \
                and text(strip(args[0]).child_by_field_name("operator")) == "&":
            return elem  # `__ldg(&in[i])`: a read of the input through the read-only path
        for fn in walk(plan.source.tree.root_node):
            if fn.type != "function_definition":
                continue
            decl = fn.child_by_field_name("declarator")
            inner = decl.child_by_field_name("declarator") if decl is not None else None
            typ = fn.child_by_field_name("type")
            if inner is not None and text(inner) == name and typ is not None:
                return text(typ)
        return None
    if node.type == "conditional_expression":
        sides = [node.child_by_field_name(k) for k in ("consequence", "alternative")]
        types = {_value_type(plan, n, body_locals, elem) if n is not None else None
                 for n in sides}
        return types.pop() if len(types) == 1 else None
    return None


def _body_locals(decls: list[Node], expr: _Expr) -> dict[str, tuple[str, Node]]:
    """The tap loop's own locals: name -> (type, value); each a plain single-assignment
    variable (the rewrite reads it at its definition)."""
    out: dict[str, tuple[str, Node]] = {}
    for s in decls:
        typ = s.child_by_field_name("type")
        for d in s.children_by_field_name("declarator"):
            name = _declared(d)
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            if value is None or typ is None or \
                    strip(d.child_by_field_name("declarator") or d).type != "identifier" or \
                    name not in expr.values:
                raise Refused(f"`{text(s)}` in the tap loop is not a plain local with one "
                              "value (the rewrite reads it where it is defined)", s)
            out[name] = (text(typ), value)
    return out


def _input(plan: Plan, expr: _Expr, value: Node) -> str:
    """The one input array the value reads (through locals and read-only helpers)."""
    arrays = set(_read_bases(plan, value))
    for name in list(arrays):
        held = expr.values.get(name)
        if held is not None:
            arrays.discard(name)
            arrays |= _read_bases(plan, held) | {n for n in expr.names(held) if plan.pointer(n)}
    for name in [n for n in expr.names(value) if n in expr.values]:
        arrays |= _read_bases(plan, expr.values[name])
    arrays |= {n for arg in call_arguments(plan.source, value) for n in expr.names(arg)
               if plan.pointer(n)}
    inputs = sorted(a for a in arrays if plan.pointer(a))
    if len(inputs) != 1:
        raise Refused(f"the value read per tap reads {inputs or 'no input'}: one input is "
                      "modelled", value)
    return inputs[0]


def _grid_bound(plan: Plan, ydecl: Node) -> str:
    """The kernel argument that bounds y where the kernel checks none: the grid's y extent
    over blocks of one row (``grid = [..., "h"]`` launched with ``h`` itself)."""
    rows = literal(plan.block[1]) if len(plan.block) == 2 else 1
    arg = next((a for a, e in plan.scalars.items() if e.replace(" ", "") ==
                plan.grid[1].replace(" ", "")), None)
    if rows != 1 or arg is None:
        raise Refused(f"the kernel does not bound its row and the grid's y extent "
                      f"`{plan.grid[1]}` is not a kernel argument: rows past it would be "
                      "written", ydecl)
    return arg


def _only_row_builtins(plan: Plan, ydecl: Node) -> None:
    """The block's y index, its size and the grid are read only by the row's declaration."""
    for n in walk(plan.body):
        if n.type != "field_expression" or inside_node(n, ydecl):
            continue
        for name in ("threadIdx", "blockDim", "blockIdx", "gridDim"):
            d = builtin(n, name)
            if d in ("y", "z") or (name == "gridDim" and d is not None):
                raise Refused(f"`{text(n)}` is read outside the row's declaration: the "
                              "block's rows change with BLOCK_Y and OUT_Y", n)


# -- the rewrite ---------------------------------------------------------------------------

def _emit(plan: Plan, idx: dict[str, tuple[Node, str, Node]], f: _Facts) -> None:
    data, rw = plan.source.data, plan.rw
    macros = integer_macros(plan.source)
    bx_size = idx["x"][2]
    named = text(strip(bx_size))
    bx = named if named in macros and builtin(bx_size, "blockDim") is None \
        else fresh_names(plan, ["BLOCK_X"])["BLOCK_X"]
    two_d = len(idx["y"]) == 3 and idx["y"][2] is not None and \
        builtin(idx["y"][2], "blockIdx") is None
    by_size = idx["y"][2] if two_d else None
    by_named = text(strip(by_size)) if by_size is not None else ""
    by = by_named if by_named in macros and by_size is not None and \
        builtin(by_size, "blockDim") is None else fresh_names(plan, ["BLOCK_Y"])["BLOCK_Y"]
    oy = fresh_names(plan, ["OUT_Y"])["OUT_Y"]
    if builtin(bx_size, "blockDim") is None:
        rw.replace(bx_size, bx)
    ydecl = idx["y"][0]
    yval = ydecl.children_by_field_name("declarator")[0].child_by_field_name("value")
    assert yval is not None
    if two_d:
        assert by_size is not None
        if builtin(by_size, "blockDim") is None:
            rw.replace(by_size, by)
        rw.insert(yval.start_byte, "(")
        rw.insert(yval.end_byte, f") * {oy}")
    else:
        rw.replace(yval, f"((int)blockIdx.y * {by} + (int)threadIdx.y) * {oy}")
    y, t, n = f.y, f.taps.var, f.taps.count
    typ = text(f.decl.child_by_field_name("type"))
    rw.replace(f.decl, f"{typ} wb_acc[{oy}];  // {oy} consecutive outputs of this thread's "
                       f"column\n#pragma unroll\n  for (int wb_k = 0; wb_k < {oy}; ++wb_k) "
                       f"wb_acc[wb_k] = {text(f.init)};")
    for pragma in f.pragmas:
        rw.replace(pragma, "")
    if f.taps.counter is not None:
        rw.replace(f.taps.counter, f"// the tap counter {t}: declared per tap below")

    def passes(shift: str) -> str:
        within = f"({y} + {shift}) < {f.extra_bound}" if f.extra_bound else ""
        if f.cond is None:
            return within
        c = render(data, f.cond, lambda m: f"({y} + {shift})"
                   if m.type == "identifier" and text(m) == y else None)
        ok = f"!({c})" if f.out_when_true else f"({c})"
        return f"{ok} && {within}" if within else ok

    def expand(m: Node, depth: int = 0) -> str | None:
        if m.type != "identifier" or text(m) not in f.body_locals or depth > 12:
            return None
        typ_, val = f.body_locals[text(m)]
        return f"(({typ_})({render(data, val, lambda q: expand(q, depth + 1))}))"

    value = render(data, f.value, expand)
    in_window = f"({render(data, f.acc.cond, expand)})" if f.acc.cond is not None else ""
    addend = render(data, f.addend, lambda m: "(wb_win[wb_r])" if m.start_byte == f.value.start_byte
                    and m.end_byte == f.value.end_byte else "wb_acc[wb_k]"
                    if m.type == "identifier" and text(m) == f.acc.acc else expand(m))
    load = (f"      const int {t} = ({f.taps.lo}) + wb_r;\n" +
            (f"      wb_in[wb_r] = {in_window};\n      if (wb_in[wb_r]) " if in_window
             else "      ") +
            f"wb_win[wb_r] = ({f.value_type})({value});\n")
    # Two phases (the register window): every input row is read into wb_win first, then the
    # outputs are accumulated from the registers. Reading all rows before the first use lets
    # the reads be in flight together; accumulating each row as it arrives (one loop) makes
    # every read wait for the one before (a guarded read sits in its own branch, and the
    # compiler does not move the next read above the adds that use this one). Per output the
    # taps still arrive in the written order, so the sums are bit-identical.
    loop = (
        f"// {n} + {oy} - 1 input rows feed the {oy} outputs: each is loaded once into a "
        f"register window, then every output is summed from it (in the written tap order)\n"
        f"  {f.value_type} wb_win[{n} + {oy} - 1];\n"
        + (f"  bool wb_in[{n} + {oy} - 1];\n" if in_window else "") +
        f"#pragma unroll\n  for (int wb_r = 0; wb_r < {n} + {oy} - 1; ++wb_r) {{\n"
        f"    // read where the first output whose window holds the row passes the check\n"
        f"    const int wb_first = wb_r > {n - 1} ? wb_r - {n - 1} : 0;\n"
        f"    wb_win[wb_r] = ({f.value_type})0;\n"
        + ("    wb_in[wb_r] = false;\n" if in_window else "") +
        f"    if ({passes('wb_first')}) {{\n{load}    }}\n  }}\n"
        f"#pragma unroll\n  for (int wb_r = 0; wb_r < {n} + {oy} - 1; ++wb_r) {{\n"
        f"#pragma unroll\n    for (int wb_k = 0; wb_k < {oy}; ++wb_k) {{\n"
        f"      if (wb_r - wb_k >= 0 && wb_r - wb_k < {n}"
        + (" && wb_in[wb_r]" if in_window else "") + ") {\n"
        f"        const int {t} = ({f.taps.lo}) + wb_r - wb_k;\n"
        f"        {addend}\n"
        f"      }}\n    }}\n  }}")
    rw.replace(f.taps.loop, loop)
    index = text(subscript_index(f.target))
    rhs = render(data, f.rhs, lambda m: "wb_acc[wb_k]" if m.type == "identifier"
                 and text(m) == f.acc.acc else None)
    rw.replace(f.store_stmt,
               f"#pragma unroll\n  for (int wb_k = 0; wb_k < {oy}; ++wb_k) {{  // guarded per "
               f"output\n    if ({passes('wb_k')}) {f.out}[({index}) + (long long)wb_k * "
               f"({poly_text(f.step)})] = {rhs};\n  }}")
    _params(plan, idx, f, (bx, by, oy), two_d)


def _extra_regs(plan: Plan, f: _Facts) -> int:
    """Registers the window's sums hold besides the rows: weights read from a kernel
    pointer (global memory: the compiler keeps the N loaded taps, and their addresses, for
    every output; taps in ``__constant__`` or literals are operands) and the per-row flags
    of an add under an ``if``. With them a 9-tap zero-padded walk at OUT_Y = 4 under a
    32-register cap spilled 24 bytes, a 7-tap walk at OUT_Y = 16 under 64 registers 12
    (ptxas -v, sm_90)."""
    inside = (f.value.start_byte, f.value.end_byte)
    weights_global = any(
        n.type == "identifier" and plan.pointer(text(n)) and
        not inside[0] <= n.start_byte < inside[1] for n in walk(f.addend))
    return (f.taps.count + 8 if weights_global else 0) + (4 if f.acc.cond is not None else 0)


def _params(plan: Plan, idx: dict[str, tuple[Node, str, Node]], f: _Facts,
            names: tuple[str, str, str], two_d: bool) -> None:
    bx, by, oy = names
    wx = literal(plan.block[0]) or 1
    wy = literal(plan.block[1]) or 1 if len(plan.block) == 2 else 1
    for name, written, values, axis in ((bx, wx, BLOCK_X_VALUES, "x"),
                                        (by, wy, BLOCK_Y_VALUES, "y")):
        plan.add_param(name, {"kind": "choice", "values": sorted(
            {written, *(v for v in values if v >= min(values[0], written))}), "default": written,
            "description": f"threads per block along {axis} (as written: {written})"},
            f"{idx[axis][0].start_point.row + 1}: {text(idx[axis][0])}")
    values = [v for v in OUT_Y_VALUES if v + f.taps.count - 1 <= MAX_WINDOW]
    plan.add_param(oy, {"kind": "choice", "values": values, "default": 1,
                        "description": f"consecutive output rows ({f.y}) per thread; each of "
                                       f"the {f.taps.count} + {oy} - 1 input rows is loaded "
                                       "once and feeds every output whose window holds it "
                                       "(as written: 1)"},
                   f"{idx['y'][0].start_point.row + 1}: {text(idx['y'][0])}")
    gx = scale_divisor(plan.grid[0], plan.block[0], bx) or plan.grid[0]
    gy = scale_divisor(plan.grid[1], plan.block[1], f"{by} * {oy}") if two_d else None
    plan.grid = [gx, gy or f"ceil_div({plan.grid[1]}, {by} * {oy})"]
    plan.block = [bx, by]
    plan.launch_bounds = f"{bx} * {by}"
    plan.constrain(f"{bx} * {by} >= 32")
    plan.constrain(f"{bx} * {by} <= 1024")
    if _min_blocks_follows(plan):
        # the register window (N + OUT_Y - 1 rows) and the OUT_Y sums are live together
        # once the rows are read first: a register cap from a minimum of resident blocks
        # below that spills them (a 7-tap window at OUT_Y = 16 under a 32-register cap
        # spilled 8 bytes, ptxas -v, sm_90)
        need = f"{f.taps.count} + 2 * {oy} + {WINDOW_WORKING_REGS + _extra_regs(plan, f)}"
        plan.constrain(f"MIN_BLOCKS_PER_SM == 0 or {need} <= 65536 // (({bx} * {by}) * "
                       "MIN_BLOCKS_PER_SM)")
    bound = f" (rows bounded by {f.extra_bound}, the grid's y extent)" if f.extra_bound else ""
    plan.note("OUT_Y", True, f"each thread computes {oy} consecutive rows of the {f.taps.count}"
              f"-tap filter down its column; {f.src}'s row {f.y} + {f.taps.var} is loaded once "
              f"and feeds every output whose window holds it{bound}; the block is {bx} x {by} "
              f"and the grid's y divisor {by} * {oy}", f.taps.loop)
