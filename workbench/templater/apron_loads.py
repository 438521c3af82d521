"""The apron lift's analysis pieces (:mod:`.apron`): dependence on the thread and the block
through integer polynomials, and the two tile-load spellings it follows (a nest of loops
strided by the block, one flat loop over the tile's elements)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from tree_sitter import Node

from workbench.core.cuda_source import parse_cuda
from workbench.templater.analysis import (
    binary,
    builtin,
    int_value,
    strip,
    text,
    walk,
    write_target,
)
from workbench.templater.conv_reads import unmovable_call
from workbench.templater.macros import macro_texts
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, render, single_assignment_values
from workbench.templater.rules import literal
from workbench.templater.stencil import Poly, derivative, poly_of, scale, statements


class Deps:
    """Integer polynomials over ``threadIdx.d`` / ``blockIdx.d`` / names, single-assignment
    locals expanded; the rest of an expression is opaque (its parts checked one by one)."""

    def __init__(self, plan: Plan, keep: set[str]) -> None:
        self.values = {**expression_macros(plan.source.tree.root_node),
                       **single_assignment_values(plan.body, keep)}
        # blockDim is the written block here: the analysis reads the kernel as launched
        self.block = {d: literal(b) or 0 for d, b in zip("xy", plan.block, strict=False)}

    def poly(self, node: Node, opaque: list[Node], depth: int = 0) -> Poly:
        return poly_of(node, self.values, opaque=opaque, leaf=self._builtin, depth=depth)

    def _builtin(self, node: Node) -> Poly | None:
        """blockDim as the written block; the other builtins (and an unwritten blockDim)
        as atoms of their own."""
        d = builtin(node, "blockDim")
        if d in self.block:
            return {(): self.block[d]}
        for name in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
            d = builtin(node, name)
            if d is not None:
                return {(f"{name}.{d}",): 1}
        return None


def expression_macros(root: Node, *, divide: bool = False) -> dict[str, Node]:
    """Name -> value of each object-like macro of the file defined once whose text is an
    integer expression of literals and other such macros (``#define WIN (BS + 2 * R)``):
    a tile's extent read as the number it is. ``divide``: exact divisions of constants
    count too (``#define PAIRS (DIM / 2)``, read by :func:`.stencil.poly_of` alike)."""
    raw = macro_texts(root)
    once = tuple(sorted((k, v[0]) for k, v in raw.items() if len(v) == 1 and v[0]))
    parsed = dict(_parsed(once)) if once else {}
    return {k: v for k, v in parsed.items()
            if not set(poly_of(v, parsed, divide=divide)) - {()} and int_value(v) is None}


@lru_cache(maxsize=32)
def _parsed(macros: tuple[tuple[str, str], ...]) -> tuple[tuple[str, Node], ...]:
    """Each macro's text parsed as an expression (those that parse), once per file."""
    snippet = parse_cuda("".join(f"int {k} = ({v});\n" for k, v in macros))
    out = []
    for d in walk(snippet.tree.root_node):
        value = d.child_by_field_name("value") if d.type == "init_declarator" else None
        if value is not None and d.parent is not None and d.parent.parent is not None and \
                d.parent.parent.type == "translation_unit" and not value.has_error:
            out.append((text(d.child_by_field_name("declarator")), value))
    return tuple(out)


@dataclass(frozen=True)
class Pair:
    """``local`` and ``block`` may appear only as ``block * size + local`` (the global one)."""

    local: str
    block: str
    size: int


class Check:
    """Finds the first part of an expression that depends on the thread or the block other
    than through the global position (None when there is none)."""

    def __init__(self, deps: Deps, pairs: list[Pair], forbid: set[str],
                 tile: str | frozenset[str] | None = None,
                 tile_index: Callable[[Node], Node | None] | None = None) -> None:
        self.deps, self.pairs, self.forbid = deps, pairs, forbid
        # the apron tiles (several of one geometry read alike): reads checked by tile_index
        self.tiles = frozenset() if tile is None else \
            frozenset({tile}) if isinstance(tile, str) else tile
        self.tile_index = tile_index

    def bad(self, node: Node, depth: int = 0) -> Node | None:
        if depth > 40:
            return node
        node = strip(node)
        if node.type == "init_declarator":
            name = text(node.child_by_field_name("declarator"))
            if name in self.deps.values:
                return None  # expanded at each use, checked there
            value = node.child_by_field_name("value")
            return None if value is None else self.bad(value, depth + 1)
        if node.type in ("assignment_expression",) and \
                strip(node.child_by_field_name("left") or node).type == "identifier":
            right = node.child_by_field_name("right")
            return None if right is None else self.bad(right, depth + 1)
        if self.tile_index is not None and base_array(node) in self.tiles:
            return self.tile_index(node)
        opaque: list[Node] = []
        p = self.deps.poly(node, opaque)
        for pair in self.pairs:
            if derivative(p, pair.block) != scale(derivative(p, pair.local), pair.size):
                return node
        if any(derivative(p, a) for a in self.forbid):
            return node
        for o in opaque:
            if o != node and base_array(o) in self.tiles:
                bad = self.bad(o, depth + 1)
                if bad is not None:
                    return bad
                continue
            for child in o.named_children:
                bad = self.bad(child, depth + 1)
                if bad is not None:
                    return bad
        return None


def base_array(node: Node) -> str | None:
    """The array of ``a[i]`` / ``a[i][j]``."""
    if node.type != "subscript_expression":
        return None
    while node.type == "subscript_expression":
        node = strip(node.child_by_field_name("argument"))  # type: ignore[arg-type]
    return text(node) if node.type == "identifier" else None


def indices(node: Node) -> list[Node]:
    out: list[Node] = []
    while node.type == "subscript_expression":
        idx = node.child_by_field_name("indices") or node.child_by_field_name("index")
        if idx is None:
            idx = node.named_children[-1]
        if idx.type == "subscript_argument_list" and idx.named_child_count == 1:
            idx = idx.named_children[0]
        out.insert(0, idx)
        node = strip(node.child_by_field_name("argument"))  # type: ignore[arg-type]
    return out


@dataclass(frozen=True)
class _LoadLoop:
    dim: str
    loop: Node
    var: str
    bound: Node
    step: Node
    extent: int


def _load_loop(loop: Node, sizes: dict[str, int], deps: Deps) -> _LoadLoop:
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    bad = Refused(f"`{text(loop).splitlines()[0]}` is not a tile load loop `for (int p = "
                  "threadIdx.d; p < extent; p += block_d)`", loop)
    if init is None or cond is None or update is None or init.type != "declaration" or \
            len(init.children_by_field_name("declarator")) != 1:
        raise bad
    d = init.children_by_field_name("declarator")[0]
    start = d.child_by_field_name("value")
    var = text(d.child_by_field_name("declarator"))
    if start is None:
        raise bad
    p = deps.poly(start, [])
    dims = [k for k in "xy" if p == {(f"threadIdx.{k}",): 1}]
    parts = binary(cond)
    if len(dims) != 1 or parts is None or parts[1] != "<" or text(strip(parts[0])) != var or \
            update.type != "assignment_expression" or \
            text(update.child_by_field_name("operator")) != "+=" or \
            text(update.child_by_field_name("left")) != var:
        raise bad
    step = update.child_by_field_name("right")
    bound = deps.poly(parts[2], [])
    if step is None or deps.poly(step, []) != {(): sizes[dims[0]]} or set(bound) - {()}:
        raise Refused(f"the tile load loop over {var} does not stride by the block's "
                      f"{dims[0]} size {sizes[dims[0]]} up to a compile-time extent", loop)
    return _LoadLoop(dims[0], loop, var, strip(parts[2]), strip(step), bound.get((), 0))


@dataclass(frozen=True)
class Load:
    """One tile load: the extents it covers and its nodes that follow the new sizes (key:
    EY / EX the loaded extents, BY / BX the block's sizes, EYEX their product, BXBY the
    block's threads, FLAT the thread's flat index, WX the loaded width)."""

    extent_y: int
    extent_x: int
    edits: list[tuple[Node, str]]
    nest: tuple[Node, Node, str, str] | None = None  # (outer loop, body, y var, x var)
    # per-thread branch stores (:mod:`.apron_branches`): the statements the load replaces
    # and its text (from the tile offsets' substitution and the new names above)
    fill: Callable[[Callable[[Node], str | None], dict[str, str]], str] | None = None
    fill_nodes: tuple[Node, ...] = ()
    # the value at a tile position (text) read directly (USE_SMEM 0), where that is legal
    direct: Callable[[Callable[[Node], str | None], str, str], str] | None = None
    # the stored value, the atoms of its tile position (y, x) and a part of it at a position
    # (the block's interior test, :mod:`.apron_interior`)
    value: Node | None = None
    position: tuple[str, str] = ("", "")
    part: Callable[[Callable[[Node], str | None], str, str, Node], str] | None = None
    tiles: tuple[str, ...] = ()  # the tiles it stores (several of one geometry: one nest)
    nest_decls: tuple[Node, ...] = ()  # the outer loop's locals before the inner loop


def _check_store(plan: Plan, loop: Node, body: list[Node], tile: str | frozenset[str],
                 yvar: str, xvar: str, sizes: dict[str, int], deps: Deps, own: set[str]
                 ) -> tuple[str, ...]:
    """``body`` is declarations and the stores ``tile[yvar][xvar] = V`` (one per tile of
    ``tile``, several tiles of one geometry each stored once, ``ta[py][px] = a[..]; tb[py][px]
    = b[..];``) with each V a function of the global position; nothing else in ``loop``
    writes (``own``: the loop's own locals). The tiles stored, in order."""
    tiles = frozenset({tile}) if isinstance(tile, str) else tile
    shown = " / ".join(sorted(tiles))
    def is_store(st: Node) -> bool:
        e = strip(st.named_children[0]) if st.type == "expression_statement" and \
            st.named_child_count == 1 else None
        left = e.child_by_field_name("left") if e is not None and \
            e.type == "assignment_expression" else None
        return left is not None and base_array(strip(left)) in tiles
    count = 1  # the trailing stores (at least the last statement, checked below)
    while count < len(body) and is_store(body[-count - 1]):
        count += 1
    stores = body[-count:] if body else [loop]
    if any(b.type != "declaration" for b in body[:-count]):
        raise Refused("the tile load's body is not declarations and "
                      + ("one store" if len(tiles) == 1 else "the tiles' stores"), body[-1])
    exprs: list[Node] = []
    stored: list[str] = []
    for store in stores:
        e = strip(store.named_children[0]) if store.type == "expression_statement" and \
            store.named_child_count == 1 else None
        left = e.child_by_field_name("left") if e is not None and \
            e.type == "assignment_expression" and \
            text(e.child_by_field_name("operator")) == "=" else None
        target = strip(left) if left is not None else None
        name = base_array(target) if target is not None else None
        if e is None or target is None or name not in tiles:
            raise Refused(f"`{text(store)}` is not a tile store `{shown}[py][px] = v`", store)
        if name in stored:
            raise Refused(f"`{text(store)}` stores the tile {name} a second time in one load",
                          store)
        idx = [text(strip(i)) for i in indices(target)]
        if idx != [yvar, xvar]:
            raise Refused(f"`{text(target)}` does not store at [{yvar}][{xvar}]", store)
        value = e.child_by_field_name("right")
        assert value is not None and name is not None
        exprs.append(e)
        stored.append(name)
        check = Check(deps, [Pair(yvar, "blockIdx.y", sizes["y"]),
                              Pair(xvar, "blockIdx.x", sizes["x"])],
                      {"threadIdx.x", "threadIdx.y"})
        bad = check.bad(value)
        if bad is not None or tiles & {text(n) for n in walk(value)}:
            raise Refused(f"the loaded value `{text(bad or value)}` depends on the tile "
                          "position or the block other than through the global position (or "
                          "reads the thread index or a tile)", bad or value)
    for b in body[:-count]:
        for d in b.children_by_field_name("declarator"):
            name = text(d.child_by_field_name("declarator"))
            if name not in deps.values and name not in own:
                raise Refused(f"`{text(b)}` in the tile load is assigned again", b)
    for n in walk(loop):
        if n.type in ("assignment_expression", "update_expression") and n not in exprs and \
                (n.parent is None or n.parent.type != "for_statement"):
            raise Refused(f"`{text(n)}` writes inside the tile load", n)
    return tuple(stored)


def nest_load(plan: Plan, s: Node, tile: str | frozenset[str], sizes: dict[str, int], deps: Deps) -> Load:
    outer = _load_loop(s, sizes, deps)
    inner_stmts = only_statements(s.child_by_field_name("body"))
    # the outer loop's own locals first (`const int gy = clamp(by * BH + ty - R)`): single
    # assignments, expanded where the stores read them and re-declared by LOAD_FLAT
    decls = inner_stmts[:-1]
    if not inner_stmts or inner_stmts[-1].type != "for_statement" or \
            any(d.type != "declaration" for d in decls):
        raise Refused(f"the tile load loop over {outer.var} does not hold exactly one "
                      "inner load loop (after declarations)", s)
    for d in decls:
        for dd in d.children_by_field_name("declarator"):
            name = text(dd.child_by_field_name("declarator") or dd)
            if name not in deps.values:
                raise Refused(f"`{text(d)}` in the tile load is not a single assignment", d)
    inner = _load_loop(inner_stmts[-1], sizes, deps)
    if inner.dim == outer.dim:
        raise Refused("both tile load loops stride along the same dimension", inner.loop)
    ys, xs = (outer, inner) if outer.dim == "y" else (inner, outer)
    body = only_statements(inner.loop.child_by_field_name("body"))
    stored = _check_store(plan, s, body, tile, ys.var, xs.var, sizes, deps, set())
    inner_body = inner.loop.child_by_field_name("body")
    assert inner_body is not None
    value = strip(body[-1].named_children[0]).child_by_field_name("right")
    return Load(ys.extent, xs.extent, [(ys.bound, "EY"), (xs.bound, "EX"), (ys.step, "BY"),
                                        (xs.step, "BX")], (s, inner_body, ys.var, xs.var),
                direct=_nest_direct(plan, s, body[-1], ys.var, xs.var, deps)
                if len(stored) == 1 else None, tiles=stored, nest_decls=tuple(decls),
                value=value, position=(ys.var, xs.var),
                part=_nest_part(plan, s, ys.var, xs.var, deps))


def _nest_direct(plan: Plan, loop: Node, store: Node, yvar: str, xvar: str, deps: Deps
                 ) -> Callable[[Callable[[Node], str | None], str, str], str] | None:
    """The value the nest ``loop`` stores at a tile position, as C text at any position (its
    locals expanded in their declared types, the loop variables made the position), where
    reading it there instead of from the tile is the same value: it reads only elements
    of kernel arguments (``a[i]``, ``&a[i]`` for ``__ldg``) that nothing in the kernel
    writes, passes on or takes the address of outside the load, and calls only pure or
    read-only functions. None otherwise."""
    e = strip(store.named_children[0])
    value = e.child_by_field_name("right")
    assert value is not None
    inside = {n for n, v in deps.values.items()
              if loop.start_byte <= v.start_byte and v.end_byte <= loop.end_byte}
    read: set[str] = set()
    stack, seen = [value], set()
    while stack:
        node = stack.pop()
        for n in walk(node):
            name = text(n) if n.type == "identifier" else ""
            if name in inside and name not in seen:
                seen.add(name)
                stack.append(deps.values[name])
            elif plan.pointer(name):
                if not _element_read(n):
                    return None
                read.add(name)
        if unmovable_call(plan.source, node) is not None:
            return None
    for n in walk(plan.body):
        if n.type == "identifier" and text(n) in read and \
                not loop.start_byte <= n.start_byte < loop.end_byte and \
                (not _element_read(n) or _under_address(n)):
            return None
    part = _nest_part(plan, loop, yvar, xvar, deps)

    def direct(sub: Callable[[Node], str | None], p: str, q: str) -> str:
        return part(sub, p, q, value)
    return direct


def _nest_part(plan: Plan, loop: Node, yvar: str, xvar: str, deps: Deps
               ) -> Callable[[Callable[[Node], str | None], str, str, Node], str]:
    """A part of the nest's stored value at any tile position, as C text: its locals of
    the loop expanded in their declared types, the loop variables made the position."""
    inside = {n for n, v in deps.values.items()
              if loop.start_byte <= v.start_byte and v.end_byte <= loop.end_byte}
    data = plan.source.data

    def part(sub: Callable[[Node], str | None], p: str, q: str, node: Node) -> str:
        def at(n: Node, depth: int = 0) -> str | None:
            own = sub(n)
            if own is not None or n.type != "identifier":
                return own
            name = text(n)
            if name in (yvar, xvar):
                return f"({p if name == yvar else q})"
            if name in inside and depth < 12:
                local = deps.values[name]
                return f"(({declared_type(local)})(" + \
                    render(data, local, lambda m: at(m, depth + 1)) + "))"
            return None
        return render(data, node, at)
    return part


def _element_read(n: Node) -> bool:
    """Whether the identifier ``n`` is the array of an element read ``n[i]`` (``n[i][j]``),
    not a write's target."""
    sub = n.parent
    if sub is None or sub.type != "subscript_expression" or \
            sub.child_by_field_name("argument") != n:
        return False
    while sub.parent is not None and sub.parent.type in ("subscript_expression",
                                                         "parenthesized_expression"):
        sub = sub.parent
    target = write_target(sub.parent) if sub.parent is not None else None
    return target is None or target != strip(sub)


def _under_address(n: Node) -> bool:
    """Whether ``n`` (an element read's array) is under ``&``: its address passed on."""
    p = n.parent
    while p is not None and p.type in ("subscript_expression", "parenthesized_expression"):
        p = p.parent
    return p is not None and p.type == "pointer_expression" and text(p).startswith("&")


def declared_type(value: Node) -> str:
    """The type of the local ``value`` initialises (``int`` where none is written)."""
    decl = value.parent.parent if value.parent is not None else None
    typ = decl.child_by_field_name("type") if decl is not None and \
        decl.type == "declaration" else None
    return text(typ) if typ is not None else "int"


def is_flat(loop: Node, deps: Deps, bx: int) -> bool:
    """``for (e = threadIdx.y * BX + threadIdx.x; ...)``: one loop over the tile's elements."""
    init = loop.child_by_field_name("initializer")
    if init is None or init.type != "declaration" or \
            len(init.children_by_field_name("declarator")) != 1:
        return False
    start = init.children_by_field_name("declarator")[0].child_by_field_name("value")
    return start is not None and \
        deps.poly(start, []) == {("threadIdx.y",): bx, ("threadIdx.x",): 1}


def flat_load(plan: Plan, loop: Node, tile: str | frozenset[str], sizes: dict[str, int]) -> Load:
    """``for (e = flat thread; e < LY * LX; e += BX * BY) { py = e / LX; px = e % LX;
    tile[py][px] = V; }`` (py, px declared once, in either order or one declaration)."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    assert init is not None
    d = init.children_by_field_name("declarator")[0]
    var, start = text(d.child_by_field_name("declarator")), d.child_by_field_name("value")
    parts = binary(cond) if cond is not None else None
    step = update.child_by_field_name("right") if update is not None and \
        update.type == "assignment_expression" and \
        text(update.child_by_field_name("operator")) == "+=" and \
        text(update.child_by_field_name("left")) == var else None
    body = only_statements(loop.child_by_field_name("body"))
    coords: dict[str, tuple[str, Node]] = {}  # "/" or "%" -> (local, divisor node)
    for b in body[:-1]:
        for dd in b.children_by_field_name("declarator"):
            value = dd.child_by_field_name("value")
            q = binary(value) if value is not None else None
            if q is not None and q[1] in ("/", "%") and text(strip(q[0])) == var:
                coords[q[1]] = (text(dd.child_by_field_name("declarator")), strip(q[2]))
            elif q is not None and q[1] == "-" and text(strip(q[0])) == var and "/" in coords:
                times = _times_row(strip(q[2]), coords["/"][0])  # e - (e / LX) * LX
                if times is not None:
                    coords["%"] = (text(dd.child_by_field_name("declarator")), times)
    consts = Deps(plan, {var})
    width = {c.get((), 0) if not set(c) - {()} else None
             for c in (consts.poly(n, []) for _v, n in coords.values())}
    if parts is None or parts[1] != "<" or text(strip(parts[0])) != var or step is None or \
            consts.poly(step, []) != {(): sizes["x"] * sizes["y"]} or \
            set(coords) != {"/", "%"} or \
            len(width) != 1 or None in width:
        raise Refused(f"`{text(loop).splitlines()[0]}` is not a flat tile load `for (e = "
                      "threadIdx.y * BX + threadIdx.x; e < LY * LX; e += BX * BY)` with "
                      "`e / LX` and `e % LX`", loop)
    lx = width.pop() or 0
    total = consts.poly(parts[2], [])
    if set(total) - {()} or lx <= 0 or total.get((), 0) % lx:
        raise Refused(f"the flat tile load's count `{text(parts[2])}` is not a compile-time "
                      f"multiple of its width {lx}", loop)
    yvar, xvar = coords["/"][0], coords["%"][0]
    deps = Deps(plan, {yvar, xvar})
    stored = _check_store(plan, loop, body, tile, yvar, xvar, sizes, deps, {yvar, xvar})
    assert start is not None
    named = strip(start)
    if named.type == "identifier" and text(named) in consts.values:  # a `tid` local
        start = consts.values[text(named)]
    # the value at a position (USE_SMEM 0), where it reads the element only through its row
    # and column (a read of `e` itself would be the loop's, not the position's)
    direct = _nest_direct(plan, loop, body[-1], yvar, xvar, deps) \
        if len(stored) == 1 and var not in _reads_through(loop, body[-1], {yvar, xvar}, deps) \
        else None
    return Load(total.get((), 0) // lx, lx,
                 [(strip(parts[2]), "EYEX"), (strip(step), "BXBY"), (start, "FLAT"),
                  *((n, "WX") for _v, n in coords.values())], tiles=stored, direct=direct)


def _reads_through(loop: Node, store: Node, atoms: set[str], deps: Deps) -> set[str]:
    """The names ``store`` reads, through the locals of ``loop`` it reads but ``atoms``."""
    inside = {n for n, v in deps.values.items()
              if loop.start_byte <= v.start_byte and v.end_byte <= loop.end_byte}
    out: set[str] = set()
    stack = [store]
    while stack:
        for n in walk(stack.pop()):
            name = text(n) if n.type == "identifier" else ""
            if name and name not in out:
                out.add(name)
                if name in inside and name not in atoms:
                    stack.append(deps.values[name])
    return out


def _times_row(product: Node, row: str) -> Node | None:
    """The width ``LX`` of ``row * LX`` (either way round): ``e - row * LX`` with ``row = e /
    LX`` is ``e % LX`` (C's division keeps ``(e / LX) * LX + e % LX == e``); the two
    widths' equality is checked as the ``%`` form's is."""
    parts = binary(product)
    if parts is None or parts[1] != "*":
        return None
    left, right = strip(parts[0]), strip(parts[2])
    return right if text(left) == row else left if text(right) == row else None


def only_statements(node: Node | None) -> list[Node]:
    if node is None:
        return []
    return statements(node) if node.type == "compound_statement" else [node]
