"""Z_SUMS: a thread marching Z_ITEMS planes (:mod:`.stencil_zgrid`) reads each input plane
once and carries the outputs' partial sums forward in registers.

Where Z_ITEMS makes a thread run the body for planes ``z, z + 1, ...`` one after another, a
3-D stencil's sum over a neighbourhood reads plane ``z + d`` for every offset ``d`` of its
box: a box of radius 1 loads each input value three times (27 loads an output where 9 are
new). Known practice (the z-march of plane sums, 2.5-D blocking) reads a plane once and adds
what it gives each of the ``2R + 1`` outputs around it to that output's running sum: the
registers held are the ``2R + 1`` sums and one plane's values, not ``2R + 1`` planes.

Recognised on the parse, whatever the spelling: the body is a *prefix* (declarations whose
values read no memory and call only pure functions, and guards ``if (c) return;`` or
``if (c) { ...; return; }`` whose conditions read no memory), an accumulator declared with
a constant (``float acc = 0.0f;``), one nest of ``for`` loops with constant bounds (each
level declarations, the innermost also ``acc += X;`` or ``acc = acc + X;``) and a *suffix*
with no ``return`` (the stores of ``acc``). In every ``X`` each read ``A[P]`` of a const
input whose index, as an integer polynomial over the kernel's names (single-assignment
locals expanded), depends on ``blockIdx.z`` is ``P = (blockIdx.z + d) * S + G`` at every
value of the counters: one plane stride ``S``, a plane offset ``d`` and an in-plane offset
``G`` (names a plane leaves unchanged: arguments, thread and block indices but the z). The
rest of ``X`` and the declarations it reads must not depend on the plane; every read of one
``X`` at one value of the counters is at one ``d``. Anything else is refused with the reason
and the line.

The rewrite (``Z_SUMS = 1``; 0 is the march as Z_ITEMS writes it): the nest is unrolled on
the templater's side (a block a counter value, the counters its constants). Steps run from
the thread's first plane less ``R`` to its last plus ``R``; at step ``p``: the prefix at
plane ``p + R`` (guards as ``break`` out of a ``do { } while (0)``, their bodies left out)
says whether that output reaches the nest; plane ``p``'s values are loaded once each (an
in-plane offset ``G``), each where some output that reads it at ``p`` reaches the nest (so
only addresses the kernel as written reads are touched); each output ``p - d`` adds the
terms of its nest at offset ``d``, in the nest's order; output ``p - R`` then runs the
prefix, guards and stores as written, with ``acc`` its finished sum. An output's terms are
added in its nest's order within a plane and plane by plane (the order as written where the
plane is the outermost counter, else another order of one sum). Legal because the input is
const and the stencil reads other planes: an output aliasing it would race between the
kernel's own threads as written.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace

from tree_sitter import Node

from workbench.templater import stencil_zsums_interior as interior
from workbench.templater.analysis import builtin, int_value, line, strip, text, walk
from workbench.templater.apron_window import loop_range
from workbench.templater.plan import Plan
from workbench.templater.purity import side_effect_free
from workbench.templater.regtile import Refused, _locals, apply_or_note
from workbench.templater.rewrite import Rewriter
from workbench.templater.stencil import Poly, Polys, add, derivative, mul, scale, statements
from workbench.templater.warp_regs import _min_blocks_follows

KNOB = "Z_SUMS"
PLANE = "blockIdx.z"
#: counter values the nest is unrolled at (a 5 x 5 x 5 box at most)
MAX_CELLS = 125
#: the largest plane offset carried (outputs z - 4 .. z + 4 pending)
MAX_RADIUS = 4
#: an in-plane offset: its polynomial's (monomial, coefficient) pairs, sorted
Key = tuple[tuple[tuple[str, ...], int], ...]
_MEMORY = ("subscript_expression", "pointer_expression")


@dataclass(frozen=True)
class Counter:
    """A loop of the nest: its variable, declared type and values."""

    name: str
    type: str
    values: range


@dataclass(frozen=True)
class Term:
    """One ``acc += X``: the statement, ``X``, and its reads that move with the plane."""

    stmt: Node
    value: Node
    reads: tuple[Node, ...]


@dataclass(frozen=True)
class Value:
    """One input value a plane gives: its array, element type, in-plane offset, the plane
    offsets ``d`` at which outputs read it, and a read that names it (``at`` counters, at
    offset ``rep_d``)."""

    array: str
    elem: str
    key: Key
    offsets: frozenset[int]
    read: Node
    at: tuple[int, ...]
    rep_d: int


@dataclass(frozen=True)
class Sums:
    """The analysed body: prefix, accumulator, nest, suffix, the unrolled cells and the
    values a plane gives."""

    prefix: tuple[Node, ...]
    acc: str
    acc_type: str
    init: Node
    suffix: tuple[Node, ...]
    counters: tuple[Counter, ...]
    decls: tuple[Node, ...]  # the nest's declarations, outer levels first
    terms: tuple[Term, ...]
    cells: tuple[tuple[tuple[int, ...], int, int, tuple[int, ...]], ...]  # at, term, d, values
    values: tuple[Value, ...]
    radius: int
    # INTERIOR: the guards' comparisons, each monotone in the plane, or why not
    interior: tuple[interior.Compare, ...] | Refused = ()


def lift_zsums(plan: Plan, items: str, nz: str) -> Callable[[], None] | None:
    """The analysis, run before Z_ITEMS writes its loop: a function that writes the march
    (call it after Z_ITEMS closed its loop), or None where the body is not of the family or
    was refused (the finding says why)."""
    made: list[Callable[[], None]] = []

    def analyse() -> Callable[[], None] | None:
        found = _analyse(plan)
        if found is None:
            return None
        sums = found
        return lambda: made.append(_emit(plan, sums, items, nz))
    if not apply_or_note(plan, KNOB, analyse):
        return None
    return made[0]


def _analyse(plan: Plan) -> Sums | None:
    stmts = statements(plan.body)
    at = next((i for i, s in enumerate(stmts[:-1]) if _accumulator(s) is not None and
               stmts[i + 1].type == "for_statement"), None)
    if at is None:
        return None
    acc, acc_type, init = _accumulator(stmts[at])  # type: ignore[misc]
    prefix, nest, suffix = stmts[:at], stmts[at + 1], stmts[at + 2:]
    counters, decls, terms = _nest(plan, nest, acc)
    if not terms:
        return None
    for s in prefix:
        _prefix_ok(plan, s)
    for s in suffix:
        for n in walk(s):
            if n.type in ("return_statement", "goto_statement") or (
                    n.type in ("break_statement", "continue_statement") and
                    _enclosing_loop(n, s) is None):
                raise Refused(f"`{text(n)}` after the nest leaves the plane", n)
    polys = Polys(plan.body, set())
    body_locals = set(_locals(plan.body))
    stride: Poly | None = None
    moving: dict[int, Poly] = {}
    kept: list[Term] = []
    for t in terms:
        reads = []
        # X's reads and those of the nest's declarations X reads (const float v = in[..])
        for r in [*t.reads, *(r for d in _needed(decls, _names(t.value)) for r in _reads(plan, d))]:
            p = polys.of(_index(r))
            slope = derivative(p, PLANE)
            if not slope:
                continue  # plane-free (a table of weights): read as written
            if stride is None:
                stride = slope
            if slope != stride or any(PLANE in m for m in slope):
                raise Refused(f"`{text(r)}` does not move with the plane at the stride of the "
                              "other reads", r)
            moving[r.start_byte] = p
            reads.append(r)
        if not reads:
            raise Refused(f"`{text(t.value)}` reads no plane of the input", t.stmt)
        kept.append(replace(t, reads=tuple(reads)))
    terms = tuple(kept)
    spans = tuple(r for t in terms for r in t.reads)
    tainted = _plane_names(plan, [*prefix, *decls], spans)
    for t in terms:
        _plane_free(plan, t, tainted)
    assert stride is not None
    lead = max(stride, key=lambda m: (len(m), m))
    cells, values = _cells(plan, counters, terms, moving, stride, lead, body_locals)
    radius = max(abs(d) for _a, _t, d, _v in cells)
    if radius == 0:
        raise Refused("every read is of the output's own plane: no plane is shared",
                      terms[0].reads[0])
    if radius > MAX_RADIUS:
        raise Refused(f"reads reach {radius} planes away (at most {MAX_RADIUS})",
                      terms[0].reads[0])
    return Sums(tuple(prefix), acc, acc_type, init, tuple(suffix), counters, decls, terms,
                cells, values, radius, interior.analyse(plan, tuple(prefix)))


def _accumulator(stmt: Node) -> tuple[str, str, Node] | None:
    """(name, type, value) of ``T name = <constant>;``."""
    if stmt.type != "declaration":
        return None
    ds = [c for c in stmt.named_children if c.type == "init_declarator"]
    kind = stmt.child_by_field_name("type")
    if len(ds) != 1 or kind is None or len(stmt.children_by_field_name("declarator")) != 1:
        return None
    name, value = ds[0].child_by_field_name("declarator"), ds[0].child_by_field_name("value")
    if name is None or value is None or name.type != "identifier":
        return None
    v = strip(value)
    if v.type != "number_literal" and int_value(v) is None:
        return None
    return text(name), text(kind), value


def _nest(plan: Plan, outer: Node, acc: str
          ) -> tuple[tuple[Counter, ...], tuple[Node, ...], tuple[Term, ...]]:
    counters: list[Counter] = []
    decls: list[Node] = []
    loop: Node | None = outer
    while loop is not None:
        got = loop_range(loop)
        init = loop.child_by_field_name("initializer")
        if got is None or init is None or init.child_by_field_name("type") is None:
            raise Refused("the loop after the accumulator has no constant bounds", loop)
        counters.append(Counter(got[0], text(init.child_by_field_name("type")), got[1]))
        body = loop.child_by_field_name("body")
        assert body is not None
        inner = statements(body) if body.type == "compound_statement" else [body]
        loop = None
        terms: list[Term] = []
        for i, s in enumerate(inner):
            if s.type == "for_statement" and i == len(inner) - 1 and not terms:
                loop = s
            elif s.type == "declaration":
                decls.append(s)
            else:
                terms.append(_term(plan, s, acc))
        if loop is not None and terms:
            raise Refused("the nest adds to the accumulator outside its innermost loop", loop)
    cells = 1
    for c in counters:
        cells *= len(c.values)
    if cells > MAX_CELLS or cells == 0:
        raise Refused(f"the nest runs {cells} times (1 to {MAX_CELLS} are unrolled)", outer)
    for d in decls:
        if any(text(n) == acc for n in walk(d) if n.type == "identifier") or \
                not side_effect_free(plan.source, d.child_by_field_name("declarator") or d):
            raise Refused(f"`{text(d)}` in the nest reads the accumulator or has an effect", d)
        _reads(plan, d)
    return tuple(counters), tuple(decls), tuple(terms)


def _term(plan: Plan, stmt: Node, acc: str) -> Term:
    e = stmt.named_children[0] if stmt.type == "expression_statement" and \
        stmt.named_children else None
    if e is None or e.type != "assignment_expression" or \
            text(e.child_by_field_name("left")) != acc:
        raise Refused(f"`{text(stmt)}` in the nest is not an addition to `{acc}`", stmt)
    op, right = text(e.child_by_field_name("operator")), e.child_by_field_name("right")
    assert right is not None
    value: Node | None = right if op == "+=" else None
    parts = right.child_by_field_name("left"), right.child_by_field_name("operator")
    if op == "=" and right.type == "binary_expression" and parts[1] is not None and \
            text(parts[1]) == "+" and parts[0] is not None and text(strip(parts[0])) == acc:
        value = right.child_by_field_name("right")
    if value is None or any(text(n) == acc for n in walk(value) if n.type == "identifier"):
        raise Refused(f"`{text(stmt)}` is not `{acc} += X` with X free of `{acc}`", stmt)
    if not side_effect_free(plan.source, value):
        raise Refused(f"`{text(value)}` has an effect or an impure call", value)
    return Term(stmt, value, tuple(_reads(plan, value)))  # _analyse keeps the moving ones


def _reads(plan: Plan, node: Node) -> list[Node]:
    """The reads of ``node``: each of a const input at an index that reads no memory (read
    at another plane's step, nothing the thread stores may change them)."""
    consts = {p.name for p in plan.kernel.params if p.is_pointer and p.is_const}
    reads: list[Node] = []
    for n in walk(node):
        if n.type == "pointer_expression" and text(n.child_by_field_name("operator")) == "*":
            raise Refused(f"`{text(n)}` reads memory through a pointer", n)
        if n.type == "subscript_expression":
            arr = text(strip(n.child_by_field_name("argument")))  # type: ignore[arg-type]
            if arr not in consts or any(a is not n and a.type in _MEMORY for a in walk(n)):
                raise Refused(f"`{text(n)}` is not a read of a const input at an index that "
                              "reads no memory", n)
            reads.append(n)
    return reads


def _index(sub: Node) -> Node:
    idx = sub.child_by_field_name("indices")
    if idx is None or len(idx.named_children) != 1:
        raise Refused(f"`{text(sub)}` is not one index", sub)
    return idx.named_children[0]


def _enclosing_loop(n: Node, top: Node) -> Node | None:
    up = n.parent
    while up is not None and up != top.parent:
        if up.type in ("for_statement", "while_statement", "do_statement",
                       "switch_statement"):
            return up
        up = up.parent
    return None


def _prefix_ok(plan: Plan, s: Node) -> None:
    """A declaration reading no memory, or a guard ``if (c) return;`` /
    ``if (c) { ...; return; }`` whose condition reads no memory."""
    if s.type == "declaration":
        if any(n.type in _MEMORY for n in walk(s)) or not side_effect_free(
                plan.source, s.child_by_field_name("declarator") or s):
            raise Refused(f"`{text(s)}` before the sum reads memory or has an effect", s)
        return
    if s.type == "if_statement" and s.child_by_field_name("alternative") is None:
        cond, then = s.child_by_field_name("condition"), s.child_by_field_name("consequence")
        assert cond is not None and then is not None
        body = statements(then) if then.type == "compound_statement" else [then]
        if body and body[-1].type == "return_statement" and not any(
                n.type in ("return_statement", "break_statement", "continue_statement",
                           "goto_statement") for b in body[:-1] for n in walk(b)) and \
                not any(n.type in _MEMORY for n in walk(cond)) and \
                side_effect_free(plan.source, cond):
            return
    raise Refused(f"`{text(s).splitlines()[0]}` before the sum is neither a declaration nor "
                  "a guard that returns", s)


def _plane_names(plan: Plan, decls: list[Node], skip: tuple[Node, ...]) -> set[str]:
    """The locals whose values depend on the plane (``blockIdx.z``, or such a local) other
    than through the reads ``skip`` (each replaced by the plane's value it names)."""
    out: set[str] = set()
    for s in decls:
        if s.type != "declaration":
            continue
        for d in s.named_children:
            if d.type != "init_declarator":
                continue
            name, value = d.child_by_field_name("declarator"), d.child_by_field_name("value")
            if name is None or value is None:
                continue
            inside = [n for n in walk(value)
                      if not any(r.start_byte <= n.start_byte < r.end_byte for r in skip)]
            if any(n.type == "field_expression" and builtin(n, "blockIdx") == "z"
                   for n in inside) or any(n.type == "identifier" and text(n) in out
                                           for n in inside):
                out.add(text(name))
    return out


def _plane_free(plan: Plan, t: Term, tainted: set[str]) -> None:
    """``X`` less its moving reads reads nothing that changes with the plane."""
    inside = [(r.start_byte, r.end_byte) for r in t.reads]
    for n in walk(t.value):
        if any(a <= n.start_byte < b for a, b in inside):
            continue
        if (n.type == "identifier" and text(n) in tainted) or (
                n.type == "field_expression" and builtin(n, "blockIdx") == "z"):
            raise Refused(f"`{text(n)}` in `{text(t.value)}` changes with the plane", n)


def _substitute(p: Poly, values: dict[str, int]) -> Poly:
    out: Poly = {}
    for m, c in p.items():
        keep = tuple(a for a in m if a not in values)
        for a in m:
            if a in values:
                c *= values[a]
        out = add(out, {keep: c})
    return out


def _cells(plan: Plan, counters: tuple[Counter, ...], terms: tuple[Term, ...],
           moving: dict[int, Poly], stride: Poly, lead: tuple[str, ...], body_locals: set[str]
           ) -> tuple[tuple[tuple[tuple[int, ...], int, int, tuple[int, ...]], ...],
                      tuple[Value, ...]]:
    names = [c.name for c in counters]
    elem = {p.name: p.base_type for p in plan.kernel.params}
    found: dict[tuple[str, Key], Value] = {}
    order: list[tuple[str, Key]] = []
    cells = []
    for at in itertools.product(*(c.values for c in counters)):
        env = dict(zip(names, at, strict=True))
        for ti, t in enumerate(terms):
            ds, slots = set(), []
            for r in t.reads:
                rest = add(_substitute(moving[r.start_byte], env),
                           scale(mul({(PLANE,): 1}, stride), -1))
                if any(PLANE in m for m in rest) or rest.get(lead, 0) % stride[lead]:
                    raise Refused(f"`{text(r)}` is not at a whole plane from the output's", r)
                d = rest.get(lead, 0) // stride[lead]
                g = add(rest, scale(stride, -d))
                for a in sorted({a for m in g for a in m}):
                    if a in body_locals or a in names or not a.replace(".", "").isidentifier():
                        raise Refused(f"`{a}` in `{text(r)}`'s offset is neither a constant "
                                      "nor a name a plane leaves unchanged", r)
                arr = text(strip(r.child_by_field_name("argument")))  # type: ignore[arg-type]
                key = (arr, tuple(sorted(g.items())))
                ds.add(d)
                old = found.get(key)
                if old is None:
                    order.append(key)
                    found[key] = Value(arr, elem[arr], key[1], frozenset({d}), r, at, d)
                else:
                    better = abs(d) < abs(old.rep_d)
                    found[key] = Value(arr, old.elem, old.key, old.offsets | {d},
                                       r if better else old.read, at if better else old.at,
                                       d if better else old.rep_d)
                slots.append(order.index(key))
            if len(ds) != 1:
                raise Refused(f"`{text(t.value)}` reads {len(ds)} planes at once (one term, "
                              "one plane)", t.stmt)
            cells.append((at, ti, ds.pop(), tuple(slots)))
    return tuple(cells), tuple(found[k] for k in order)


def _emit(plan: Plan, sums: Sums, items: str, nz: str) -> Callable[[], None]:
    """The opening ``#if Z_SUMS`` (the march) now; the closing ``#endif``, the knob and its
    constraints by the function returned (after Z_ITEMS closed its loop and took its knob)."""
    body = plan.body
    rw = plan.rw
    rw.replace_span(body.start_byte + 1, body.start_byte + 1,
                    make=lambda rw: f"\n#if {KNOB}\n{_march(rw, sums, items, nz)}#else\n")

    def close() -> None:
        rw.insert(body.end_byte - 1, f"#endif  // {KNOB}\n")
        first = sums.terms[0].reads[0]
        plan.add_param(KNOB, {"kind": "choice", "values": [0, 1], "default": 0,
                              "description": "1: each input plane is read once and the "
                                             "outputs' partial sums carried across planes in "
                                             "registers (0: each output's sum read as "
                                             "written)"},
                       f"{line(first)}: {text(first)}")
        plan.constrain(f"{KNOB} == 0 or {items} > 1")
        if _min_blocks_follows(plan) and plan.launch_bounds is not None:
            # the plane's values and the sums under MIN_BLOCKS_PER_SM's register cap
            kept = len(sums.values) + 2 * sums.radius + 1
            plan.constrain(f"{KNOB} == 0 or MIN_BLOCKS_PER_SM == 0 or {kept} + 32 <= 65536 "
                           f"// (({plan.launch_bounds}) * MIN_BLOCKS_PER_SM)")
        _interior_knob(plan, sums)
        plan.note(KNOB, True, f"{len(sums.values)} value(s) of a plane read once each, "
                  f"{2 * sums.radius + 1} outputs' sums of `{sums.acc}` carried in registers "
                  f"(the nest unrolled: {len(sums.cells)} terms)", first)
    return close


def _interior_knob(plan: Plan, sums: Sums) -> None:
    """INTERIOR's knob and constraint, or the reason there is none (noted)."""
    if isinstance(sums.interior, Refused):
        node = sums.interior.node if sums.interior.node is not None else sums.terms[0].stmt
        plan.note(interior.KNOB, False, f"{sums.interior.reason}: every step tests whether "
                  "its output reaches the sum", node)
        return
    if not sums.interior:
        return  # no guard: every step's output reaches the sum already
    first = next(s for s in sums.prefix if s.type != "declaration")
    plan.add_param(interior.KNOB, {
        "kind": "choice", "values": [0, 1], "default": 0,
        "description": "1: a thread whose every output of its planes passes the guards "
                       "marches without testing them at each step (tested once at its "
                       "first and last plane); 0: tested at each step (as written)"},
        f"{line(first)}: {text(first).splitlines()[0]}")
    plan.constrain(f"{interior.KNOB} == 0 or {KNOB} == 1")  # only the march has the copy
    plan.note(interior.KNOB, True, f"{len(sums.interior)} comparison(s) of the guards are "
              "affine in the plane: INTERIOR = 1 tests them once a thread, at its first and "
              "last plane, and runs a march without the per-step tests", first)


def _plane(rw: Rewriter, at: str) -> str:
    return f"const unsigned wb_zp = (unsigned)({at});  // the plane as blockIdx.z\n"


def _names(node: Node, skip: tuple[Node, ...] = ()) -> set[str]:
    """The identifiers of ``node`` outside the subtrees ``skip``."""
    return {text(n) for n in walk(node) if n.type == "identifier" and
            not any(r.start_byte <= n.start_byte < r.end_byte for r in skip)}


def _needed(decls: tuple[Node, ...], used: set[str], skip: tuple[Node, ...] = ()
            ) -> list[Node]:
    """The declarations of ``decls`` whose names ``used`` reads, and those they read
    (outside the reads ``skip``, each replaced by a value)."""
    used = set(used)
    kept = []
    for d in reversed(decls):
        if _declared(d) & used:
            kept.append(d)
            used |= _names(d, skip)
    return kept[::-1]


def _declared(decl: Node) -> set[str]:
    return {text(d.child_by_field_name("declarator")) for d in decl.named_children
            if d.type == "init_declarator"}


def _decls(rw: Rewriter, sums: Sums, used: set[str]) -> str:
    """The prefix's declarations ``used`` needs (the others go unread there)."""
    prefix = tuple(s for s in sums.prefix if s.type == "declaration")
    return "".join(rw.text(s) + "\n" for s in _needed(prefix, used))


def _flag(rw: Rewriter, sums: Sums) -> str:
    """The prefix with its guards as ``break``: ``wb_zreach`` set where none fires."""
    guards = [s for s in sums.prefix if s.type != "declaration"]
    kept = _needed(tuple(s for s in sums.prefix if s.type == "declaration"),
                   set().union(*(_names(g.child_by_field_name("condition") or g) for g in guards)))
    out = ["do {\n"]
    for s in sums.prefix:
        if s.type == "declaration":
            out += [rw.text(s) + "\n"] if s in kept else []
        else:
            out.append(f"if {rw.text(s.child_by_field_name('condition'))} break;\n")  # type: ignore[arg-type]
    out.append("wb_zreach = true;\n} while (0);\n")
    return "".join(out)


def _finish(rw: Rewriter, sums: Sums, slot: str, known: bool = False) -> str:
    """The prefix, its guards' bodies and the suffix as written, ``acc`` the carried sum
    (``known``: the interior march, where no guard fires)."""
    out = ["do {\n"]
    for s in sums.prefix:
        if s.type == "declaration":
            out.append(rw.text(s) + "\n")
            continue
        then = s.child_by_field_name("consequence")
        assert then is not None
        body = statements(then) if then.type == "compound_statement" else [then]
        inner = "".join(rw.text(b) + " " for b in body[:-1])
        cond = rw.text(s.child_by_field_name("condition"))  # type: ignore[arg-type]
        out.append(f"if {f'(false && {cond})' if known else cond} {{ {inner}break; }}\n")
    out.append(f"{sums.acc_type} {sums.acc} = {slot};\n")
    out += [rw.text(s) + "\n" for s in sums.suffix]
    out.append("} while (0);\n")
    return "".join(out)


def _cell(rw: Rewriter, sums: Sums, at: tuple[int, ...], used: set[str],
          values: dict[Node, int] | None = None) -> str:
    """The counters at ``at`` and the nest's declarations ``used`` needs, the reads in
    ``values`` replaced by the plane's values."""
    values = values or {}
    consts = "".join(f"const {c.type} {c.name} = {v}; "
                     for c, v in zip(sums.counters, at, strict=True))
    return consts + "".join(_replaced(rw, d, values) + " "
                            for d in _needed(sums.decls, used, tuple(values)))


def _uses(sums: Sums, node: Node, skip: tuple[Node, ...] = ()) -> set[str]:
    """What ``node`` reads (outside ``skip``) with the nest's declarations it needs."""
    used = _names(node, skip)
    for d in _needed(sums.decls, used, skip):
        used |= _names(d, skip)
    return used


def _replaced(rw: Rewriter, node: Node, values: dict[Node, int]) -> str:
    """``node`` as rendered, its reads in ``values`` replaced by the plane's values."""
    inside = sorted((r for r in values if node.start_byte <= r.start_byte < node.end_byte),
                    key=lambda r: r.start_byte)
    if not inside:
        return rw.text(node)
    out, pos = [], node.start_byte
    for r in inside:
        out += [rw.render(pos, r.start_byte), f"wb_zv{values[r]}"]
        pos = r.end_byte
    return "".join([*out, rw.render(pos, node.end_byte)])


def _march(rw: Rewriter, sums: Sums, items: str, nz: str) -> str:
    n = 2 * sums.radius + 1
    t = sums.acc_type
    init = rw.text(sums.init)
    slots = [f"wb_zs{j}" for j in range(n)]  # slot j: output p + R - j (plane offset j - R)
    flags = [f"wb_zok{j}" for j in range(n)]
    out = [f"  {{  // {KNOB}: planes read once, {n} outputs' sums carried\n",
           f"  {t} " + ", ".join(f"{s} = {init}" for s in slots) + ";\n",
           "  bool " + ", ".join(f"{f} = false" for f in flags) + ";\n",
           f"  const int wb_zk0 = (int)(blockIdx.z * {items});\n",
           f"  const int wb_zk1 = min(wb_zk0 + (int)({items}), (int)({nz}));\n"]
    if isinstance(sums.interior, tuple) and sums.interior:
        names = set().union(*(_names(c.node) for c in sums.interior))
        decls = _decls(rw, sums, names)  # what the guards' comparisons read at a plane
        out.append(interior.thread_test(sums.interior, lambda at: _plane(rw, at) + decls,
                                        interior.KNOB, rw.text))
        out += [f"  if ({interior.FLAG}) {{\n", *_loop(rw, sums, True), "  } else {\n",
                *_loop(rw, sums, False), "  }\n  }\n"]
        return "".join(out)
    out += [*_loop(rw, sums, False), "  }\n"]
    return "".join(out)


def _loop(rw: Rewriter, sums: Sums, known: bool) -> list[str]:
    """The planes' loop (``known``: the interior march, every output in range reaches the
    sum)."""
    r, n = sums.radius, 2 * sums.radius + 1
    init = rw.text(sums.init)
    slots = [f"wb_zs{j}" for j in range(n)]  # slot j: output p + R - j (plane offset j - R)
    flags = [f"wb_zok{j}" for j in range(n)]
    out = [f"  for (int wb_zq = wb_zk0 - {r}; wb_zq < wb_zk1 + {r}; ++wb_zq) {{\n",
           f"    if (wb_zq + {r} < wb_zk1) {{  // output wb_zq + {r}: does it reach the sum?\n"]
    if known:
        out.append(f"      {flags[0]} = true;  // {interior.KNOB}: every output here does\n    }}\n")
    else:
        out += ["      bool wb_zreach = false;\n      {\n      " + _plane(rw, f"wb_zq + {r}"),
                _flag(rw, sums), "      }\n", f"      {flags[0]} = wb_zreach;\n    }}\n"]
    out.append("    " + " ".join(f"{v.elem} wb_zv{i};" for i, v in enumerate(sums.values))
               + "\n")
    for d in sorted({v.rep_d for v in sums.values}, key=abs):
        reps = [(i, v) for i, v in enumerate(sums.values) if v.rep_d == d]
        used = set().union(*(_uses(sums, v.read) for _i, v in reps))
        out.append("    {\n    " + _plane(rw, f"wb_zq - ({d})") + _decls(rw, sums, used))
        for i, v in reps:
            guard = " || ".join(flags[e + r] for e in sorted(v.offsets))
            if known:  # the outputs that read it: those in the thread's range
                guard = "true" if set(v.offsets) == set(range(-r, r + 1)) else " || ".join(
                    f"(wb_zq - ({e}) >= wb_zk0 && wb_zq - ({e}) < wb_zk1)"
                    for e in sorted(v.offsets))
            out.append(f"    {{ {_cell(rw, sums, v.at, _names(v.read))}wb_zv{i} = ({guard}) ? "
                       f"({v.elem})({rw.text(v.read)}) : ({v.elem})0; }}\n")
        out.append("    }\n")
    used = set().union(*(_uses(sums, t.value, t.reads) for t in sums.terms))
    decls = _decls(rw, sums, used)
    out.append("    {  // each output adds its terms of plane wb_zq\n" +
               (f"    {_plane(rw, 'wb_zq')}{decls}" if decls else ""))
    for j in range(n):
        for at, ti, d, vals in sums.cells:
            term = sums.terms[ti]
            if d == j - r:
                given = dict(zip(term.reads, vals, strict=True))
                out.append(f"    {{ {_cell(rw, sums, at, _names(term.value, term.reads), given)}"
                           f"{slots[j]} += {_replaced(rw, term.value, given)}; }}\n")
    out.append("    }\n")
    out.append(f"    if (wb_zq - {r} >= wb_zk0) {{  // output wb_zq - {r}: its sum is done\n"
               "      " + _plane(rw, f"wb_zq - {r}") + _finish(rw, sums, slots[-1], known) +
               "    }\n")
    out += [f"    {slots[j]} = {slots[j - 1]}; {flags[j]} = {flags[j - 1]};\n"
            for j in range(n - 1, 0, -1)]
    out.append(f"    {slots[0]} = {init}; {flags[0]} = false;\n  }}\n")
    return out
