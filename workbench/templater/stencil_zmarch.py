"""Z-marching with a register queue for 3-D stencils whose threads walk z (Z_SPLIT).

Recognised on the parse, whatever the spelling: a 2-D launch block of literal sizes whose
threads each walk a column through a loop ``for (z = 0; z < NZ; ++z)`` (``z++``, ``z += 1``;
``NZ`` a kernel argument or an unassigned local; ``z`` never assigned in the body, no other
loop around it); one output array stored at one index ``C``, linear in ``z`` with step
``S`` (index expressions compared as polynomials over the kernel's names, single-assignment
locals expanded: ``out[i]``, ``out[z * sz + y * nx + x]`` alike); and a const input read at
``C + d * S`` for every ``d`` from ``-R`` to ``R`` (``R`` a compile-time radius: the planes
a point reads are fixed by its text; the point's own plane ``d = 0`` may go unread, as in a
7-point Jacobi step: the output is stored there). Reads at other offsets (x / y neighbours)
are left as written.

The rewrite keeps the 2R + 1 planes ``z - R .. z + R`` of the thread's column in a register
queue: at the first plane of the walk the queue is filled (planes outside ``0 .. NZ - 1``
as zeros, never read by a kernel that is correct as written), at each later plane it moves
down one and loads only plane ``z + R``; the reads ``C + d * S`` become queue slots. The
loads run before the first statement that reads the input (every plane passes there: no
``continue`` before it), so the body's own boundary tests, written in the global ``z``, are
untouched; the input's other reads (x / y neighbours) go through the read-only path
(``__ldg``). ``Z_SPLIT`` cuts ``0 .. NZ`` into that many chunks of ``ceil(NZ / Z_SPLIT)``
planes, one per grid z slice (grid z = Z_SPLIT; the last chunks may be shorter or empty);
each chunk fills its own queue (2R planes read again at each cut). The block sizes are
lifted as a 2-D block (:func:`.block.lift_block`).

An interior walk ``for (z = LO; z < HI; ++z)`` (``LO`` a compile-time integer, ``HI`` an
expression of kernel arguments, unassigned locals and constants: ``for (int k = 1; k < nz -
1; ++k)``) is marched the same way over ``LO .. HI`` where every queued read is made on
every plane the walk visits (outside any branch, with no ``continue`` before it): the
kernel as written then reads planes ``LO - R .. HI - 1 + R`` itself, so the queue, which
loads no plane outside those, needs no test of where the planes end.

Legal only where the thread's column is a valid index at every plane: the body stores the
output at ``C`` or reads the input at ``C`` on every path of every plane (then, with the
input in the output's layout, as the kernel's own neighbour reads assume, planes ``0 .. NZ
- 1`` of the column exist). The input must not alias the output (a 3-D stencil written in
place races between threads as written). No ``break``, ``return`` or ``goto`` in the walk
(a chunk would stop where the next one goes on), no barrier or shared memory, no
``blockIdx.z`` / ``threadIdx.z`` / ``gridDim.z`` read. Anything else is refused with the
reason and the line.

A top-level walk that writes locals declared before it, each with a read of a kernel pointer
(the planes below and at the point, rotated by hand: set 26's varcoef7_zmarch), already holds
its queue: :mod:`.stencil_zrotate` splits it as written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    declared_name,
    inside_loop,
    int_value,
    line,
    shares_or_syncs,
    strip,
    subscript_array,
    subscript_index,
    text,
    walk,
    write_target,
)
from workbench.templater.block import lift_block
from workbench.templater.plan import Plan
from workbench.templater.read_only_loads import LDG_TYPES
from workbench.templater.regtile import Refused, _locals, apply_or_note, fresh_names
from workbench.templater.rewrite import Rewriter
from workbench.templater.rules import literal
from workbench.templater.stencil import (
    Poly,
    Polys,
    add,
    derivative,
    poly_text,
    scale,
    statements,
)
from workbench.templater.stencil_rows import lift_rows
from workbench.templater.stencil_zgrid import lift_zgrid, reads_block_z
from workbench.templater.stencil_zrotate import analyse as rotation_of
from workbench.templater.stencil_zrotate import carried_names
from workbench.templater.stencil_zrotate import emit as emit_rotation

Z_SPLIT = "Z_SPLIT"
MAX_RADIUS = 4
_LEAVES = ("break_statement", "return_statement", "goto_statement")


@dataclass(frozen=True)
class ZWalk:
    """One column walk: the loop, its variable and bound, the input marched, the radius,
    a read per plane offset (its index rendered in the loads), every queued read and the
    statement the loads go before."""

    loop: Node
    var: str
    var_type: str
    start: Node
    bound: Node
    src: str
    elem: str
    radius: int
    by_shift: dict[int, Node]
    reads: tuple[tuple[Node, int], ...]
    at: Node
    interior: bool = False  # LO .. HI, every queued read made on every plane: no plane tests
    step: str = ""  # the index's step per plane (a plane no read spells is rendered with it)


def _z_loop(plan: Plan) -> Node | None:
    """The first loop ``for (v = LO; v < N; ++v)`` (``LO`` a compile-time integer >= 0) of
    the body (not inside another loop) whose body uses ``v`` and indexes an array."""
    for n in walk(plan.body):
        if n.type != "for_statement" or inside_loop(n, plan.body):
            continue
        init, cond = n.child_by_field_name("initializer"), n.child_by_field_name("condition")
        update, body = n.child_by_field_name("update"), n.child_by_field_name("body")
        if init is None or cond is None or update is None or body is None or \
                init.type != "declaration":
            continue
        var, _d, start = declared_name(init)
        parts = binary(cond)
        first = int_value(start)
        if first is None or first < 0 or parts is None or parts[1] != "<" or \
                text(strip(parts[0])) != var or not _unit_step(update, var):
            continue
        if any(m.type == "identifier" and text(m) == var for m in walk(body)) and \
                any(m.type == "subscript_expression" for m in walk(body)):
            return n
    return None


def _unit_step(update: Node, var: str) -> bool:
    t = "".join(text(update).split())
    return t in (f"++{var}", f"{var}++", f"{var}+=1", f"{var}={var}+1")


def lift_zmarch(plan: Plan) -> bool:
    """Z_SPLIT with the column's planes in a register queue; False when the kernel is not
    of the family or the analysis refused (the finding says why). A 3-D grid whose kernel
    reads ``blockIdx.z`` goes to :func:`.stencil_zgrid.lift_zgrid` instead (one plane per
    block z is marched there; the walk this module queues is not written there)."""
    if len(plan.grid) == 3 and reads_block_z(plan):
        # a batch of 2-D grids (block z 1, blockIdx.z the image): rows down a column share
        # their neighbour rows, the batch's planes share nothing, so OUT_Y goes first
        # (a 2-D block has one z; a 3-D one must be written 1)
        one_z = len(plan.block) == 2 or literal(plan.block[-1]) == 1
        return (one_z and lift_rows(plan)) or lift_zgrid(plan)
    if len(plan.block) != 2 or any(literal(b) is None for b in plan.block) or \
            len(plan.grid) not in (2, 3) or (len(plan.grid) == 3 and literal(plan.grid[2]) != 1):
        return False
    if shares_or_syncs(plan.body):
        return False
    loop = _z_loop(plan)
    if loop is None:
        return False
    carried = carried_names(plan, loop)
    if carried:
        def rotation() -> Callable[[], None] | None:
            assert loop is not None
            found = rotation_of(plan, loop, carried, _store_index)
            interior = int_value(found.start) != 0 or found.bound.type != "identifier"
            size = _planes(plan, found.start, found.bound, interior)
            return lambda: emit_rotation(plan, found, size)
        return apply_or_note(plan, Z_SPLIT, rotation)

    def analyse() -> Callable[[], None] | None:
        assert loop is not None
        found = _analyse(plan, loop)
        return None if found is None else (lambda: _emit(plan, found))
    return apply_or_note(plan, Z_SPLIT, analyse)


def _store_index(plan: Plan, body: Node, polys: Polys) -> tuple[str, Node, Poly]:
    stores: list[tuple[str, Node]] = []
    for n in walk(body):
        if n.type in ("assignment_expression", "update_expression"):
            left = write_target(n) or n
            if left.type == "subscript_expression":
                stores.append((subscript_array(left), left))
    names = sorted({a for a, _s in stores})
    if len(names) != 1:
        raise Refused(f"the z walk stores to {names or 'nothing'}: one output array is "
                      "modelled", stores[0][1] if stores else body)
    center = polys.of(subscript_index(stores[0][1]))
    for _a, s in stores:
        if polys.of(subscript_index(s)) != center:
            raise Refused(f"{names[0]} is stored at more than one index", s)
    return names[0], stores[0][1], center


def _analyse(plan: Plan, loop: Node) -> ZWalk | None:
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    body = loop.child_by_field_name("body")
    assert init is not None and cond is not None and body is not None
    var, _d, start = declared_name(init)
    parts = binary(cond)
    assert parts is not None and start is not None
    bound = strip(parts[2])
    # 0 .. NZ (NZ one name) tests the planes against NZ; any other range is an interior walk
    interior = int_value(start) != 0 or bound.type != "identifier"

    def runtime(n: Node) -> bool:
        return text(n) in plan.scalars or (
            text(n) in plan.facts.defs and not plan.facts.defs[text(n)].assigned)
    # a walk over a compile-time count is a window (a convolution's taps), not the planes
    if not any(n.type == "identifier" and runtime(n) for n in walk(bound)):
        raise Refused(f"the z bound `{text(bound)}` is not a kernel argument or an unassigned "
                      "local", bound)
    for n in walk(bound):
        if n.type == "identifier" and int_value(n) is None and not runtime(n):
            raise Refused(f"the z bound `{text(bound)}` is not a kernel argument, an unassigned "
                          "local or an expression of them", bound)
        if n.type in ("call_expression", "subscript_expression", "field_expression",
                      "pointer_expression", "assignment_expression", "update_expression"):
            raise Refused(f"the z bound `{text(bound)}` reads `{text(n)}`: arguments, unassigned "
                          "locals and constants are modelled", n)
    for n in walk(plan.body):
        if n.type == "field_expression" and any(builtin(n, b) == "z" for b in
                                                ("blockIdx", "threadIdx", "gridDim")):
            raise Refused(f"`{text(n)}` is read; the grid's z is the chunk of the walk", n)
    for n in walk(body):
        if n.type in _LEAVES:
            raise Refused(f"`{text(n)}` leaves the z walk early (a chunk would stop where the "
                          "next one goes on)", n)
        if n.type in ("assignment_expression", "update_expression"):
            target = write_target(n)
            if target is not None and text(target) == var:
                raise Refused(f"the z variable `{var}` is assigned in the walk", n)
    polys = Polys(plan.body, {var})
    out, store, center = _store_index(plan, body, polys)
    step = derivative(center, var)
    if not step or any(var in m for m in step) or any(m.count(var) > 1 for m in center):
        raise Refused(f"the index of {out} is not linear in {var}", store)
    planes: dict[str, list[tuple[Node, int]]] = {}
    for n in walk(body):
        if n.type != "subscript_expression" or subscript_array(n) == out or not plan.pointer(subscript_array(n)):
            continue
        diff = add(polys.of(subscript_index(n)), scale(center, -1))
        for d in range(-MAX_RADIUS, MAX_RADIUS + 1):
            if diff == scale(step, d):
                planes.setdefault(subscript_array(n), []).append((n, d))
    marched = sorted(a for a, reads in planes.items() if {d for _n, d in reads} - {0})
    if not marched:
        return None
    if len(marched) > 1:
        raise Refused(f"several inputs ({', '.join(marched)}) are read at neighbour planes: "
                      "one is marched", loop)
    src = marched[0]
    param = plan.kernel.param(src)
    if not param.is_const:
        raise Refused(f"{src} is not a const input (its planes are kept in registers)", loop)
    shifts = {d for _n, d in planes[src]}
    radius = max(abs(d) for d in shifts)
    # the point's own plane may go unread (a 7-point Jacobi step reads z - 1 and z + 1, not
    # z): the output is stored at the point and the input has the output's layout (assumed
    # above), so the queue may load it; any other plane it would load is refused
    missing = sorted(set(range(-radius, radius + 1)) - shifts - {0})
    if missing:
        raise Refused(f"{src} is not read at plane offset(s) {missing} of the radius "
                      f"{radius}: the queue needs every plane between", loop)
    for n, _shift in planes[src]:
        if n.parent is not None and n.parent.type == "pointer_expression":
            raise Refused(f"`{text(n.parent)}` takes the address of a plane read", n)
    stmts = statements(body) if body.type == "compound_statement" else [body]
    at = next(s for s in stmts if any(inside_node(n, s) for n, _d in planes[src]))
    for s in stmts[:stmts.index(at)]:
        if any(m.type == "continue_statement" for m in walk(s)):
            raise Refused(f"`{text(s)[:50]}` may skip a plane before the planes are loaded", s)
    by_shift = {d: next(n for n, dd in planes[src] if dd == d) for d in sorted(shifts)}
    _check_scope(plan, body, at, by_shift)
    if not _surely(stmts, src, out, store, planes[src]):
        raise Refused(f"no statement of the walk stores {out} or reads {src} at the point on "
                      "every path: the column is not known to be inside the grid", loop)
    if interior:
        for n, _shift in planes[src]:
            why = _not_every_plane(body, n)
            if why:
                raise Refused(f"the walk runs {text(start)} .. {text(bound)} and `{text(n)}` "
                              f"{why}: which planes exist is known only where the kernel reads "
                              "every queued plane on every plane it visits", n)
    return ZWalk(loop, var, text(init.child_by_field_name("type")), start, bound, src,
                 param.base_type, radius, by_shift, tuple(planes[src]), at, interior,
                 poly_text(step))


_BRANCHES = ("if_statement", "conditional_expression", "for_statement", "while_statement",
             "do_statement", "switch_statement", "case_statement")


def _not_every_plane(body: Node, read: Node) -> str:
    """Why ``read`` may be skipped on some plane of the walk whose body is ``body`` (a
    branch, a short-circuit operand or a ``continue`` before it); "" when it is made on
    every plane."""
    if any(n.type == "continue_statement" and n.start_byte < read.start_byte
           for n in walk(body)):
        return "comes after a `continue`"
    node = read
    while node.parent is not None and node.parent != body:
        up = node.parent
        if up.type in _BRANCHES:
            return f"is under `{text(up).splitlines()[0][:50]}`"
        parts = binary(up) if up.type == "binary_expression" else None
        if parts is not None and parts[1] in ("&&", "||") and node == parts[2]:
            return f"is the right side of `{text(up)[:50]}`"
        node = up
    return ""


def inside_node(node: Node, outer: Node) -> bool:
    return outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def _check_scope(plan: Plan, body: Node, at: Node, by_shift: dict[int, Node]) -> None:
    """Every local in the queued reads' indices is declared before ``at``."""
    decls = {lo.name: lo.decl for lo in _locals(plan.body).values()}
    for n in by_shift.values():
        for m in walk(subscript_index(n)):
            decl = decls.get(text(m)) if m.type == "identifier" else None
            if decl is not None and inside_node(decl, body) and decl.start_byte >= at.start_byte:
                raise Refused(f"`{text(m)}` (in `{text(n)}`) is declared after the first read "
                              "of the planes", decl)


