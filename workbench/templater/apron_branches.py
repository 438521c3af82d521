"""Apron tiles loaded by per-thread branches: the apron lift's third load spelling.

A common way to stage a stencil's patch with its halo: every thread stores its own point
(``s[ly][lx] = f(gy, gx)``), and the first threads of each dimension also store the halo
(``if (threadIdx.x < R) { s[ly][lx - R] = f(gy, gx - R); s[ly][lx + B] = f(gy, gx + B); }``).
The stores' positions are tied to the block size (``lx + B``), so the tile cannot follow
another block as written. Here the stores are read as one function of the global position:

- every statement before the barrier is a declaration, a store ``tile[IY][IX] = V`` or an
  ``if`` (no ``else``) whose condition reads only the thread index and constants, around
  such statements (the condition only picks which positions a thread stores);
- each store's position is ``[threadIdx.y + cy][threadIdx.x + cx]`` (constants ``cy``,
  ``cx``; single-assignment locals expanded) and its value depends on the thread and the
  block only through the global position (:class:`.apron_loads.Check`); calls in it are pure
  or read-only (:mod:`.conv_reads`);
- all stores give the same function of the tile position: their values agree node by node,
  integer position arguments compared as polynomials after ``threadIdx.d -> p_d - c_d``
  (``f(gy, gx - R)`` stored at ``lx - R`` is ``f(gy, gx)`` stored at ``lx``).

The rewrite replaces the stores by one nest strided by the block over the whole tile
(``tile[p][q] = V(p - cy, q - cx)``), the apron lift's load spelling, so the tile, its halo
and its loads follow the block and the outputs per thread (:mod:`.apron`). Each position holds
the value the kernel as written stored there; positions it never stored (a star's corners,
never read) get the same function of their global position, as the nest spelling's tile
does at every new size: the value must be safe to read at any global position, which the
author's helper (bounds checked, or clamped) gives. The same function gives USE_SMEM = 0 in
:mod:`.apron` (each read at its position from the source; the row window only in the parts
the kernel stores). Thread-dependent locals are expanded in their declared type (``int y =
blockIdx.y * B + threadIdx.y`` stays signed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import binary, builtin, strip, text, walk
from workbench.templater.apron_loads import (
    Check,
    Deps,
    Load,
    Pair,
    base_array,
    declared_type,
    indices,
)
from workbench.templater.conv_reads import unmovable_call, why_unmovable
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, render
from workbench.templater.stencil import Poly, statements


@dataclass(frozen=True)
class _Store:
    stmt: Node
    cy: int
    cx: int
    value: Node
    cond_free: bool  # under no `if`


def _side(d: int) -> int:
    return 0 if d < 0 else 1 if d == 0 else 2


def branch_load(plan: Plan, stmts: list[Node], tile: str, sizes: dict[str, int], deps: Deps,
                extents: tuple[int, int]) -> Load:
    """The tile load that ``stmts`` (the non-declarations before the barrier) write as
    per-thread branches, as one nest over the whole ``extents`` tile; Refused otherwise."""
    stores: list[_Store] = []
    for s in stmts:
        _collect(plan, s, tile, deps, stores)
    if not stores:
        raise Refused(f"nothing before the barrier stores the tile {tile}", stmts[0])
    check = Check(deps, [Pair("threadIdx.y", "blockIdx.y", sizes["y"]),
                         Pair("threadIdx.x", "blockIdx.x", sizes["x"])], set())
    for st in stores:
        bad = check.bad(st.value)
        if bad is not None or tile in {text(n) for n in walk(st.value)}:
            raise Refused(f"the stored value `{text(bad or st.value)}` depends on the thread "
                          "or the block other than through the global position (or reads the "
                          "tile)", bad or st.value)
        call = unmovable_call(plan.source, st.value)
        if call is not None:
            raise Refused(why_unmovable(plan.source, call), call)
    centre = [st for st in stores if st.cond_free]
    if len(centre) != 1:
        raise Refused(f"{len(centre)} stores outside any `if`: one store of the thread's own "
                      "point (the tile's centre) is modelled", (centre[1:] or stores)[0].stmt)
    first = centre[0]
    for st in stores:
        if st is not first and \
                not _same(deps, first.value, (first.cy, first.cx), st.value, (st.cy, st.cx)):
            raise Refused(f"`{text(st.stmt)}` stores another function of the global position "
                          f"than `{text(first.stmt)}`: one tile of one function is modelled",
                          st.stmt)

    # the parts of the tile the kernel stores: below / at / past the centre, per dimension
    parts = sorted({(_side(st.cy - first.cy), _side(st.cx - first.cx)) for st in stores})

    def fill(sub: Callable[[Node], str | None], new: dict[str, str]) -> str:
        return _fill_text(plan, deps, tile, first, sub, new, parts)

    def direct(sub: Callable[[Node], str | None], p: str, q: str) -> str:
        return _value_at(plan, deps, first, sub, p, q)

    def part(sub: Callable[[Node], str | None], p: str, q: str, node: Node) -> str:
        return _value_at(plan, deps, first, sub, p, q, node)
    return Load(extents[0], extents[1], [], fill=fill, fill_nodes=tuple(stmts), direct=direct,
                value=first.value, position=("threadIdx.y", "threadIdx.x"), part=part)


def _collect(plan: Plan, s: Node, tile: str, deps: Deps, out: list[_Store],
             under_if: bool = False, pinned: dict[str, int] | None = None) -> None:
    """The stores of ``s`` (``pinned``: thread index dims an enclosing ``threadIdx.d == c``
    fixes, so a constant position ``k`` there is ``threadIdx.d + (k - c)``)."""
    pinned = pinned or {}
    if s.type == "compound_statement":
        for c in statements(s):
            _collect(plan, c, tile, deps, out, under_if, pinned)
        return
    if s.type == "if_statement":
        cond = s.child_by_field_name("condition")
        cons = s.child_by_field_name("consequence")
        if s.child_by_field_name("alternative") is not None or cond is None or cons is None:
            raise Refused(f"`{text(s).splitlines()[0]}` before the barrier is not an `if` "
                          "without `else` around tile stores", s)
        opaque: list[Node] = []
        p = deps.poly(cond, opaque)
        atoms = {a for m in p for a in m} | {a for o in opaque for n in walk(o)
                                             for a in _atoms(deps, n)}
        if atoms - {"threadIdx.x", "threadIdx.y"} - {a for a in atoms if a.startswith("#")}:
            raise Refused(f"the condition `{text(cond)}` reads more than the thread index: "
                          "which positions are stored would depend on the block", cond)
        _collect(plan, cons, tile, deps, out, True, {**pinned, **_pins(deps, cond)})
        return
    e = strip(s.named_children[0]) if s.type == "expression_statement" and \
        s.named_child_count == 1 else None
    left = e.child_by_field_name("left") if e is not None and \
        e.type == "assignment_expression" and \
        text(e.child_by_field_name("operator")) == "=" else None
    target = strip(left) if left is not None else None
    value = e.child_by_field_name("right") if e is not None else None
    if target is None or value is None or base_array(target) != tile or \
            len(indices(target)) != 2:
        raise Refused(f"`{text(s).splitlines()[0]}` before the barrier is neither a "
                      f"declaration, a tile load loop nor a store `{tile}[..][..] = v` (in "
                      "`if`s on the thread index)", s)
    shift = []
    for dim, idx in zip("yx", indices(target), strict=True):
        p = deps.poly(idx, [])
        if not set(p) - {()} and dim in pinned:  # `t[0][..]` under `threadIdx.y == 0`
            p = {(f"threadIdx.{dim}",): 1, (): p.get((), 0) - pinned[dim]}
        rest = {m: c for m, c in p.items() if m != (f"threadIdx.{dim}",)}
        if p.get((f"threadIdx.{dim}",)) != 1 or set(rest) - {()}:
            raise Refused(f"the tile position `{text(idx)}` is not threadIdx.{dim} plus a "
                          "constant", idx)
        shift.append(rest.get((), 0))
    out.append(_Store(s, shift[0], shift[1], value, not under_if))


def _pins(deps: Deps, cond: Node) -> dict[str, int]:
    """dim -> c for each conjunct ``threadIdx.d == c`` (either side) of ``cond``."""
    out: dict[str, int] = {}
    if cond.type == "condition_clause" and cond.named_child_count == 1:
        cond = cond.named_children[0]
    parts = binary(strip(cond))
    if parts is not None and parts[1] == "&&":
        return {**_pins(deps, parts[0]), **_pins(deps, parts[2])}
    if parts is None or parts[1] != "==":
        return out
    a, b = deps.poly(parts[0], []), deps.poly(parts[2], [])
    for one, other in ((a, b), (b, a)):
        for d in "xy":
            if one == {(f"threadIdx.{d}",): 1} and not set(other) - {()}:
                out[d] = other.get((), 0)
    return out


def _atoms(deps: Deps, n: Node) -> set[str]:
    """The builtins and names a condition's opaque part reads (locals expanded)."""
    if n.type == "identifier":
        if n.parent is not None and n.parent.type == "field_expression":
            return set()  # the `threadIdx` of `threadIdx.x`: read as the builtin below
        return {a for m in deps.poly(n, []) for a in m}
    if n.type == "field_expression":
        for name in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
            d = builtin(n, name)
            if d is not None:
                return {f"{name}.{d}"}
    return set()


