"""Z_ITEMS and OUT_X for a 3-D stencil launched flat: one thread a point of an
``[nz][ny][nx]`` box, the flat index split into x, y, z by ``/`` and ``%``.

``idx = blockIdx.x * blockDim.x + threadIdx.x`` bounded by ``nx * ny * nz`` and read as the
point ``(x, y, z)`` (:mod:`.flat_split`: ``idx % nx``, ``(idx / nx) % ny``, ``idx / (nx *
ny)``, ``idx - k * plane`` ..., with ``int`` or ``size_t``) is what :mod:`.stencil`'s
z-march reads from a 3-D launch: index expressions are compared as polynomials over the
point (``idx`` is ``x + nx * y + nx * ny * z``, each split local its coordinate), so a read
of an input at ``idx + d * nx * ny + e`` is the plane ``z + d``, column ``x + e`` of the
point's row, whatever the spelling (``u[idx - sz]``, ``u[((k - 1) * ny + j) * nx + i]``).

The rewrite keeps the launch flat (the defaults are the kernel as written): thread ``t`` of
``ceil(nx / OUT_X) * ny * ceil(nz / Z_ITEMS)`` takes the x group ``t % ceil(nx / OUT_X)``
(fastest: a warp's points stay adjacent), the row ``t / ceil(nx / OUT_X) % ny`` and the z run
above; it walks ``Z_ITEMS`` planes, and at each the ``OUT_X`` adjacent points of its group,
each running the work after the index as written with ``idx`` that point's flat index, each
split local its coordinate (no division) and an early ``return`` made ``continue``. Each
input read at a neighbour plane (``d != 0`` at ``e = 0``) is kept in registers: for each of
the thread's ``OUT_X`` columns the planes ``z - R .. z + R`` (``R`` the widest such ``|d|``)
in a queue filled at the first plane and moved down one at each later plane (plane ``z + R``
loaded once); a read at ``(d, e)``, ``|d| <= R``, becomes the register of column ``x + e``
where the thread holds it (the x neighbours of adjacent points read once), else stays as
written. A register holds the input at its flat address where that lies in ``0 .. nx * ny *
nz - 1`` and 0 elsewhere: every read the kernel as written makes of it is of such an address
(the input has the output's layout, as the author's own neighbour reads assume), so each
replaced read is the value as written, and each output is computed by the same statements on
the same values: bit for bit the kernel as written.

Legal where the analysis shows (else refused with the reason and the line): a 1-D block of
a literal size and a grid of ``ceil_div(nx * ny * nz, block)``; no shared memory or barrier;
no ``threadIdx``, ``blockIdx``, ``blockDim`` or ``gridDim`` outside the index's declaration,
the index never assigned; the work's first statement that is not a declaration returns
for ``idx >= nx * ny * nz`` (``if (idx >= total) return;``, other tests beside it) or is a
last ``if (idx < total) {..}``; the statements before it declare and call only pure
functions; every store is to an output at the point's own index, an output the kernel never
reads; the calls are pure; no ``return`` inside a loop or ``goto``; a marched input is a
``const`` argument the kernel never writes, read at the point's plane too.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from workbench.core.errors import ExpressionError
from workbench.core.expr import parse_expr
from workbench.templater.analysis import (
    binary,
    builtin,
    chain,
    inside_loop,
    shares_or_syncs,
    strip,
    subscript_array,
    subscript_index,
    text,
    walk,
    write_target,
    writer,
)
from workbench.templater.flat_split import FlatSplit, box_extents, read_split
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls
from workbench.templater.regtile import (
    Refused,
    apply_or_note,
    single_assignment_values,
)
from workbench.templater.rules import literal
from workbench.templater.stencil import (
    MAX_RADIUS,
    Poly,
    add,
    index_decls,
    ldg_call,
    mul,
    poly_of,
    scale,
    statements,
)
from workbench.templater.stencil_flat_emit import OUT_X_VALUES, FlatFacts, FlatRead, emit_flat

#: the point's coordinates as polynomial atoms (no C name can clash: not identifiers)
ATOMS = ("@x", "@y", "@z")
#: the widest x offset a read may have and still come from a register (OUT_X - 1 at most)
MAX_X_REACH = max(OUT_X_VALUES) - 1
#: the shape values at which the written grid is compared with ``ceil_div(nx * ny * nz, B)``
_SAMPLES = (3, 7, 29, 130, 1001)


def lift_flat_stencil(plan: Plan) -> bool:
    """Z_ITEMS and OUT_X for a 3-D stencil on a flat launch; False when the kernel is not of
    the family or the analysis refused (the finding says why)."""
    if len(plan.block) != 1 or len(plan.grid) != 1 or literal(plan.block[0]) is None or \
            shares_or_syncs(plan.body):
        return False
    stmts = statements(plan.body)
    try:
        idx = index_decls(plan, stmts, "x")
    except Refused:
        return False
    if "x" not in idx:
        return False
    return apply_or_note(plan, "Z_ITEMS", lambda: _analyse(plan, stmts, idx["x"]))


def _analyse(plan: Plan, stmts: list[Node], found: tuple[Node, str, Node]
             ) -> Callable[[], None] | None:
    decl, t, _size = found
    region = stmts[stmts.index(decl) + 1:]
    for n in walk(plan.body):
        if n.type == "field_expression" and not decl.start_byte <= n.start_byte < \
                decl.end_byte and any(builtin(n, b) for b in ("threadIdx", "blockIdx",
                                                               "blockDim", "gridDim")):
            return None  # the thread's place is read elsewhere: another family's
        target = write_target(n) if n.type in ("assignment_expression",
                                               "update_expression") else None
        if target is not None and text(target) == t:
            return None
    values = single_assignment_values(plan.body, {t})
    bound = _bound(plan, region, t, values)
    divided = [(name, v) for name, v in values.items() if _divides(v, t, values)]
    box = box_extents(bound, set(plan.scalars)) if bound is not None else None
    if bound is None or box is None:
        return None  # no flat index over a box: not of the family
    others = [(name, v) for name, v in values.items()
              if _reads_name(v, t, values) and (name, v) not in divided]
    split = read_split(t, bound, set(plan.scalars), values, divided, others)
    if split is None:
        raise Refused(f"the flat index {t} (bounded by {' * '.join(box)}) is not "
                      "split into x, y, z by `/` and `%` under one order of the extents: "
                      "its point is not known", decl)
    _check_work(plan, stmts[:stmts.index(decl)], region)
    _check_grid(plan, split, decl)
    point = {n: v for n, v in values.items() if n not in split.runs}
    subst = split.point_poly(ATOMS)

    def poly(node: Node) -> Poly:
        return _substitute(poly_of(node, point, divide=True), subst)
    here = subst[t]
    plane = {tuple(sorted(split.extents[:2])): 1}
    reads = _reads(plan, region, poly, here, plane)
    marched = sorted({r.src for r in reads if r.d and not r.e})
    if not marched:
        plan.note("Z_ITEMS", False, f"no input is read at the planes above or below the point "
                  f"({t} +- {' * '.join(split.extents[:2])})", decl)
        return None
    radius: dict[str, int] = {}
    for src in marched:
        param = plan.kernel.param(src)
        if not param.is_const or any(writer(n) is not None for n in walk(plan.body)
                                     if n.type == "subscript_expression" and subscript_array(n) == src):
            raise Refused(f"{src} is read at neighbour planes but is not a const input never "
                          "written (its planes are kept in registers)", decl)
        if not any(r.src == src and r.d == 0 for r in reads):
            raise Refused(f"{src} is never read at the point's plane: its layout is not "
                          "known to be the output's", decl)
        radius[src] = max(abs(r.d) for r in reads if r.src == src and not r.e)
    kept = tuple(r for r in reads if r.src in radius and abs(r.d) <= radius[r.src])
    value = decl.children_by_field_name("declarator")[0].child_by_field_name("value")
    declarator = decl.children_by_field_name("declarator")[0]
    typ = plan.source.data[decl.start_byte:declarator.start_byte].decode().strip()
    if value is None or "auto" in typ.split():
        raise Refused(f"`{text(decl)}` declares the flat index without a named type", decl)
    facts = FlatFacts(decl, typ, value, region, split, kept, radius,
                   {s: plan.kernel.param(s).base_type for s in radius})
    return lambda: emit_flat(plan, facts)


def _divides(value: Node, t: str, values: dict[str, Node], depth: int = 0) -> bool:
    """``value`` divides or takes a remainder of ``t`` (through locals, 12 levels)."""
    if depth > 12:
        return False
    for n in walk(value):
        parts = binary(n) if n.type == "binary_expression" else None
        if parts is not None and parts[1] in ("/", "%") and _reads_name(parts[0], t, values):
            return True
    return False


def _reads_name(node: Node, t: str, values: dict[str, Node], depth: int = 0) -> bool:
    for n in walk(node):
        if n.type != "identifier":
            continue
        if text(n) == t:
            return True
        v = values.get(text(n))
        if v is not None and depth < 12 and _reads_name(v, t, values, depth + 1):
            return True
    return False


def _bound(plan: Plan, region: list[Node], t: str, values: dict[str, Node]) -> Poly | None:
    """The bound ``B`` (a polynomial) the work's first statement that is no declaration
    tests: ``if (.. || t >= B) return;`` or a last ``if (.. && t < B) {..}``; None when the
    work has no such test (no bounded flat index: not of the family)."""
    first = next((s for s in region if s.type != "declaration"), None)
    if first is None or first.type != "if_statement" or \
            first.child_by_field_name("alternative") is not None:
        return None
    cond = first.child_by_field_name("condition")
    cons = first.child_by_field_name("consequence")
    if cond is None or cons is None or cond.named_child_count != 1:
        return None
    inner = statements(cons) if cons.type == "compound_statement" else [cons]
    returns = len(inner) == 1 and inner[0].type == "return_statement"
    if not returns and first is not region[-1]:
        return None
    outside = (">=", "<=") if returns else ("<", ">")
    for c in chain(cond.named_children[0], "||" if returns else "&&"):
        parts = binary(c)
        if parts is None:
            continue
        left, op, right = parts
        if text(strip(left)) == t and op == outside[0]:
            return poly_of(right, values, divide=True)
        if text(strip(right)) == t and op == outside[1]:
            return poly_of(left, values, divide=True)
    return None


def _check_work(plan: Plan, before: list[Node], region: list[Node]) -> None:
    """Refuses what the per-thread loops would change: side effects before the bound
    test, impure calls, stores other than the outputs', returns inside loops, ``goto``."""
    pure = pure_calls(plan.source) | {"__ldg"}
    first = next(s for s in region if s.type != "declaration")
    for s in [*before, *region[:region.index(first)]]:
        if s.type != "declaration" or any(n.type in ("assignment_expression",
                                                     "update_expression") for n in walk(s)):
            raise Refused(f"`{text(s)}` runs before the bound test and is not a declaration",
                          s)
    for s in [*before, *region]:
        for n in walk(s):
            target = write_target(n) if n.type in ("assignment_expression",
                                                   "update_expression") else None
            if target is not None and target.type not in ("identifier",
                                                          "subscript_expression"):
                raise Refused(f"`{text(n)}` writes through `{text(target)}`: only locals and "
                              "subscripts are followed", n)
            if n.type == "call_expression" and \
                    text(n.child_by_field_name("function")) not in pure:
                raise Refused(f"`{text(n)}` calls a function that is not pure: a point's work "
                              "runs in another thread", n)
            if n.type == "goto_statement" or (n.type == "return_statement" and
                                              inside_loop(n, plan.body)):
                raise Refused(f"`{text(n)}` leaves a loop of the point's work: it cannot end "
                              "one point of several", n)


