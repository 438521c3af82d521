"""PLANES_PER_THREAD: several values of an outer grid index per thread, the index math shared.

The family: a kernel whose outer index (a plane, an image, a batch) is a whole grid
dimension, ``blockIdx.y`` (or ``z``) with no thread index along it, and whose per-output
work splits in two: index arithmetic that does not depend on that index (an output's
coordinates, a gather's taps and weights, its clamps) and the loads and stores that do (the
plane's base address). Known practice (the batched resizes and gathers of image libraries)
runs several planes a thread: the arithmetic once, the loads and stores once per plane, so
a thread keeps more independent loads in flight and the grid's y shrinks by the count.

Dependence on the index is computed on the parse (:func:`.conv_mix._closure`: the locals
assigned from ``blockIdx.d``, from such a local, or under a condition reading one, the
plane's bound itself left out). The rewrite is :mod:`.conv_mix`'s: a statement that depends
on the plane runs in an unrolled loop over ``q < PLANES_PER_THREAD`` where it was written,
reading ``blockIdx.d * PLANES_PER_THREAD + q``; a local that depends on it becomes an array
of that many (registers); every other statement runs once, as each of the threads ran it
before. Per plane the statements run in the written order on the same values: bit for bit
the kernel as written.

The plane's bound: the kernel's own test of the index against a kernel argument launched
with the grid's extent (``if (i >= n || blockIdx.y >= p) return;``, ``if (i < n && z < p)
{..}``, the index spelled directly or through a local naming it alone) leaves the guard and
runs with each plane's statements instead; a kernel that tests no bound gets the one its
grid implies where a kernel argument is launched with the grid's extent. The grid's extent
becomes ``ceil_div(extent, PLANES_PER_THREAD)``; a literal extent with no bound takes only
its divisors (no test needed). ``PLANES_PER_THREAD = 1`` is the kernel as written.

Legal only where the analysis shows (refusals name the line): no shared memory, barrier,
atomic or warp intrinsic; no ``threadIdx.d``/``blockDim.d``/``gridDim.d``; loop headers that
do not depend on the plane; no ``return``/``break``/``continue``/``goto`` leaving a
statement that depends on it; no statement that depends on it inside a loop (a window along
the index: the row families' shape, OUT_Y's and CO_PER_THREAD's); memory written only by
statements that depend on the plane, at places that do, and never read by the kernel; calls
in those statements pure; a local that depends on it declared once, one to a declaration,
not ``auto``, not an array. Offered only
where the planes share index math (at least :data:`SHARED_MIN` thread-varying locals that
the per-plane statements read and that do not depend on the plane); a plain batched copy
shares only its index and is left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    LOOPS,
    binary,
    builtin,
    inside_loop,
    line,
    mentions,
    shares_or_syncs,
    strip,
    text,
    walk,
)
from workbench.templater.conv_mix import (
    _BASE_REGS,
    _WARP,
    _array_decl,
    _array_text,
    _author_minimum,
    _check_writes,
    _closure,
    _declared,
    _definition,
    _is_declarator,
    _Mix,
    _statements,
    _unit,
    _unit_text,
)
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, fresh_names
from workbench.templater.rules import literal

KNOB = "PLANES_PER_THREAD"
#: Planes per thread offered: the expert templates of batched gathers go to 4; 8 doubles
#: the loads in flight again at one index computation.
CHOICES = (1, 2, 4, 8)
#: Thread-varying locals the per-plane statements must share for the lift to buy anything.
SHARED_MIN = 3


@dataclass
class _Bound:
    """The plane's bound ``X >= N`` (or ``X < N`` under ``&&``) in the kernel's guard."""

    stmt: Node  # the guard's if statement
    term: Node  # the disjunct / conjunct testing the plane
    index: Node  # X: the blockIdx read or the local naming it
    limit: Node  # N
    exits: bool  # ``if (.. || X >= N) return;`` (else ``if (.. && X < N) {..}``)


def apply_grid_planes(plan: Plan) -> bool:
    """PLANES_PER_THREAD along the first grid dimension (y, then z) of the family; False
    where none is (silently) or the analysis refused (noted with the line)."""
    for dim in ("y", "z"):
        g = "xyz".index(dim)
        if g >= len(plan.grid) or any(literal(b) != 1 for b in plan.block[g:]):
            continue
        body = plan.body
        fields = [n for n in walk(body) if n.type == "field_expression"]
        if not any(builtin(n, "blockIdx") == dim for n in fields) or any(
                builtin(n, b) == dim for n in fields for b in ("threadIdx", "blockDim",
                                                               "gridDim")):
            continue
        try:
            emit = _analyse(plan, dim)
        except Refused as exc:
            plan.note(KNOB, False, exc.reason, exc.node)
            return False
        if emit is not None:
            emit()
            return True
    return False


def _plane_read(dim: str) -> Callable[[Node], bool]:
    return lambda n: n.type == "field_expression" and builtin(n, "blockIdx") == dim


def _aliases(plan: Plan, dim: str) -> set[str]:
    """Locals declared from ``blockIdx.dim`` alone (casts allowed), never assigned."""
    return {d.name for d in plan.facts.defs.values()
            if not d.assigned and d.value is not None and builtin(d.value, "blockIdx") == dim}


def _terms(cond: Node, op: str) -> list[Node]:
    """The operands of a chain of ``op`` (``||`` or ``&&``), parentheses dropped."""
    n = cond
    while n.type in ("parenthesized_expression", "condition_clause") and \
            n.named_child_count == 1:
        n = n.named_children[0]
    parts = binary(n)
    if parts is None or parts[1] != op:
        return [n]
    return [*_terms(parts[0], op), *_terms(parts[2], op)]


def _exits(stmt: Node) -> bool:
    """``stmt`` (an if's consequence) is ``return;`` or ``{ return; }``."""
    inner = [c for c in stmt.named_children if c.type != "comment"] \
        if stmt.type == "compound_statement" else [stmt]
    return len(inner) == 1 and inner[0].type == "return_statement" and \
        not inner[0].named_children


def _find_bound(plan: Plan, dim: str, aliases: set[str]) -> _Bound | None:
    """The kernel's test of the plane against its bound: the first top-level guard with a
    term ``X >= N`` / ``N <= X`` (exiting) or ``X < N`` / ``N > X`` (entering)."""
    def index(n: Node) -> bool:
        s = strip(n)
        return builtin(s, "blockIdx") == dim or (s.type == "identifier" and text(s) in aliases)
    for stmt in _statements(plan.body):
        if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
            continue
        cond, then = stmt.child_by_field_name("condition"), stmt.child_by_field_name(
            "consequence")
        if cond is None or then is None:
            continue
        exits = _exits(then)
        for term in _terms(cond, "||" if exits else "&&"):
            parts = binary(term)
            if parts is None:
                continue
            left, op, right = parts
            pairs = {">=": (left, right), "<=": (right, left)} if exits else \
                {"<": (left, right), ">": (right, left)}
            if op in pairs and index(pairs[op][0]):
                return _Bound(stmt, term, pairs[op][0], pairs[op][1], exits)
    return None


def _analyse(plan: Plan, dim: str) -> Callable[[], None] | None:
    body = plan.body
    g = "xyz".index(dim)
    is_read = _plane_read(dim)
    reads = [n for n in walk(body) if is_read(n)]
    bound = _find_bound(plan, dim, _aliases(plan, dim))
    own = set(plan.facts.defs)
    dep = _closure(body, set(), own, is_read, control=True,
                   skip=bound.stmt if bound is not None else None)

    def depends(n: Node) -> bool:
        return mentions(n, dep) or any(is_read(m) for m in walk(n))

    mix = _Mix(dim, reads[0], bound.stmt if bound is not None else reads[0], "", dep,
               role="plane")
    for stmt in _statements(body):
        _sort(plan, mix, stmt, bound, depends)
    looped = next((u for u in [*mix.units, *mix.arrays] if inside_loop(u, body)), None)
    if looped is not None:
        raise Refused(f"`{text(looped)[:60]}` depends on blockIdx.{dim} inside a loop: a window "
                      "along the grid's index (its rows' families), not a gather's planes",
                      looped)
    shared = _shared(plan, mix, dep)
    if len(shared) < SHARED_MIN:
        return None  # a batched copy: nothing but the index to share
    if shares_or_syncs(body):
        raise Refused("the block shares memory or synchronises: a thread's planes would "
                      "change what its block shares", reads[0])
    for n in walk(body):
        if n.type == "call_expression":
            fn = text(n.child_by_field_name("function"))
            if fn.startswith(_WARP):
                raise Refused(f"`{fn}` combines threads (or memory) across the grid's "
                              f"{dim}: not modelled", n)
    _check_writes(plan, mix, depends)
    grid = plan.grid[g]
    limit = _limit(plan, bound, grid)
    extent = literal(grid)
    choices = list(CHOICES) if limit is not None else \
        [c for c in CHOICES if extent is not None and extent % c == 0]
    if len(choices) < 2:
        raise Refused(f"nothing bounds the plane by the grid's {dim} `{grid}` (no kernel "
                      "argument is launched with it, and it is no literal with a divisor "
                      "in 2..8)", reads[0])
    names = fresh_names(plan, [KNOB, "wb_pq"])

    def emit() -> None:
        _emit(plan, mix, names, (bound, limit), choices, sorted(shared))
    return emit


def _limit(plan: Plan, bound: _Bound | None, grid: str) -> str | None:
    """The kernel-side text of the plane's bound: the guard's N where N is a kernel
    argument launched with the grid's extent (refused where the guard bounds by anything
    else), else such an argument; None where there is none."""
    launched = [a for a, value in plan.scalars.items() if value.strip() == grid.strip()]
    if bound is None:
        return launched[0] if launched else None
    n = strip(bound.limit)
    if n.type == "identifier" and text(n) in launched:
        return text(n)
    if literal(grid) is not None and n.type == "number_literal" and \
            literal(text(n)) == literal(grid):
        return text(n)
    raise Refused(f"the plane's bound `{text(bound.term)}` is not the grid's extent "
                  f"`{grid}` (a kernel argument launched with it): the planes past it "
                  "would run", bound.term)


def _sort(plan: Plan, mix: _Mix, stmt: Node, bound: _Bound | None,
          depends: Callable[[Node], bool]) -> None:
    """Sort ``stmt`` into kept, per-plane (``units``) and array declarations."""
    if bound is not None and stmt == bound.stmt:
        cond = stmt.child_by_field_name("condition")
        assert cond is not None
        if any(depends(t) for t in _terms(cond, "||" if bound.exits else "&&")
               if t != bound.term):
            raise Refused(f"the guard `{text(cond)[:60]}` tests the plane beyond its bound",
                          stmt)
        if not bound.exits:
            then = stmt.child_by_field_name("consequence")
            assert then is not None
            _sort(plan, mix, then, None, depends)
        return
    if not depends(stmt):
        return
    if stmt.type == "compound_statement":
        for s in _statements(stmt):
            _sort(plan, mix, s, None, depends)
    elif stmt.type == "declaration":
        _array_decl(plan.body, mix, stmt)
    elif stmt.type == "expression_statement":
        _unit(plan, mix, stmt)
    elif stmt.type == "if_statement":
        cond = stmt.child_by_field_name("condition")
        if cond is not None and depends(cond):
            _unit(plan, mix, stmt)
            return
        for part in ("consequence", "alternative"):
            sub = stmt.child_by_field_name(part)
            if sub is not None and sub.type == "else_clause":
                sub = next((c for c in sub.named_children if c.type != "comment"), None)
            if sub is not None:
                _sort(plan, mix, sub, None, depends)
    elif stmt.type in LOOPS:
        for part in ("condition", "initializer", "update"):
            head = stmt.child_by_field_name(part)
            if head is not None and depends(head):
                raise Refused(f"the loop's {part} `{text(head)[:50]}` depends on the plane: "
                              "the planes of a thread would loop differently", stmt)
        sub = stmt.child_by_field_name("body")
        if sub is not None:
            _sort(plan, mix, sub, None, depends)
    else:
        raise Refused(f"a `{stmt.type.replace('_', ' ')}` that depends on the plane is not "
                      "modelled", stmt)


def _shared(plan: Plan, mix: _Mix, dep: set[str]) -> set[str]:
    """The thread-varying locals that do not depend on the plane and that the per-plane
    statements read, directly or through the values of others: the index math shared."""
    own = set(plan.facts.defs)
    varying = _closure(plan.body, set(), own, lambda n: builtin(n, "threadIdx") is not None,
                       control=False)
    values: dict[str, list[Node]] = {}
    for n in walk(plan.body):
        target, value = _definition(n)
        if target is not None and value is not None:
            values.setdefault(target, []).append(value)
    found: set[str] = set()
    todo = [text(n) for s in [*mix.units, *mix.arrays] for n in walk(s)
            if n.type == "identifier"]
    while todo:
        name = todo.pop()
        if name in found or name in dep or name not in varying:
            continue
        found.add(name)
        todo += [text(n) for v in values.get(name, []) for n in walk(v) if n.type == "identifier"]
    return found


def _emit(plan: Plan, mix: _Mix, n: dict[str, str], bounds: tuple[_Bound | None, str | None],
          choices: list[int], shared: list[str]) -> None:
    bound, limit = bounds
    per, q = n[KNOB], n["wb_pq"]
    plane = f"(blockIdx.{mix.dim} * {per} + {q})"
    test = f" if ({plane} < {limit})" if limit is not None else ""
    loop = f"\n#pragma unroll\n  for (int {q} = 0; {q} < {per}; ++{q}){test}"
    arrays = {_declared(d) for d in mix.arrays}
    for scope in [*mix.units, *mix.arrays]:
        for ident in walk(scope):
            if _plane_read(mix.dim)(ident):  # edited inside its span: a declaration's
                field = ident.child_by_field_name("field")  # whole value renders it too
                assert field is not None
                plan.rw.insert(ident.start_byte, "(")
                plan.rw.replace(field, f"{mix.dim} * {per} + {q})")
            elif ident.type == "identifier" and text(ident) in arrays and not (
                    scope in mix.arrays and _is_declarator(ident)):
                plan.rw.replace(ident, f"{text(ident)}[{q}]")
    for unit in mix.units:
        plan.rw.replace_span(unit.start_byte, unit.end_byte, make=_unit_text(unit, [], loop))
    for decl in mix.arrays:
        plan.rw.replace_span(decl.start_byte, decl.end_byte, make=_array_text(decl, per, q,
                                                                              loop))
    if bound is not None:
        _drop_term(plan, bound)
    g = "xyz".index(mix.dim)
    grid = plan.grid[g]
    plan.grid[g] = f"ceil_div({grid}, {per})" if limit is not None else f"{grid} // {per}"
    plan.add_param(per, {"kind": "choice", "values": choices, "default": 1,
                         "description": f"values of the grid's {mix.dim} index per thread "
                                        "(the index math shared by them; as written: 1)"},
                   f"{line(mix.use)}: {text(mix.use)}")
    if plan.launch_bounds is not None and not _author_minimum(plan):
        threads = plan.launch_bounds if " " not in plan.launch_bounds else \
            f"({plan.launch_bounds})"
        # the copies under the register cap of __launch_bounds__ (the block's threads, or a
        # minimum of blocks): a copy a register and half again for the addresses and the
        # loads in flight (sm_90 ptxas, resize_bilinear_f16's 7 copies a plane over 8 items:
        # 43, 74 and 109 registers at 2, 4 and 8 planes; 4 planes spilled under a 64 cap)
        regs = f"({(3 * len(arrays) + 1) // 2} * {per} + {_BASE_REGS})"
        plan.constrain(f"{threads} * {regs} <= 65536")
        plan.constrain(f"MIN_BLOCKS_PER_SM == 0 or {threads} * MIN_BLOCKS_PER_SM * {regs} "
                       "<= 65536")
    how = f"bounded by `{limit}` a plane" if limit is not None else "the grid's extent divided"
    plan.note(KNOB, True, f"blockIdx.{mix.dim} is an outer index: {len(mix.units)} "
              f"statement(s) run per plane, {len(arrays)} local(s) become one copy per "
              f"plane, {len(shared)} local(s) of index math shared ({', '.join(shared)}); "
              f"{how}; grid {mix.dim} = {plan.grid[g]}", mix.use)


def _drop_term(plan: Plan, bound: _Bound) -> None:
    """The guard without its test of the plane (each plane's statements test it now)."""
    cond = bound.stmt.child_by_field_name("condition")
    assert cond is not None
    op = "||" if bound.exits else "&&"
    rest = [t for t in _terms(cond, op) if t != bound.term]
    if not rest:
        if bound.exits:
            plan.rw.replace(bound.stmt, "")
        else:
            plan.rw.replace(cond, "(true)")
        return
    plan.rw.replace_span(cond.start_byte, cond.end_byte, make=lambda rw: "(" + f" {op} ".join(
        rw.render(t.start_byte, t.end_byte) for t in rest) + ")")