def _shifted(deps: Deps, node: Node, shift: tuple[int, int]) -> Poly | None:
    """``node``'s polynomial with threadIdx.d -> p_d - c_d (None: not an integer polynomial
    linear in the thread index)."""
    opaque: list[Node] = []
    p = deps.poly(node, opaque)
    if opaque:
        return None
    out: Poly = {}
    for m, c in p.items():
        threads = [a for a in m if a.startswith("threadIdx.")]
        if len(threads) > 1:
            return None
        terms = [(m, c)]
        if threads:
            d = threads[0][-1]
            rest = list(m)
            rest.remove(threads[0])
            terms = [(tuple(sorted([*rest, f"wb_p{d}"])), c),
                     (tuple(sorted(rest)), -c * shift["yx".index(d)])]
        for mm, cc in terms:
            out[mm] = out.get(mm, 0) + cc
    return {m: c for m, c in out.items() if c}


def _same(deps: Deps, a: Node, sa: tuple[int, int], b: Node, sb: tuple[int, int]) -> bool:
    """Whether ``a`` (stored at shift ``sa``) and ``b`` (at ``sb``) are the same function of
    the tile position: node by node, integer parts compared as shifted polynomials."""
    a, b = strip(a), strip(b)
    pa, pb = _shifted(deps, a, sa), _shifted(deps, b, sb)
    if pa is not None and pb is not None:
        return pa == pb
    if a.type != b.type or a.named_child_count != b.named_child_count:
        return False
    if a.named_child_count == 0:
        return text(a) == text(b)
    if [text(c) for c in a.children if not c.is_named] != \
            [text(c) for c in b.children if not c.is_named]:
        return False
    return all(_same(deps, x, sa, y, sb)
               for x, y in zip(a.named_children, b.named_children, strict=True))