def _touches(node: Node, src: str, out: str, center_reads: set[int], store: Node) -> bool:
    return any((m.type == "subscript_expression" and m.start_byte in center_reads) or
               (m.type == "subscript_expression" and subscript_array(m) == out and
                text(subscript_index(m)) == text(subscript_index(store))) for m in walk(node))


def _surely(stmts: list[Node], src: str, out: str, store: Node,
            reads: list[tuple[Node, int]]) -> bool:
    """Every path through ``stmts`` stores ``out`` at the point or reads ``src`` there."""
    center = {n.start_byte for n, d in reads if d == 0}

    def seq(items: list[Node]) -> bool:
        for k, s in enumerate(items):
            rest = items[k + 1:]
            if s.type == "compound_statement":
                return seq(statements(s) + rest)
            if s.type == "if_statement":
                cons = s.child_by_field_name("consequence")
                alt = s.child_by_field_name("alternative")
                branch = [cons] if cons is not None else []
                other = [alt.named_children[-1]] if alt is not None and alt.named_children \
                    else []
                return seq(branch + rest) and seq(other + rest)
            if s.type == "continue_statement":
                return False
            if s.type in ("expression_statement", "declaration") and \
                    _touches(s, src, out, center, store):
                return True
        return False
    return seq(stmts)




