"""Z-marching of 3-D stencils (2.5-D blocking in registers) on the parse.

Recognised by roles, not by one spelling: a 3-D block of literal sizes; the point's index
``v = blockIdx.d * L + threadIdx.d`` (``L`` the block size or ``blockDim.d``) for each of
x, y, z at the top level; a bounds check that is either an early return
(``if (... || z >= nz) return;``) or an ``if (... && z < nz) { ... }`` around the rest, whose
z part bounds z from above only (so a plane that fails it fails for every later plane); one
output array stored at one index ``C``, linear in z (``C = z * S + rest``); and an input
array (const, never written) read at ``C`` and at ``C + d * S`` for some ``d`` with
``0 < |d| <= R`` (``R`` up to MAX_RADIUS: the reach fixed by the text). Index expressions
are compared as polynomials over the kernel's names (single-assignment locals expanded), so
``in[i + plane]``, ``in[(z + 1) * nx * ny + y * nx + x]`` and ``in[i + nx * ny]`` are all
the plane above.

The rewrite makes each thread walk ``Z_ITEMS`` consecutive planes: ``z`` becomes
``(blockIdx.z * BLOCK_Z + threadIdx.z) * Z_ITEMS + k`` in an unrolled loop over ``k`` and
the grid's z divisor becomes ``BLOCK_Z * Z_ITEMS`` (tied in the launch rule); the reads of
the planes below / at / above become three registers, loaded once per plane (the plane
above is loaded where the bounds check admits it, the others are rotated); a reach R > 1
keeps the planes ``z - R .. z + R`` in a queue of 2R + 1 registers the same way. Early returns
become ``continue`` (the check is monotone in z, so no later plane is skipped wrongly). The
block sizes are lifted with their uses in the index (BLOCK_X/Y/Z). Assumes, as the author's
kernel does for its own neighbour reads, that the input has the output's layout and does
not alias it. Anything else refuses with the reason and the line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

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
    terms,
    text,
    walk,
    write_target,
)
from workbench.templater.bounds import _counters as enclosing_counters
from workbench.templater.plan import Plan
from workbench.templater.regtile import (
    Refused,
    _locals,
    apply_or_note,
    fresh_names,
    render,
    single_assignment_values,
)
from workbench.templater.rules import literal, scale_divisor

#: the widest z reach a stencil's planes are queued for (a read at ``C + d * S``, |d| <= 4)
MAX_RADIUS = 4

Poly = dict[tuple[str, ...], int]  # monomial (sorted atom names) -> integer coefficient


class Polys:
    """Index expressions as integer polynomials over atoms (parameters, macros, opaque
    sub-expressions), with single-assignment locals expanded except ``keep``."""

    def __init__(self, body: Node, keep: set[str]) -> None:
        self.values = single_assignment_values(body, keep)

    def of(self, node: Node, depth: int = 0) -> Poly:
        return poly_of(node, self.values, depth=depth, divide=True)


def poly_of(node: Node, values: Mapping[str, Node], *, opaque: list[Node] | None = None,
            leaf: Callable[[Node], Poly | None] | None = None, depth: int = 0,
            divide: bool = False) -> Poly:
    """``node`` as an integer polynomial: literals, identifiers (single-assignment locals in
    ``values`` expanded, 12 levels at most), ``leaf``'s own atoms (builtins), unary minus and
    ``+ - *``; with ``divide``, a division of two constants that divides exactly. Anything
    else is one atom: its position when ``opaque`` collects such nodes, else its text."""
    def again(n: Node, d: int = depth) -> Poly:
        return poly_of(n, values, opaque=opaque, leaf=leaf, depth=d, divide=divide)

    node = strip(node)
    v = int_value(node)
    if v is not None:
        return {(): v} if v else {}
    if node.type == "identifier":
        value = values.get(text(node))
        if value is not None and depth < 12:
            return again(value, depth + 1)
        return {(text(node),): 1}
    if leaf is not None:
        found = leaf(node)
        if found is not None:
            return found
    if node.type == "unary_expression" and text(node.child_by_field_name("operator")) == "-":
        arg = node.child_by_field_name("argument")
        if arg is not None:
            return scale(again(arg), -1)
    parts = binary(node)
    if parts is not None and parts[1] in ("+", "-", "*"):
        a, b = again(parts[0]), again(parts[2])
        if parts[1] == "*":
            return mul(a, b)
        return add(a, scale(b, -1 if parts[1] == "-" else 1))
    if divide and parts is not None and parts[1] == "/":
        a, b = again(parts[0]), again(parts[2])
        if set(a) <= {()} and set(b) == {()} and b[()] and a.get((), 0) % b[()] == 0:
            return {(): a.get((), 0) // b[()]} if a.get((), 0) else {}
    if opaque is not None:
        opaque.append(node)
        return {(f"#{node.start_byte}:{node.end_byte}",): 1}
    return {(" ".join(text(node).split()),): 1}


def derivative(p: Poly, atom: str) -> Poly:
    """d ``p`` / d ``atom`` (each monomial's exponent of ``atom`` times its coefficient)."""
    out: Poly = {}
    for m, c in p.items():
        k = m.count(atom)
        if k:
            rest = list(m)
            rest.remove(atom)
            key = tuple(rest)
            out[key] = out.get(key, 0) + c * k
    return {m: c for m, c in out.items() if c}


def add(a: Poly, b: Poly) -> Poly:
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + c
    return {m: c for m, c in out.items() if c}


def scale(a: Poly, k: int) -> Poly:
    return {m: c * k for m, c in a.items() if c * k}


def mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = tuple(sorted(ma + mb))
            out[m] = out.get(m, 0) + ca * cb
    return {m: c for m, c in out.items() if c}


def poly_text(p: Poly) -> str:
    """A ``long long`` expression for ``p`` (atoms are names or parenthesised texts)."""
    out = []
    for m, c in sorted(p.items()):
        factors_ = [f"({a})" if not a.isidentifier() else a for a in m]
        body = " * ".join([f"(long long){c}", *factors_]) if c != 1 or not m else \
            " * ".join([f"(long long){factors_[0]}", *factors_[1:]])
        out.append(body)
    return " + ".join(out) if out else "0"


def statements(block: Node) -> list[Node]:
    return [c for c in block.named_children if c.type != "comment"]


def index_decls(plan: Plan, stmts: list[Node], dims: str) -> dict[str, tuple[Node, str, Node]]:
    """dim -> (declaration, variable, block-size node) for ``v = blockIdx.d * L +
    threadIdx.d`` at the top level (``L`` the block's literal size or ``blockDim.d``)."""
    out: dict[str, tuple[Node, str, Node]] = {}
    for s in stmts:
        if s.type != "declaration":
            continue
        decls = s.children_by_field_name("declarator")
        for d in decls:
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            name = text(d.child_by_field_name("declarator")) if value is not None else ""
            if value is None:
                continue
            ts = [t for sign, t in terms(value) if sign == 1]
            if len(ts) != 2 or len(terms(value)) != 2:
                continue
            thread = [t for t in ts if builtin(t, "threadIdx") is not None]
            rest = [t for t in ts if t not in thread]
            if len(thread) != 1 or len(rest) != 1:
                continue
            dim = builtin(thread[0], "threadIdx")
            fs = factors(rest[0])
            if dim is None or dim not in dims or len(fs) != 2 or dim in out:
                continue
            blk = [f for f in fs if builtin(f, "blockIdx") == dim]
            size = [f for f in fs if builtin(f, "blockIdx") is None]
            if len(blk) != 1 or len(size) != 1:
                continue
            want = literal(plan.block[dims.index(dim)])
            if builtin(size[0], "blockDim") != dim and int_value(size[0]) != want:
                continue
            if len(decls) != 1:
                raise Refused(f"`{text(s)}` declares the {dim} index with other variables", s)
            out[dim] = (s, name, size[0])
    return out


def point_decls(plan: Plan, stmts: list[Node], dims: str, knob: str
                ) -> dict[str, tuple[Node, str, Node]]:
    """:func:`index_decls`; where it refuses (a point declared with other variables), the
    refusal is noted against ``knob`` with its line and no index is returned, so a family
    that looks for the point before its own analysis passes the kernel on instead of
    failing the whole lift."""
    try:
        return index_decls(plan, stmts, dims)
    except Refused as exc:
        plan.note(knob, False, exc.reason, exc.node)
        return {}


def _comparisons(cond: Node, joiner: str) -> list[Node]:
    parts = binary(cond)
    if parts is not None and parts[1] == joiner:
        return _comparisons(parts[0], joiner) + _comparisons(parts[2], joiner)
    return [strip(cond)]


def _bounds_from_above(cond: Node, z: str, out_when_true: bool) -> Node | None:
    """The first comparison of ``cond`` about ``z`` that does not bound z from above only
    (None when all do): the check must be monotone in z."""
    ok_left = (">=", ">") if out_when_true else ("<", "<=")
    ok_right = ("<=", "<") if out_when_true else (">", ">=")
    for c in _comparisons(cond, "||" if out_when_true else "&&"):
        if not any(text(n) == z for n in walk(c) if n.type == "identifier"):
            continue
        parts = binary(c)
        if parts is None:
            return c
        left, op, right = parts
        mentions_r = any(text(n) == z for n in walk(right) if n.type == "identifier")
        mentions_l = any(text(n) == z for n in walk(left) if n.type == "identifier")
        if text(strip(left)) == z and not mentions_r and op in ok_left:
            continue
        if text(strip(right)) == z and not mentions_l and op in ok_right:
            continue
        return c
    return None


def _guard(region: list[Node]) -> tuple[Node, Node, bool, list[Node]]:
    """(guard statement, condition, out_when_true, statements it guards)."""
    for k, s in enumerate(region):
        if s.type != "if_statement":
            continue
        cons = s.child_by_field_name("consequence")
        cond = s.child_by_field_name("condition")
        if cond is not None and cond.type == "condition_clause" and cond.named_child_count == 1:
            cond = cond.named_children[0]
        if cons is None or cond is None or s.child_by_field_name("alternative") is not None:
            continue
        inner = statements(cons) if cons.type == "compound_statement" else [cons]
        if len(inner) == 1 and inner[0].type == "return_statement":
            return s, cond, True, region[k + 1:]
        if k == len(region) - 1 and cons.type == "compound_statement":
            return s, cond, False, inner
        break
    raise Refused("no bounds check (`if (... z >= nz) return;` or `if (... z < nz) { ... }`) "
                  "guards the point's work", region[0] if region else None)


def lift_stencil(plan: Plan) -> bool:
    """Z_ITEMS: z-marching of a 3-D stencil with the neighbour planes in registers; False
    when the kernel is not of the family or the analysis refused (the finding says why)."""
    if len(plan.block) != 3 or any(literal(b) is None for b in plan.block):
        return False
    if shares_or_syncs(plan.body):
        return False
    stmts = statements(plan.body)

    def analyse() -> Callable[[], None] | None:
        idx = index_decls(plan, stmts, "xyz")
        if set(idx) != {"x", "y", "z"}:
            return None
        return _analyse(plan, stmts, idx)
    return apply_or_note(plan, "Z_ITEMS", analyse)


def _analyse(plan: Plan, stmts: list[Node], idx: dict[str, tuple[Node, str, Node]]
             ) -> Callable[[], None] | None:
    zdecl, z, _zsize = idx["z"]
    kz = stmts.index(zdecl)
    region = stmts[kz + 1:]
    polys = Polys(plan.body, {v for _d, v, _s in idx.values()})
    # the stores: one output array at one index
    stores: list[tuple[str, Node]] = []
    writes: set[str] = set()
    for n in (m for s in region for m in walk(s)):
        if n.type in ("assignment_expression", "update_expression"):
            left = write_target(n) or n
            if left.type == "subscript_expression":
                arr = text(strip(left.child_by_field_name("argument")))  # type: ignore[arg-type]
                writes.add(arr)
                stores.append((arr, left))
    if len(writes) != 1 or not stores:
        other = [s for a, s in stores if a != stores[0][0]]
        raise Refused(f"the point's work stores to {sorted(writes) or 'nothing'}: one output "
                      "array is modelled", other[0] if other else zdecl)
    out = next(iter(writes))
    center = polys.of(subscript_index(stores[0][1]))
    if any(polys.of(subscript_index(s)) != center for _a, s in stores):
        raise Refused(f"{out} is stored at more than one index", stores[0][1])
    step: Poly = {}
    for m, c in center.items():
        if m.count(z) > 1:
            raise Refused(f"the index of {out} is not linear in {z}", stores[0][1])
        if m.count(z) == 1:
            rest = list(m)
            rest.remove(z)
            step[tuple(rest)] = c
    if not step or any(z in m for m in step):
        return None
    # reads of the neighbour planes
    planes: dict[str, list[tuple[Node, int]]] = {}
    for n in (m for s in region for m in walk(s)):
        if n.type != "subscript_expression" or any(n == s for _a, s in stores):
            continue
        arr = text(strip(n.child_by_field_name("argument")))  # type: ignore[arg-type]
        if not plan.pointer(arr) or arr == out:
            continue
        diff = add(polys.of(subscript_index(n)), scale(center, -1))
        for d in range(-MAX_RADIUS, MAX_RADIUS + 1):
            if diff == scale(step, d):
                planes.setdefault(arr, []).append((n, d))
    marched = [a for a, reads in planes.items() if {d for _n, d in reads} >= {0} and
               {d for _n, d in reads} - {0}]
    if not marched:
        counted = _counter_plane_read(plan, region, out, polys, center, step)
        if counted is not None:
            raise Refused(counted[1], counted[0])
        plan.note("Z_ITEMS", False, f"no input is read at the planes above or below the "
                  f"point ({out}'s index +- {poly_text(step)})", zdecl)
        return None
    if len(marched) > 1:
        raise Refused(f"several inputs ({', '.join(marched)}) are read at neighbour planes: "
                      "one is marched", zdecl)
    src = marched[0]
    param = plan.kernel.param(src)
    if not param.is_const or src in writes:
        raise Refused(f"{src} is not a const input (its planes are kept in registers)", zdecl)
    planes[src] = [(ldg_call(n), d) for n, d in planes[src]]
    for n, _d in planes[src]:
        if n.parent is not None and n.parent.type == "pointer_expression":
            raise Refused(f"`{text(n.parent)}` takes the address of a plane read", n)
    guard, cond, out_when_true, guarded = _guard(region)
    bad = _bounds_from_above(cond, z, out_when_true)
    if bad is not None:
        raise Refused(f"`{text(bad)}` does not bound {z} from above only: a plane that fails "
                      "the check would not fail for every later plane", bad)
    for n in walk(cond):
        if n.type == "identifier" and text(n) in polys.values and any(
                text(m) == z for m in walk(polys.values[text(n)])):
            raise Refused(f"the bounds check reads `{text(n)}`, which depends on {z}", n)
    first = next((k for k, s in enumerate(guarded) if any(
        m.type == "subscript_expression" for m in walk(s))), None)
    if first is None:
        raise Refused("the point's work reads and stores nothing after the bounds check",
                      guard)
    at = guarded[first]
    before = region[:region.index(guard)] + guarded[:first] if out_when_true \
        else region[:-1] + guarded[:first]
    for s in before:
        if any(n.type == "return_statement" for n in walk(s)) and s is not guard:
            raise Refused(f"`{text(s)}` returns before the planes are loaded", s)
    names_needed = {text(n) for n in walk(subscript_index(stores[0][1])) if n.type == "identifier"}
    local_decls = {lo.name: lo.decl for lo in _locals(plan.body).values()}
    for name in names_needed:
        decl = local_decls.get(name)
        if decl is not None and decl.start_byte >= at.start_byte:
            raise Refused(f"`{name}` (in {out}'s index) is declared after the first read",
                          decl)
    grid_z = scale_divisor(plan.grid[2], plan.block[2], "BLOCK_Z * Z_ITEMS")
    grid_xy = [scale_divisor(plan.grid[i], plan.block[i], f"BLOCK_{'XY'[i]}") for i in (0, 1)]
    if grid_z is None or None in grid_xy:
        raise Refused(f"the grid {plan.grid} does not divide by the block {plan.block}", zdecl)

    def emit() -> None:
        _emit(plan, idx, guard, cond, out_when_true, region, at, src, planes[src], step,
              stores[0][1], [grid_xy[0], grid_xy[1], grid_z])  # type: ignore[list-item]
    return emit


def _counter_plane_read(plan: Plan, region: list[Node], out: str, polys: Polys, center: Poly,
                        step: Poly) -> tuple[Node, str] | None:
    """The first input read whose plane moves with a constant-bound loop counter around it
    (``in[AT(z + k - 1, ..)]`` in ``for (int k = 0; k < 3; ++k)``: the index's derivative by
    ``k`` is the plane step) and why the plane registers do not take it, else None."""
    for n in (m for s in region for m in walk(s)):
        if n.type != "subscript_expression":
            continue
        arr = text(strip(n.child_by_field_name("argument")))  # type: ignore[arg-type]
        if not plan.pointer(arr) or arr == out:
            continue
        diff = add(polys.of(subscript_index(n)), scale(center, -1))
        for var, (lo, hi) in sorted(enclosing_counters(n).items()):
            if derivative(diff, var) == step:
                return n, (f"`{text(n)}` reads the plane moving with the loop counter `{var}` "
                           f"({lo} .. {hi}; {out}'s index + {var} * {poly_text(step)}): the "
                           "plane registers take reads at constant plane offsets only (the "
                           "taps' loop is not unrolled into named planes)")
    return None


def ldg_call(read: Node) -> Node:
    """``__ldg(&A[i])`` where ``read`` (``A[i]``) is that call's one argument's operand, else
    ``read``: the call loads what the subscript reads (through the read-only path, which the
    plane registers' own loads take), so its register replaces the whole call."""
    amp = read.parent
    args = amp.parent if amp is not None else None
    call = args.parent if args is not None else None
    if amp is None or amp.type != "pointer_expression" or \
            text(amp.child_by_field_name("operator")) != "&" or args is None or \
            args.type != "argument_list" or args.named_child_count != 1 or call is None or \
            call.type != "call_expression" or \
            text(call.child_by_field_name("function")) != "__ldg":
        return read
    return call




def _emit(plan: Plan, idx: dict[str, tuple[Node, str, Node]], guard: Node, cond: Node,
          out_when_true: bool, region: list[Node], at: Node, src: str,
          reads: list[tuple[Node, int]], step: Poly, store: Node, grid: list[str]) -> None:
    data, rw = plan.source.data, plan.rw
    names = fresh_names(plan, ["BLOCK_X", "BLOCK_Y", "BLOCK_Z", "Z_ITEMS"])
    zi = names["Z_ITEMS"]
    zdecl, z, _size = idx["z"]
    for d, (_decl, _v, size) in idx.items():
        if builtin(size, "blockDim") is None:
            rw.replace(size, names[f"BLOCK_{d.upper()}"])
    elem = plan.kernel.param(src).base_type
    radius = max(abs(d) for _n, d in reads)
    # radius 1: three named registers; a wider radius: a queue of 2R + 1 (wb_zq[R + d])
    regs = {-1: "wb_below", 0: "wb_center", 1: "wb_above"} if radius == 1 else \
        {d: f"wb_zq[{radius + d}]" for d in range(-radius, radius + 1)}
    zero = f"({elem})0"
    value = zdecl.children_by_field_name("declarator")[0].child_by_field_name("value")
    assert value is not None
    typ = text(zdecl.child_by_field_name("type"))

    def head(r: object) -> str:
        regs_decl = f"{elem} wb_below = {zero}, wb_center = {zero}, wb_above = {zero};\n" \
            if radius == 1 else f"{elem} wb_zq[{2 * radius + 1}];\n"
        return (f"{regs_decl}"
                f"  // {zi} consecutive planes per thread; the planes below / at / above the "
                "point stay in registers\n"
                f"#pragma unroll\n  for (int wb_k = 0; wb_k < {zi}; ++wb_k) {{\n"
                f"  {typ} {z} = ({rw.render(value.start_byte, value.end_byte)}) * {zi} + wb_k;")
    rw.replace_span(zdecl.start_byte, zdecl.end_byte, make=head)
    rw.insert(region[-1].end_byte, "\n  }")
    for n in walk(guard):
        if n.type == "return_statement":
            rw.replace(n, "continue;")
    for s in region:
        for n in walk(s):
            if n.type == "return_statement" and not inside(n, guard):
                rw.replace(n, "continue;")
    for n, shift in reads:
        rw.replace(n, regs[shift])

    def passes(shift: str) -> str:
        c = render(data, cond, lambda m: f"({z} {shift})" if m.type == "identifier"
                   and text(m) == z else None)
        return f"!({c})" if out_when_true else f"({c})"
    at_index = text(subscript_index(store))
    s_text = poly_text(step)
    load = (f"if (wb_k == 0) {{\n"
            f"      wb_center = __ldg(&{src}[{at_index}]);\n"
            f"      wb_below = ({z} >= 1 && {passes('- 1')}) ? "
            f"__ldg(&{src}[({at_index}) - ({s_text})]) : {zero};\n"
            f"    }} else {{\n      wb_below = wb_center;\n      wb_center = wb_above;\n    }}\n"
            f"    wb_above = {passes('+ 1')} ? __ldg(&{src}[({at_index}) + ({s_text})]) : "
            f"{zero};\n    ")
    if radius > 1:
        load = _queue_load(src, at_index, s_text, radius, zero, passes, z)
    rw.insert(at.start_byte, load)
    for axis in "XYZ":
        written = literal(plan.block["XYZ".index(axis)]) or 1
        hi = {"X": 256, "Y": 32, "Z": 16}[axis]
        lo = min(1 if axis != "X" else 8, written)
        # a written size that is not a power of two stays reachable (a choice with it)
        spec: dict[str, object] = {"kind": "pow2", "min": lo, "max": max(hi, written)} \
            if written & (written - 1) == 0 else {"kind": "choice", "values": sorted(
                {written} | {1 << e for e in range(11) if lo <= 1 << e <= max(hi, written)})}
        plan.add_param(names[f"BLOCK_{axis}"], {
            **spec, "default": written,
            "description": f"threads per block along {axis.lower()} (as written: {written})"},
            f"{line(idx[axis.lower()][0])}: {text(idx[axis.lower()][0])}")
    plan.add_param(zi, {"kind": "choice", "values": [1, 2, 4, 8, 16, 32], "default": 1,
                        "description": f"consecutive {z} planes per thread, the planes below / "
                                       "at / above in registers (as written: 1)"},
                   f"{line(zdecl)}: {text(zdecl)}")
    bx, by, bz = (names[f"BLOCK_{d}"] for d in "XYZ")
    plan.block = [bx, by, bz]
    plan.grid = grid
    plan.launch_bounds = f"{bx} * {by} * {bz}"
    plan.constrain(f"{bx} * {by} * {bz} >= 32")
    plan.constrain(f"{bx} * {by} * {bz} <= 1024")
    plan.note("Z_ITEMS", True, f"each thread walks {zi} consecutive {z} planes of the 3-D "
              f"stencil; {src}'s reads at the planes below / at / above the point "
              f"({', '.join(sorted({text(n) for n, _d in reads}))}) become registers loaded "
              f"once per plane; the grid's z divisor is {bz} * {zi}", zdecl)


def _queue_load(src: str, at_index: str, s_text: str, radius: int, zero: str,
                passes: Callable[[str], str], z: str) -> str:
    """The loads of a 2R + 1 plane queue at the top of a plane: the chunk's first plane
    fills planes z - R .. z + R - 1 (each where the bounds check admits it), a later one
    moves the queue down; then plane z + R."""
    def plane(d: int) -> str:
        at = at_index if d == 0 else \
            f"({at_index}) {'+' if d > 0 else '-'} {abs(d)} * ({s_text})"
        return f"__ldg(&{src}[{at}])"

    def admitted(d: int) -> str:
        if d == 0:
            return "true"
        shift = f"+ {d}" if d > 0 else f"- {-d}"
        return f"{z} >= {-d} && {passes(shift)}" if d < 0 else passes(shift)
    fill = "".join(f"      wb_zq[{radius + d}] = ({admitted(d)}) ? {plane(d)} : {zero};\n"
                   for d in range(-radius, radius))
    shift = "".join(f"      wb_zq[{k}] = wb_zq[{k + 1}];\n" for k in range(2 * radius))
    return (f"if (wb_k == 0) {{\n{fill}    }} else {{\n{shift}    }}\n"
            f"    wb_zq[{2 * radius}] = {admitted(radius)} ? {plane(radius)} : {zero};\n    ")