def _check_grid(plan: Plan, split: FlatSplit, decl: Node) -> None:
    """The written grid is ``ceil_div(nx * ny * nz, B)`` (compared at sample shapes)."""
    extents = [plan.scalars[e] for e in split.extents]
    want = f"ceil_div(({extents[0]}) * ({extents[1]}) * ({extents[2]}), {plan.block[0]})"
    try:
        written, ours = parse_expr(plan.grid[0]), parse_expr(want)
        names = sorted(written.names | ours.names)
        for k in range(len(_SAMPLES)):
            env = {n: _SAMPLES[(k + i) % len(_SAMPLES)] for i, n in enumerate(names)}
            if written.evaluate(env) != ours.evaluate(env):
                raise Refused(f"the grid `{plan.grid[0]}` is not {want}: the written launch "
                              "does not cover the box one thread a point", decl)
    except ExpressionError as exc:
        raise Refused(f"the grid `{plan.grid[0]}` is not read ({exc})", decl) from exc


def _substitute(p: Poly, subst: dict[str, Poly]) -> Poly:
    out: Poly = {}
    for m, c in p.items():
        term: Poly = {(): c}
        for atom in m:
            term = mul(term, subst.get(atom, {(atom,): 1}))
        out = add(out, term)
    return out


def _reads(plan: Plan, region: list[Node], poly: Callable[[Node], Poly], here: Poly,
           plane: Poly) -> tuple[FlatRead, ...]:
    """Checks every store (an output at the point, never read) and returns the reads of
    const inputs at ``here + d * plane + e`` (``|d| <= MAX_RADIUS``, ``|e| <=
    MAX_X_REACH``)."""
    subs = [n for s in region for n in walk(s) if n.type == "subscript_expression"]
    stored = {subscript_array(n) for n in subs if writer(n) is not None}
    for n in walk(plan.body):
        if n.type == "subscript_expression" and subscript_array(n) in stored and writer(n) is None:
            raise Refused(f"`{text(n)}` reads {subscript_array(n)}, which the kernel writes: its points "
                          "would not be independent", n)
        if n.type == "assignment_expression" and text(n.child_by_field_name("operator")) \
                != "=" and subscript_array(strip(n.child_by_field_name("left"))) in stored:  # type: ignore[arg-type]
            raise Refused(f"`{text(n)}` reads the output it updates", n)
    out: list[FlatRead] = []
    for n in subs:
        src = subscript_array(n)
        if src in stored:
            if not plan.pointer(src) or poly(subscript_index(n)) != here:
                raise Refused(f"`{text(n)}` stores at another place than the point's own "
                              "(one output a point)", n)
            continue
        if not plan.pointer(src) or any(m.type == "subscript_expression" for m in
                                        walk(subscript_index(n))):
            continue
        diff = add(poly(subscript_index(n)), scale(here, -1))
        for d in range(-MAX_RADIUS, MAX_RADIUS + 1):
            rest = add(diff, scale(plane, -d))
            e = rest.get((), 0) if set(rest) <= {()} else None
            if e is not None and abs(e) <= MAX_X_REACH:
                node = ldg_call(n)
                if node is n and n.parent is not None and n.parent.type == \
                        "pointer_expression":
                    raise Refused(f"`{text(n.parent)}` takes the address of an input read",
                                  n)
                out.append(FlatRead(node, src, d, e))
                break
    return tuple(out)