def _emit(plan: Plan, w: ZWalk) -> None:
    lift_block(plan)
    rw = plan.rw
    zs = fresh_names(plan, [Z_SPLIT])[Z_SPLIT]
    z, typ, r = w.var, w.var_type, w.radius
    nz = rw.text(w.bound)
    slots = 2 * r + 1
    ldg = w.elem in LDG_TYPES

    def load(d: int) -> str:
        if d in w.by_shift:
            sub = w.by_shift[d]
            at = rw.render(sub.start_byte, sub.end_byte)
        else:  # the point's plane, unread: the nearest read, moved by whole planes
            near = min(w.by_shift, key=lambda e: (abs(e - d), e))
            index = subscript_index(w.by_shift[near])
            at = (f"{w.src}[{rw.render(index.start_byte, index.end_byte)} + "
                  f"({d - near}) * ({w.step})]")
        return f"__ldg(&{at})" if ldg else at

    zero = f"({w.elem})0"
    lo = rw.text(w.start)
    span, first = (f"{nz} - ({lo})", f"({lo}) + ") if w.interior else (nz, "")
    rw.insert(w.loop.start_byte, (
        f"// {zs} chunks of the {z} walk, one per grid z slice; the planes {z} - {r} .. "
        f"{z} + {r} of the column in a register queue\n"
        f"  const {typ} wb_zchunk = ({span} + {zs} - 1) / {zs};\n"
        f"  const {typ} wb_z0 = {first}({typ})blockIdx.z * wb_zchunk;\n"
        f"  const {typ} wb_z1 = ({nz}) < wb_z0 + wb_zchunk ? ({nz}) : wb_z0 + wb_zchunk;\n"
        f"  {w.elem} wb_q[{slots}];\n  "))
    rw.replace(w.start, "wb_z0")
    rw.replace(w.bound, "wb_z1")

    def planes_test(d: int, value: str) -> str:
        # an interior walk: the kernel as written reads every queued plane (no test)
        if w.interior:
            return value
        return f"({z} + {d} >= 0 && {z} + {d} < {nz}) ? {value} : {zero}".replace("+ -", "- ")
    fill = "".join(f"      wb_q[{r + d}] = {planes_test(d, load(d))};\n" for d in range(-r, r))
    shift = "".join(f"      wb_q[{k}] = wb_q[{k + 1}];\n" for k in range(slots - 1))
    top = load(r) if w.interior else f"{z} + {r} < {nz} ? {load(r)} : {zero}"
    body = w.loop.child_by_field_name("body")
    if body is not None and body.type != "compound_statement":
        rw.insert(body.start_byte, "{\n    ")
        rw.insert(body.end_byte, "\n  }")
    rw.insert(w.at.start_byte, (
        f"if ({z} == wb_z0) {{  // the chunk's first plane: the queue's lower planes\n{fill}"
        f"    }} else {{  // one plane up\n{shift}    }}\n"
        f"    wb_q[{slots - 1}] = {top};\n    "))
    for n, d in w.reads:
        rw.replace(n, f"wb_q[{r + d}]")
    if ldg:
        # the other reads of the input (x / y neighbours) through the read-only path: the
        # input is not written during the walk (not aliased to the output, as above)
        queued = {n.start_byte for n, _d in w.reads}
        for n in walk(body) if body is not None else []:
            if n.type == "subscript_expression" and subscript_array(n) == w.src and \
                    n.start_byte not in queued and n.parent is not None and \
                    n.parent.type != "pointer_expression":
                rw.replace_span(n.start_byte, n.end_byte, make=_read_only(n))
    if len(plan.grid) == 3:
        plan.grid[2] = zs
    else:
        plan.grid.append(zs)
    size = _planes(plan, w.start, w.bound, w.interior)
    plan.add_param(zs, {"kind": "choice", "values": [1, 2, 4, 8, 16], "default": 1,
                        "description": f"chunks of the {z} walk marched by separate blocks "
                                       f"(grid z), each refilling its {slots}-plane queue (as "
                                       "written: 1)"},
                   f"{line(w.loop)}: {text(w.loop).splitlines()[0][:60]}")
    if size is not None:
        # a chunk shorter than the queue reloads more planes than it reuses; more chunks
        # than planes leaves blocks with nothing to do
        plan.constrain(f"{zs} == 1 or {size} // {zs} >= {slots}")
    plan.note(Z_SPLIT, True, f"each thread walks its column's {z} planes with {w.src}'s "
              f"planes {z} - {r} .. {z} + {r} in a {slots}-register queue (one load per "
              f"plane; {len(w.reads)} reads become queue slots); {zs} chunks of {z} on the "
              "grid's z", w.loop)


def _planes(plan: Plan, start: Node, bound: Node, interior: bool) -> str | None:
    """The number of planes the walk ``start .. bound`` visits as a shape expression (None:
    not one of the launch's scalars and constants)."""
    if not interior:
        return plan.scalars.get(text(bound))
    parts: list[str] = []
    for n in walk(bound):
        if n.child_count:
            continue
        if n.type == "identifier":
            value = int_value(n)
            shape = plan.scalars.get(text(n)) if value is None else str(value)
            if shape is None:
                return None
            parts.append(f"({shape})")
        elif n.type == "number_literal" and int_value(n) is not None:
            parts.append(str(int_value(n)))
        elif text(n) in ("+", "-", "*", "(", ")"):
            parts.append(text(n))
        else:
            return None
    return f"({' '.join(parts)} - {int_value(start)})"


def _read_only(sub: Node) -> Callable[[Rewriter], str]:
    """``sub`` (with the edits inside it) as a read-only load."""
    def make(rw: Rewriter) -> str:
        return f"__ldg(&{rw.render(sub.start_byte, sub.end_byte)})"
    return make
