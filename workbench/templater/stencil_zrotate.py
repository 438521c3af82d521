"""Z_SPLIT for a z walk whose planes the author already keeps in registers (a hand-written
rotation: set 26's varcoef7_zmarch).

``float u_dn = u[IDX(x, y, 0)]; float u_c = u[IDX(x, y, 1)]; for (int z = 1; z < nz - 1;
++z) { float u_up = u[IDX(x, y, z + 1)]; ..; out[IDX(x, y, z)] = ..; u_dn = u_c; u_c = u_up;
}`` walks a column with the planes below, at and above in registers: :mod:`.stencil_zmarch`'s
queue is already written, so only the split is missing. The walk ``LO .. HI`` (``LO`` a
compile-time integer, ``HI`` an expression of the launch's scalars) is cut into ``Z_SPLIT``
chunks of ``ceil((HI - LO) / Z_SPLIT)`` planes, one per grid z slice; a chunk that starts
past ``LO`` first reloads each carried register with the plane it holds there (2 or 3
planes read again at each cut), the statements after the walk run in the one block whose
chunk ends it (the registers hold there what they hold as written) and the statements
before it in every block.

Read so (else refused with the reason and the line): the walk is a top-level ``for`` of the
kernel's body whose variable steps by one, with one output array stored at one index ``C``
linear in ``z`` with step ``S`` (:func:`.stencil_zmarch._store_index`); the locals declared
before the walk that it writes (the carried registers) are each declared with a read
``a[e]`` of a const input at plane ``LO + d`` of the column (``e - C`` is ``(LO + d - z) *
S``, indices compared as polynomials), written in the walk only by the plain copies ``v =
w;`` that end its body, and those copies move each register up one plane: ``w`` is another
carried register or a local of the body declared with a read at the plane above (run in
order, the copies leave in ``v`` the plane ``z + 1 + d`` of its input); no ``break``,
``continue``, ``return`` or ``goto`` in the walk, no barrier or shared memory, no
``blockIdx.z``; the statements before and after the walk store only at planes outside ``LO
.. HI - 1`` (a constant plane below ``LO`` or ``HI`` and above), read no array the kernel
stores and call no function but pure math: each block writes the same value there before the walk, and the block that ends
it after.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    builtin,
    declared_name,
    int_value,
    line,
    strip,
    subscript_index,
    text,
    walk,
    write_target,
)
from workbench.templater.block import lift_block
from workbench.templater.plan import Plan
from workbench.templater.purity import PURE_CALLS
from workbench.templater.regtile import Refused, fresh_names
from workbench.templater.stencil import (
    Poly,
    Polys,
    add,
    derivative,
    mul,
    poly_text,
    scale,
    statements,
)

Z_SPLIT = "Z_SPLIT"


@dataclass(frozen=True)
class Carried:
    """A register the walk carries: its name, the input it holds, the read it is declared
    with and the plane it holds there relative to the walk's first plane."""

    name: str
    src: str
    read: Node
    plane: int


@dataclass(frozen=True)
class Rotation:
    """The walk, its variable's type, start and bound, the carried registers (each holding
    the plane ``z + plane`` at the start of plane ``z``), the plane step (rendered) and the
    statements after the walk."""

    loop: Node
    var_type: str
    start: Node
    bound: Node
    carried: tuple[Carried, ...]
    step: str
    after: tuple[Node, ...]


def carried_names(plan: Plan, loop: Node) -> set[str]:
    """The locals declared before the top-level ``loop`` that it writes, where each is
    declared with a read of a kernel pointer (a register the author rotates; empty
    otherwise: an accumulator or a flag across planes is no rotation, and a walk without
    such state is :mod:`.stencil_zmarch`'s queue)."""
    if loop.parent is None or loop.parent != plan.body:
        return set()
    before: dict[str, Node | None] = {}
    for s in statements(plan.body):
        if s.end_byte <= loop.start_byte and s.type == "declaration":
            for d in s.children_by_field_name("declarator"):
                before[declared_name_of(d)] = d.child_by_field_name("value") \
                    if d.type == "init_declarator" else None
    names = {text(t) for n in walk(loop) if (t := write_target(n)) is not None
             and t.type == "identifier" and text(t) in before}
    for name in names:
        value = before[name]
        read = strip(value) if value is not None else None
        if read is None or read.type != "subscript_expression" or \
                not plan.pointer(text(strip(read.child_by_field_name("argument") or read))):
            return set()
    return names


def declared_name_of(d: Node) -> str:
    inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
    return text(inner) if inner is not None else ""


def _read_of(plan: Plan, value: Node | None, what: str) -> Node:
    read = strip(value) if value is not None else None
    if read is None or read.type != "subscript_expression":
        raise Refused(f"{what} is not declared with a read of an input", value)
    array = text(strip(read.child_by_field_name("argument")))  # type: ignore[arg-type]
    if not plan.pointer(array) or not plan.kernel.param(array).is_const:
        raise Refused(f"{what} is declared with `{text(read)}`, not a read of a const input",
                      read)
    return read