def _value_at(plan: Plan, deps: Deps, st: _Store, sub: Callable[[Node], str | None], p: str,
              q: str, node: Node | None = None) -> str:
    """``st``'s value (or ``node``, a part of it) at tile position (``p``, ``q``): the
    thread's locals expanded, its index made the position, ``sub``'s tile offsets applied."""
    data = plan.source.data
    shift = {"y": (p, st.cy), "x": (q, st.cx)}

    def at(n: Node, depth: int = 0) -> str | None:
        own = sub(n)
        if own is not None:
            return own
        d = builtin(n, "threadIdx") if n.type == "field_expression" else None
        if d is not None:
            pos, c = shift[d]
            return f"(({pos}) - {c})"
        if n.type == "identifier" and text(n) in deps.values and depth < 12 and \
                any(builtin(m, "threadIdx") is not None or (m.type == "identifier" and
                                                            text(m) in deps.values)
                    for m in walk(deps.values[text(n)])):
            value = deps.values[text(n)]
            # in the local's own type: `int y = blockIdx.y * B + threadIdx.y` is signed
            return f"(({declared_type(value)})(" + \
                render(data, value, lambda m: at(m, depth + 1)) + "))"
        return None
    return render(data, st.value if node is None else node, at)


def _stored(st: _Store, parts: list[tuple[int, int]], p: str, q: str, new: dict[str, str]
            ) -> str:
    """C text: whether tile position (``p``, ``q``) lies in a part the kernel stores
    ("" where it stores every part)."""
    if len(parts) == 9:
        return ""

    def side(pos: str, c: int, n: str) -> str:
        return f"(({pos}) < {c} ? 0 : ({pos}) < {c} + {n} ? 1 : 2)"
    sy = side(p, st.cy, f"{new['BY']} * {new['OY']}")
    sx = side(q, st.cx, f"{new['BX']} * {new['OX']}")
    return "(" + " || ".join(f"({sy} == {a} && {sx} == {b})" for a, b in parts) + ")"


def _fill_text(plan: Plan, deps: Deps, tile: str, st: _Store, sub: Callable[[Node], str | None],
               new: dict[str, str], parts: list[tuple[int, int]]) -> str:
    """The nest over the tile: ``st``'s value at each position, in the parts of the tile the
    kernel stores (below / at / past the centre rows and columns; a star's corners, never
    stored, are left alone)."""
    value = _value_at(plan, deps, st, sub, "wb_py", "wb_px")
    where = _stored(st, parts, "wb_py", "wb_px", new)
    return (f"// the tile as one function of the global position, strided by the block\n"
            f"  for (int wb_py = (int)threadIdx.y; wb_py < {new['EY']}; wb_py += {new['BY']})\n"
            f"    for (int wb_px = (int)threadIdx.x; wb_px < {new['EX']}; wb_px += {new['BX']})\n"
            f"      {f'if {where} ' if where else ''}{tile}[wb_py][wb_px] = {value};")