def analyse(plan: Plan, loop: Node, names: set[str],
            store_index: Callable[[Plan, Node, Polys], tuple[str, Node, Poly]]) -> Rotation:
    """The rotation the walk ``loop`` carries in ``names``, or Refused."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    body = loop.child_by_field_name("body")
    assert init is not None and cond is not None and body is not None
    var, _d, start = declared_name(init)
    lo = int_value(start) if start is not None else None
    bound = strip(cond.child_by_field_name("right") or cond)
    if lo is None or start is None or body.type != "compound_statement":
        raise Refused("the walk's first plane is not a compile-time integer", loop)
    for n in walk(plan.body):
        if n.type in ("break_statement", "continue_statement", "return_statement",
                      "goto_statement") and n.start_byte >= loop.start_byte and \
                n.end_byte <= loop.end_byte:
            raise Refused(f"`{text(n)}` leaves a plane of the walk early (the copies that "
                          "carry the registers must run on every plane)", n)
        if n.type == "field_expression" and any(builtin(n, b) == "z" for b in
                                                ("blockIdx", "threadIdx", "gridDim")):
            raise Refused(f"`{text(n)}` is read; the grid's z is the chunk of the walk", n)
    polys = Polys(plan.body, {var})
    out, store, center = store_index(plan, body, polys)
    step = derivative(center, var)
    if not step or any(var in m for m in step) or any(m.count(var) > 1 for m in center):
        raise Refused(f"the index of {out} is not linear in {var}", store)
    base = {m: c for m, c in center.items() if var not in m}  # the column at plane 0

    def plane(read: Node) -> int | None:
        diff = add(polys.of(subscript_index(read)), scale(base, -1))
        return next((d for d in range(-64, 65) if diff == scale(step, d)), None)

    # the carried registers: declared before the walk with a read at a plane of the column
    carried: dict[str, Carried] = {}
    for s in statements(plan.body):
        if s.end_byte > loop.start_byte or s.type != "declaration":
            continue
        for d in s.children_by_field_name("declarator"):
            name = declared_name_of(d)
            if name not in names:
                continue
            read = _read_of(plan, d.child_by_field_name("value"), name)
            at = plane(read)
            if at is None:
                raise Refused(f"{name} is declared with `{text(read)}`, not a plane of the "
                              f"column {out} is stored at", read)
            array = text(strip(read.child_by_field_name("argument")))  # type: ignore[arg-type]
            carried[name] = Carried(name, array, read, at - lo)
    # the walk's own locals read at a plane relative to z (the plane above, loaded each step)
    stmts = statements(body)
    tail = len(stmts)
    while tail > 0 and _copy(stmts[tail - 1]) is not None:
        tail -= 1
    copies = [_copy(s) for s in stmts[tail:]]
    held: dict[str, tuple[str, int]] = {c.name: (c.src, c.plane) for c in carried.values()}
    for s in stmts[:tail]:
        for n in walk(s):
            t = write_target(n)
            if t is not None and t.type == "identifier" and text(t) in names:
                raise Refused(f"`{text(n)}` writes the carried {text(t)} before the copies "
                              "that end the walk's body", n)
        if s.type != "declaration":
            continue
        for d in s.children_by_field_name("declarator"):
            value = d.child_by_field_name("value")
            local = strip(value) if value is not None else None
            if local is None or local.type != "subscript_expression":
                continue
            array = text(strip(local.child_by_field_name("argument")))  # type: ignore[arg-type]
            diff = add(polys.of(subscript_index(local)), scale(center, -1))
            at = next((k for k in range(-64, 65) if diff == scale(step, k)), None)
            if at is not None:
                held[declared_name_of(d)] = (array, at)  # plane z + at
    missing = sorted(names - {c[0] for c in copies if c is not None})
    if missing:
        raise Refused(f"{', '.join(missing)} written in the walk other than by the copies "
                      "that end its body", loop)
    now = dict(held)
    for copy in copies:
        assert copy is not None
        dst, src = copy
        if dst not in carried or src not in now:
            raise Refused(f"`{dst} = {src};` copies a value that is not a plane of the "
                          "column", loop)
        now[dst] = now[src]
    for c in carried.values():
        if now[c.name] != (c.src, c.plane + 1):
            raise Refused(f"the copies leave in {c.name} another plane than the one above "
                          "the plane it held", loop)
    hi = polys.of(bound)
    around = [s for s in statements(plan.body) if s != loop]
    stored = {_array(t) for n in walk(plan.body) if (t := write_target(n)) is not None
              and t.type == "subscript_expression"}
    for s in around:
        written = {t.start_byte for n in walk(s) if n.type == "assignment_expression" and
                   text(n.child_by_field_name("operator")) == "=" and
                   (t := write_target(n)) is not None}
        for n in walk(s):
            t = write_target(n)
            if t is not None and t.type != "identifier" and t.start_byte not in written:
                raise Refused(f"`{text(n)}` reads and writes memory outside the walk (each "
                              "block before it would add its own)", n)
            if n.type == "subscript_expression" and _array(n) in stored and \
                    n.start_byte not in written:
                raise Refused(f"`{text(n)}` reads {_array(n)}, which the walk stores, outside "
                              "it (another block's chunk may not have stored it yet)", n)
            fn = n.child_by_field_name("function") if n.type == "call_expression" else None
            if fn is not None and text(fn) not in PURE_CALLS:
                raise Refused(f"`{text(n)}` is called outside the walk (run by every block "
                              "before it, or by one after it: a write there is not known to "
                              "be the same)", n)
            if t is None or t.type == "identifier":
                continue
            if t.type != "subscript_expression":
                raise Refused(f"`{text(n)}` writes memory outside the walk", n)
            diff = add(polys.of(subscript_index(t)), scale(base, -1))
            below = next((k for k in range(-64, lo) if diff == scale(step, k)), None)
            above = next((k for k in range(0, 65)
                          if add(diff, scale(mul(step, add(hi, {(): k})), -1)) == {}), None)
            if below is None and above is None:
                raise Refused(f"`{text(n)}` stores outside the walk at a plane not known to "
                              f"lie outside {lo} .. {text(bound)} - 1", n)
    after = tuple(s for s in statements(plan.body) if s.start_byte >= loop.end_byte)
    return Rotation(loop, text(init.child_by_field_name("type")), start, bound,
                    tuple(carried.values()), poly_text(step), after)


def _array(sub: Node) -> str:
    return text(strip(sub.child_by_field_name("argument") or sub))


def _copy(stmt: Node) -> tuple[str, str] | None:
    """(target, source) of a statement ``v = w;`` of two names."""
    if stmt.type != "expression_statement" or not stmt.named_children:
        return None
    e = stmt.named_children[0]
    if e.type != "assignment_expression" or text(e.child_by_field_name("operator")) != "=":
        return None
    left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
    if left is None or right is None or left.type != "identifier" or \
            strip(right).type != "identifier":
        return None
    return text(left), text(strip(right))


def emit(plan: Plan, r: Rotation, planes: str | None) -> None:
    """Writes the split (see the module doc)."""
    lift_block(plan)
    rw = plan.rw
    zs = fresh_names(plan, [Z_SPLIT])[Z_SPLIT]
    typ, lo, hi = r.var_type, rw.text(r.start), rw.text(r.bound)
    reload = "".join(
        f"    {c.name} = {c.src}[{rw.render(*_span(subscript_index(c.read)))} + "
        f"(long long)(wb_z0 - ({lo})) * ({r.step})];\n" for c in r.carried)
    rw.insert(r.loop.start_byte, (
        f"// {zs} chunks of the walk, one per grid z slice; a chunk past the first reloads "
        "the planes its registers carry\n"
        f"  const {typ} wb_zchunk = ({hi} - ({lo}) + {zs} - 1) / {zs};\n"
        f"  const {typ} wb_z0 = ({lo}) + ({typ})blockIdx.z * wb_zchunk;\n"
        f"  const {typ} wb_z1 = ({hi}) < wb_z0 + wb_zchunk ? ({hi}) : wb_z0 + wb_zchunk;\n"
        f"  if (wb_z0 != ({lo}) && wb_z0 < wb_z1) {{\n{reload}  }}\n  "))
    rw.replace(r.start, "wb_z0")
    rw.replace(r.bound, "wb_z1")
    if r.after:
        rw.insert(r.after[0].start_byte,
                  f"if (wb_z1 == ({hi}) && (wb_z0 < wb_z1 || blockIdx.z == 0)) {{  "
                  "// the chunk that ends the walk\n  ")
        rw.insert(r.after[-1].end_byte, "\n  }")
    if len(plan.grid) == 3:
        plan.grid[2] = zs
    else:
        plan.grid.append(zs)
    plan.add_param(zs, {"kind": "choice", "values": [1, 2, 4, 8, 16], "default": 1,
                        "description": "chunks of the z walk marched by separate blocks "
                                       f"(grid z), each reloading its {len(r.carried)} carried "
                                       "registers (as written: 1)"},
                   f"{line(r.loop)}: {text(r.loop).splitlines()[0][:60]}")
    if planes is not None:
        # a chunk of fewer planes than the registers it reloads reads more than it walks
        plan.constrain(f"{zs} == 1 or {planes} // {zs} >= 2")
    names = ", ".join(c.name for c in r.carried)
    plan.note(Z_SPLIT, True, f"the walk carries {names} in registers from plane to plane "
              f"(copies that end its body); {zs} chunks of it on the grid's z, each reloading "
              "those at its first plane, the statements after the walk in the chunk that ends "
              "it", r.loop)


def _span(n: Node) -> tuple[int, int]:
    return n.start_byte, n.end_byte
