"""The analysis of the register-tiled GEMM family (:mod:`.regtile` describes the family,
:mod:`.regtile_emit` writes the template): the kernel's parts (prologue, tile stores, the
product between the barriers, uniform steps, epilogue), the shared tiles and their roles,
the reading of a 1-D block's flat thread index (:mod:`.regtile_split`) and of which block
index offsets the output's rows (:mod:`.regtile_pairing`). Anything not modelled raises
:class:`~.regtile.Refused` with its reason and line.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    calls,
    int_value,
    strip,
    terms,
    text,
    walk,
)
from workbench.templater.plan import Plan
from workbench.templater.regtile import (
    _ELEM,
    Gemm,
    LoopStore,
    Refused,
    Tile,
    _assigned,
    _is_sync,
    _statements,
    subscript,
)
from workbench.templater.regtile_exit import BlockExit, block_exit
from workbench.templater.regtile_guard import guarded_store
from workbench.templater.regtile_pairing import (
    ROWS_FROM_X,
    ROWS_FROM_Y,
    Indexing,
    loads,
    output_stores,
    pairing,
    same_move,
)
from workbench.templater.regtile_shapes import unbounded_size
from workbench.templater.regtile_split import assigns, const_value, counts_below
from workbench.templater.regtile_vec import _Unknown, evaluate
from workbench.templater.regtile_walk import (
    NotWalk,
    Walk,
    check_step_places,
    header_steps_only,
    is_step_statement,
    reads_block,
    walking_locals,
)
from workbench.templater.rules import scale_divisor

_INTEGER_TYPES = {"int", "unsigned", "unsigned int", "uint", "long", "size_t", "short"}


def integer_constants(plan: Plan) -> dict[str, int]:
    """``const`` / ``constexpr`` integers initialised with an integer, declared at file
    scope or at the top of the kernel body and never assigned: name -> value."""
    out: dict[str, int] = {}
    assigned = _assigned(plan.body)
    decls = [c for c in plan.source.tree.root_node.children if c.type == "declaration"]
    decls += [s for s in _statements(plan.body) if s.type == "declaration"]
    for d in decls:
        qualifiers = {text(c) for c in d.children if c.type == "type_qualifier"}
        if not qualifiers & {"const", "constexpr"} or \
                " ".join(text(d.child_by_field_name("type")).split()) not in _INTEGER_TYPES:
            continue
        for decl in d.children_by_field_name("declarator"):
            if decl.type != "init_declarator":
                continue
            name = text(decl.child_by_field_name("declarator"))
            value = const_value(decl.child_by_field_name("value"))
            if value is not None and name not in assigned:
                out[name] = value
    return out



@dataclass
class Parts:
    prologue: list[Node]
    stores: list[Node]
    compute: list[Node]
    after: list[Node]
    epilogue: list[Node]
    exits: list[BlockExit] = field(default_factory=list)


def store_target(stmt: Node) -> list[Node]:
    """The shared subscripts a store statement writes (``S[a][b] = ...`` or if/else)."""
    if stmt.type == "compound_statement":
        inner = _statements(stmt)
        return store_target(inner[0]) if len(inner) == 1 else []
    if stmt.type == "expression_statement" and stmt.named_child_count == 1:
        e = stmt.named_children[0]
        if e.type == "assignment_expression" and text(e.child_by_field_name("operator")) == "=":
            left = e.child_by_field_name("left")
            return [left] if left is not None else []
        return []
    if stmt.type == "if_statement":
        cons = stmt.child_by_field_name("consequence")
        alt = stmt.child_by_field_name("alternative")
        if cons is None or alt is None:
            return []
        alt_stmt = alt.named_children[-1] if alt.type == "else_clause" else alt
        a, b = store_target(cons), store_target(alt_stmt)
        return a + b if len(a) == 1 and len(b) == 1 and text(a[0]) == text(b[0]) else []
    return []


def analyse(g: Gemm, loop: Node) -> None:
    """Read ``g``'s kernel around its loop over tiles ``loop`` (sets ``g.tiles``, ``g.parts``,
    ``g.roles``, ...); Refused with the reason and line where it cannot."""
    plan, t = g.plan, g.tile
    tiles: dict[str, Tile] = {}
    for lo in g.locals.values():
        if any(text(c) == "__shared__" for c in lo.decl.children):
            ext: list[Node] = []
            node: Node | None = lo.declarator
            while node is not None and node.type == "array_declarator":
                size = node.child_by_field_name("size")
                if size is not None:
                    ext.insert(0, size)
                node = node.child_by_field_name("declarator")
            typ = text(lo.decl.child_by_field_name("type"))
            tiles[lo.name] = Tile(lo.name, lo.decl, ext, elem_bytes=_ELEM.get(typ, 0))
    for tl in tiles.values():
        tl.flat = len(tl.extents) == 1 and const_value(tl.extents[0]) == t * t
    if len(tiles) < 2 or any(len(tl.extents) != 2 and not tl.flat for tl in tiles.values()):
        raise Refused("not-gemm")
    g.tiles = tiles
    for tl in tiles.values():
        if g.rect:
            # three sizes: each extent is checked against its role once the product has
            # read the roles (:func:`_rect_extents`)
            tl.flat = False
            if any(const_value(e) is None for e in tl.extents):
                raise Refused("not-gemm")
            continue
        if tl.flat:
            continue
        if int_value(tl.extents[0]) != t:
            raise Refused("not-gemm")
        inner = binary(tl.extents[1])
        if int_value(tl.extents[1]) == t:
            continue
        if (inner and inner[1] == "+" and int_value(inner[0]) == t and
                int_value(inner[2]) == 1) or int_value(tl.extents[1]) == t + 1:
            tl.padded = 1  # ``[T][T + 1]`` or ``[32][33]``
            continue
        raise Refused("not-gemm")
    body = loop.child_by_field_name("body")
    if body is None or body.type != "compound_statement":
        raise Refused("the loop over tiles has no block body", loop)
    stmts = _statements(body)
    syncs = [i for i, s in enumerate(stmts) if _is_sync(s)]
    if len(syncs) != 2 or sum(1 for n in walk(body) if n.type == "call_expression" and
                              text(n.child_by_field_name("function")) == "__syncthreads") != 2:
        raise Refused("the loop over tiles does not have exactly two barriers at its top "
                      "level (store the tiles; barrier; compute; barrier)", loop)
    if g.split is not None:
        _check_flat_thread_index(g)
    top = _statements(plan.body)
    k = top.index(loop)
    compute = stmts[syncs[0] + 1:syncs[1]]
    # thread-dependent pointers (indices) set before the loop and stepped along k
    g.walks = _walks(g, top[:k])
    # uniform steps between the barriers that the product does not read (``A += T;`` as
    # the pointers walk along k) run after the second barrier instead: the same values
    moved = [c for c in compute if _uniform_step(g, c, compute)]
    # a ``#pragma unroll`` before a store loop goes with the loop (the stores become
    # loops over the tile's positions)
    stores = [s for s in stmts[:syncs[0]] if not (
        s.type == "preproc_call" and text(s).lstrip().startswith("#pragma"))]
    parts = Parts(top[:k], stores, [c for c in compute if c not in moved],
                  moved + stmts[syncs[1] + 1:], top[k + 1:])
    for s in parts.prologue + parts.epilogue:
        if s in parts.prologue and (leave := block_exit(g, s)) is not None:
            parts.exits.append(leave)  # a whole block's exit (:mod:`.regtile_exit`)
            continue
        for n in walk(s):
            if n.type == "return_statement" and s in parts.epilogue and \
                    not _inside_loop(n, s):
                continue  # this output's exit: the next virtual thread's (render_exit)
            if n.type in ("return_statement", "goto_statement"):
                raise Refused(f"`{text(n)}` outside the loop over tiles: an early exit the "
                              "coarsened threads cannot share", n)
    # loops storing a tile; one the analysis cannot follow is refused where the stores are
    # read (after the product has shown the kernel is a GEMM)
    unfollowed: dict[tuple[int, int], Refused] = {}
    loop_vars: set[str] = set()
    for s in parts.stores:
        try:
            guard = guarded_store(g, s, _is_store)
        except Refused as exc:
            unfollowed[(s.start_byte, s.end_byte)] = exc
            continue
        if guard is not None:
            g.guards[(s.start_byte, s.end_byte)] = guard
        found = _loop_store(g, g.unguarded(s))
        if found is None:
            continue
        loop_vars.add(found[0])
        if isinstance(found[1], Refused):
            unfollowed[(s.start_byte, s.end_byte)] = found[1]
        else:
            g.loop_stores[(s.start_byte, s.end_byte)] = found[1]
            if found[1].dim != "flat":
                g.thread_alias[found[0]] = found[1].dim
    # thread-dependent locals declared outside the per-thread code are inlined there: they
    # must be single definitions that are never reassigned
    # (an early exit's locals are declared where each virtual thread runs it, as the
    # epilogue's are)
    outside = [c for c in parts.prologue + parts.stores
               if not any(c == leave.statement for leave in parts.exits)]
    g.inlinable = {x for x in g.threaded if any(
        c.start_byte <= g.locals[x].decl.start_byte < c.end_byte for c in outside)} - loop_vars
    for s in outside:
        names = [decl_name(d) for d in s.children_by_field_name("declarator")] \
            if s.type == "declaration" else []
        if len({x in g.inlinable for x in names}) > 1:
            raise Refused(f"`{text(s)}` declares thread-dependent and uniform values "
                          "together", s)
    placed = check_step_places(g.walks, parts.after + [
        u for u in [loop.child_by_field_name("update")] if u is not None])
    if placed is not None:
        raise Refused(placed.reason, placed.node)
    for name in g.inlinable - set(g.walks):
        if isinstance(bad := g.not_walks.get(name), NotWalk):
            raise Refused(bad.reason, bad.node)
        if g.locals[name].count > 1 or name in g.assigned:
            raise Refused(f"`{name}` depends on the thread index and is reassigned",
                          g.locals[name].decl)
    _check_inlined_values(g, parts.prologue)
    # the compute: reads at (thread, k) positions, writes only private state
    writes = {w for c in parts.compute for w in _assigned(c)}
    inner_decls = {lo.name for lo in g.locals.values()
                   if any(lo.decl.start_byte >= c.start_byte and lo.decl.end_byte <= c.end_byte
                          for c in parts.compute)}
    accs = writes - inner_decls - _own_counters(parts.compute)
    k_reads: list[tuple[Node, Node]] = []  # (a tile read, its index along k)
    for n in (m for c in parts.compute for m in walk(c)):
        if n.type == "assignment_expression":
            left = n.child_by_field_name("left")
            if left is not None and strip(left).type != "identifier":
                raise Refused(f"the compute writes `{text(left)}` (only registers may be "
                              "written between the barriers)", n)
        if n.type != "subscript_expression" or (n.parent is not None and
                                                n.parent.type == "subscript_expression"):
            continue
        sub = _tile_access(g, n)
        if sub is None or sub[0] not in tiles:
            continue
        tile = tiles[sub[0]]
        roles = ["k" if not g.mentions_thread(i) else (g.thread_dim(i) or "?") for i in sub[1]]
        if sorted(r == "k" for r in roles) != [False, True] or "?" in roles:
            raise Refused(f"`{text(n)}` does not read the tile at (thread index, k)", n)
        if tile.flat and roles[1] == "k" and not (
                strip(sub[1][1]).type == "identifier" and counts_below(sub[1][1], n, t)):
            # S[r * T + c] is S[r][c] only while 0 <= c < T
            raise Refused(f"`{text(n)}` reads the flat tile {sub[0]} at column "
                          f"`{text(sub[1][1])}`, not a loop variable running 0 .. {t} - 1: "
                          "the rewrite cannot show the column stays inside a row", n)
        if tile.roles and tile.roles != roles:
            raise Refused(f"{sub[0]} is read along different roles", n)
        tile.roles = roles
        k_reads.append((n, sub[1][roles.index("k")]))
    if any(not tl.roles for tl in tiles.values()):
        raise Refused("a shared tile is stored but not read between the barriers", loop)
    if {r for tl in tiles.values() for r in tl.roles} != {"x", "y", "k"}:
        raise Refused("the tiles are not read along both output dimensions", loop)
    if any(tl.elem_bytes == 0 for tl in tiles.values()):
        raise Refused("a shared tile has an element type of unknown size", loop)
    # in the order the kernel declares them (a set's order changes with the hash seed)
    for name in sorted(accs, key=lambda n: (g.locals[n].decl.start_byte
                                            if n in g.locals else -1, n)):
        acc = g.locals.get(name)
        if acc is None or acc.count > 1 or not any(acc.decl == p for p in parts.prologue) or \
                name in g.threaded:
            raise Refused(f"`{name}` is written between the barriers but is not a "
                          "thread-private accumulator declared before the loop", loop)
        if not all(decl_name(d) in accs for d in acc.decl.children_by_field_name("declarator")):
            raise Refused(f"`{text(acc.decl)}` declares accumulators with other variables",
                          acc.decl)
        g.accumulators.append(acc)
    if not g.accumulators:
        raise Refused("nothing is accumulated between the barriers", loop)
    g.roles_known = True
    if g.rect:
        _rect_extents(g, loop)
    # the stores: each tile covered once, one element per thread at thread-index positions
    # (or several, a loop of each thread over the rows or columns it stores)
    stored: dict[str, list[str]] = {}
    for s in parts.stores:
        if s.type == "declaration":
            continue
        if (s.start_byte, s.end_byte) in unfollowed:
            raise unfollowed[(s.start_byte, s.end_byte)]
        loop_store = g.loop_stores.get((s.start_byte, s.end_byte))
        targets = store_target(g.store_of(s))
        sub = _tile_access(g, targets[0]) if targets else None
        if sub is None or sub[0] not in tiles:
            raise Refused(f"`{' '.join(text(s).split())[:60]}` before the first barrier is "
                          "not a store of a shared tile", s)
        dims = g.position_dims(sub[1])
        if None in dims or len(set(dims)) != 2 or sub[0] in stored:
            raise Refused(f"the store to {sub[0]} is not one element per thread at "
                          "(thread y, thread x) positions", s)
        stored[sub[0]] = dims  # type: ignore[assignment]
        if loop_store is not None and loop_store.guard is not None and \
                (s.start_byte, s.end_byte) in g.guards:
            raise Refused("a guard around the loop storing a tile and another around its "
                          "store: one guard per store is modelled", s)
        _check_cover(g, tiles[sub[0]], sub[1], dims, loop_store, s)  # type: ignore[arg-type]
    if set(stored) != set(tiles):
        raise Refused("not every shared tile is stored before the first barrier", loop)
    # a count of tiles may sit in the header or in a local it reads (``n_tiles = K / T``)
    for n in (m for h in loop_header(loop) + parts.prologue + parts.after for m in walk(h)):
        parts_div = binary(n)
        if g.split is not None and g.split.dim(n) is not None:
            continue  # the thread's row, not a count of tiles
        if parts_div and parts_div[1] == "/" and int_value(parts_div[2]) == g.k_size:
            # a rounded-up count, ``(K + T - 1) / T`` or ``(K + 15) / 16``, covers the rest
            constant = [sign * (int_value(x) or 0) for sign, x in terms(parts_div[0])
                        if int_value(x) is not None]
            # t < K / T in the loop's own test, K bounded nowhere: K % BK == 0 is kept
            # (regtile_shapes.constrain_unguarded), so the count is exact at every BK
            test = loop.child_by_field_name("condition")
            whole = test is not None and test.start_byte <= n.start_byte < test.end_byte and \
                strip(parts_div[0]).type == "identifier" and \
                unbounded_size(g.plan, text(strip(parts_div[0])))
            if not whole and (len(terms(parts_div[0])) - len(constant) != 1 or
                              sum(constant) != g.k_size - 1):
                raise Refused(f"`{text(n)}` counts whole tiles of the written size (it assumes "
                              f"a multiple of {g.k_size}); a deeper tile would drop the "
                              "remainder", n)
    update = loop.child_by_field_name("update")
    for s in [*parts.after, *loop_header(loop)]:
        if s == update and g.walks:
            if any(g.mentions_thread(u) for u in header_steps_only(s, g.walks)):
                raise Refused(f"`{text(s)}` in the loop over tiles depends on the thread "
                              "index", s)
            continue
        if g.walks and is_step_statement(s, g.walks):
            continue  # a walking local's uniform step (:mod:`.regtile_walk`)
        if g.mentions_thread(s):
            raise Refused(f"`{text(s)}` in the loop over tiles depends on the thread index", s)
    for s in parts.epilogue:
        if any(subscript(n) and subscript(n)[0] in tiles  # type: ignore[index]
               for n in walk(s) if n.type == "subscript_expression"):
            raise Refused("the epilogue reads a shared tile", s)
        if "__syncthreads" in calls(s):
            raise Refused("a barrier after the loop over tiles", s)
    for s in parts.prologue:
        if s.type == "declaration" or not g.mentions_thread(s) or \
                any(s == leave.statement for leave in parts.exits):
            continue
        raise Refused(f"`{text(s)}` before the loop depends on the thread index", s)
    # blockIdx.z (a batch or any outer index) is uniform over the block and the grid's z is
    # kept as written: the rewrite leaves every use of it as is. The grid's x and y extents
    # and a thread z index change with the tiles: those are not modelled.
    for n in walk(plan.body):
        if builtin(n, "gridDim") in ("x", "y") or builtin(n, "threadIdx") == "z" or \
                builtin(n, "blockDim") == "z":
            raise Refused(f"`{text(n)}` is read: the grid's x / y extent and a thread z "
                          "index change with the tiles, which the rewrite does not model", n)
    spans = {(e.start_byte, e.end_byte) for tl in tiles.values() for e in tl.extents}
    # a loop store's header (its start, bound and step) is replaced by the loop over the
    # tile's positions
    spans |= {(n.start_byte, n.end_byte) for s in parts.stores
              if (s.start_byte, s.end_byte) in g.loop_stores
              for h in loop_header(g.unguarded(s)) for n in walk(h)}
    # a guard's bounds (``threadIdx.x < BK``) go with it (:mod:`.regtile_guard`)
    spans |= {(n.start_byte, n.end_byte) for s in parts.stores
              if (guard := g.guard_of(s)) is not None
              for n in walk(guard.node.child_by_field_name("condition"))}  # type: ignore[arg-type]
    # the flat thread index starting flat loop stores (``tid = ty * 16 + tx``) is dropped
    # with their headers where it is read nowhere else
    headers = [(n.start_byte, n.end_byte) for s in parts.stores
               if (s.start_byte, s.end_byte) in g.loop_stores
               for h in loop_header(g.unguarded(s)) for n in [h]]
    for name, lo in g.locals.items():
        uses = [n for n in walk(plan.body) if n.type == "identifier" and text(n) == name
                and n != lo.declarator and n != lo.declarator.child_by_field_name("declarator")]
        if lo.value is not None and name in g.inlinable and uses and all(
                any(a <= u.start_byte < b for a, b in headers) for u in uses) and \
                _is_flat_thread_index(g, lo.value):
            spans |= {(n.start_byte, n.end_byte) for n in walk(lo.value)}
    # a flat loop store's row and column (``e / C``, ``e % C``) become the tile position
    spans |= {(m.start_byte, m.end_byte) for s in parts.stores
              if (s.start_byte, s.end_byte) in g.loop_stores
              for n in walk(s) if n.type == "binary_expression" and
              g.flat_position(n) is not None for m in walk(n)}
    spans |= {(n.start_byte, n.end_byte) for tl in tiles.values() for e in tl.extents
              for n in walk(e)}
    # a flat tile's row stride and a split's divisor are rewritten with the whole
    # expression (the tile access, the thread's x / y), never as BM / BN / BK
    for n in walk(plan.body):
        whole = n.type == "subscript_expression" and (sub := subscript(n)) is not None and \
            sub[0] in tiles and tiles[sub[0]].flat
        if whole or (g.split is not None and n.type == "binary_expression" and
                     g.split.dim(n) is not None):
            spans |= {(m.start_byte, m.end_byte) for m in walk(n)}
    _read_pairing(g, parts)
    g.classify(spans)
    _check_k_index(g, k_reads)  # after the tile size's uses are read (a blockDim bound)
    epi_roles = [n for s in parts.epilogue for n in walk(s)
                 if g.roles.get((n.start_byte, n.end_byte)) == "BK"]
    if epi_roles:
        raise Refused(f"`{text(epi_roles[0].parent)}` after the loop uses the tile size "
                      "other than as a block offset", epi_roles[0])
    # before the loop, the tile size next to a block-derived value that is not a plain
    # block index (``(blockIdx.z + 1) * T``, ``by1 * T`` with ``by1 = blockIdx.y + 1``) would
    # become BK: an offset the rewrite cannot tell from a k step
    blocky = {name for name, lo in g.locals.items() if lo.value is not None and
              any(builtin(m, "blockIdx") for m in walk(lo.value))}
    for s in parts.prologue:
        ks = [n for n in walk(s) if g.roles.get((n.start_byte, n.end_byte)) == "BK"]
        if ks and any(builtin(m, "blockIdx") or (m.type == "identifier" and text(m) in blocky)
                      for m in walk(s)):
            raise Refused(f"`{text(ks[0].parent)}` uses the tile size with a block index "
                          "other than as the block offset", ks[0])
    g.tiles = tiles
    g.parts = parts  # type: ignore[attr-defined]
    for g_rule, want in ((0, "BN"), (1, "BM")):
        divisor = g.grid_divisor(g_rule)
        if scale_divisor(plan.grid[g_rule], str(divisor), want) is None:
            raise Refused(f"grid rule {plan.grid[g_rule]!r} does not divide by the tile "
                          f"{divisor}")


def _check_k_index(g: Gemm, reads: list[tuple[Node, Node]]) -> None:
    """Every tile read of the compute indexes k by one loop variable ``v`` running 0 ..
    depth - 1, or ``v + c`` of a loop stepping ``v += s`` by hand-unrolled steps
    (``0 <= c < s``; the depth then stays a multiple of s, ``g.k_step``): the product pairs
    the tiles' elements at the same k, whatever the depth. An index such as ``(t + 1) % T``
    or ``T - 1 - t`` pairs them by the written depth, which a lifted BK would change (seen:
    wrong results at every tiled config)."""
    parsed = [(read, k, _k_offset(k)) for read, k in reads]
    names = {o[0] for _, _, o in parsed if o is not None}
    steps: set[int] = set()
    for read, k, offset in sorted(parsed, key=lambda r: r[2] is not None):
        step = _k_loop_step(offset[0], read, g.k_size) if offset is not None else None
        if offset is None or len(names) != 1 or step is None or not 0 <= offset[1] < step:
            raise Refused(f"`{text(read)}` reads the tile along k at `{text(k)}`, not the "
                          f"one loop variable running 0 .. {g.k_size} - 1 (or v + c under a "
                          "step of more than c) every tile read shares: its pairing of the "
                          "tiles depends on the tile's depth", read)
        steps.add(step)
    g.k_step = max(steps, default=1)


def _k_offset(k: Node) -> tuple[str, int] | None:
    """(v, c) of a tile's index along k written ``v`` or ``v + c`` (c a constant)."""
    k = strip(k)
    if k.type == "identifier":
        return text(k), 0
    parts = binary(k)
    if parts is None or parts[1] != "+":
        return None
    for a, b in ((parts[0], parts[2]), (parts[2], parts[0])):
        c = const_value(b)
        if strip(a).type == "identifier" and c is not None:
            return text(strip(a)), c
    return None


def _k_loop_step(name: str, at: Node, depth: int) -> int | None:
    """The step s of the enclosing ``for (int name = 0; name < depth; name += s)`` (``++``,
    ``+= 1``: 1) whose body never assigns ``name``, where depth is a multiple of s. The
    header may start a local declared before it (``int k; ... for (k = 0; ...)``) where
    nothing outside such headers' loops reads it (:func:`_read_outside_own_loops`): its value
    after the loop, the depth, is then read nowhere; Refused naming the read otherwise."""
    loop = at.parent
    while loop is not None and _started(loop, name) is None:
        loop = loop.parent
    if loop is None:
        return None
    start = _started(loop, name)
    outside = _read_outside_own_loops(name, loop) if start is not None and \
        start.parent is not None and start.parent.type == "assignment_expression" else None
    if outside is not None:
        raise Refused(f"the counter `{name}` of the loop over k is declared before it and "
                      f"read at `{text(outside.parent or outside)}` outside the loops that "
                      f"start it: its value after the loop is the depth {depth}, which a "
                      "lifted BK would change", outside)
    step = _step_of(loop, name)
    if step is None or depth % step or not _counts_from_zero(loop, name, depth):
        return None
    return step


def _started(loop: Node, name: str) -> Node | None:
    """The value a ``for`` header starts ``name`` at, ``int name = v`` or ``name = v``; None
    for any other node or header."""
    init = loop.child_by_field_name("initializer") if loop.type == "for_statement" else None
    if init is None:
        return None
    if init.type == "assignment_expression":
        left = init.child_by_field_name("left")
        return init.child_by_field_name("right") if left is not None and \
            text(strip(left)) == name and text(init.child_by_field_name("operator")) == "=" \
            else None
    decls = init.children_by_field_name("declarator") if init.type == "declaration" else []
    if len(decls) == 1 and decls[0].type == "init_declarator" and \
            text(decls[0].child_by_field_name("declarator")) == name:
        return decls[0].child_by_field_name("value")
    return None


def _own_counters(compute: list[Node]) -> set[str]:
    """The locals declared before the loop over tiles that a ``for`` of the compute starts in
    its header and nothing reads outside such loops (``int k; ... for (k = 0; ...)``): each
    loop's own counter, not state the threads carry across tiles."""
    out: set[str] = set()
    for n in (m for c in compute for m in walk(c) if m.type == "for_statement"):
        init = n.child_by_field_name("initializer")
        left = init.child_by_field_name("left") \
            if init is not None and init.type == "assignment_expression" else None
        name = text(strip(left)) if left is not None else ""
        if left is not None and strip(left).type == "identifier" and \
                _started(n, name) is not None and _read_outside_own_loops(name, n) is None:
            out.add(name)
    return out


def _read_outside_own_loops(name: str, loop: Node) -> Node | None:
    """The first use of ``name`` in the kernel body around ``loop`` that is neither its
    declaration nor inside a ``for`` whose header starts it (:func:`_started`), else None:
    None where no value such a loop leaves behind is read."""
    body = loop
    while body.parent is not None and body.parent.type != "function_definition":
        body = body.parent
    for n in walk(body):
        if n.type != "identifier" or text(n) != name:
            continue
        declared = n.parent is not None and n.parent.type == "declaration"
        node: Node | None = n.parent
        while node is not None and not declared:
            declared = node.type == "for_statement" and _started(node, name) is not None
            node = node.parent
        if not declared:
            return n
    return None


def _step_of(loop: Node, name: str) -> int | None:
    update = loop.child_by_field_name("update")
    if update is None:
        return None
    spelled = " ".join(text(update).split())
    if spelled in (f"++{name}", f"{name}++"):
        return 1
    parts = [p.strip() for p in spelled.split("+=")]
    if len(parts) == 2 and parts[0] == name:
        return const_value(strip(update.child_by_field_name("right") or update))
    return None


def _counts_from_zero(loop: Node, name: str, depth: int) -> bool:
    """Whether ``loop`` starts ``name`` at 0, runs while ``name < depth`` (or ``!=``: its step
    divides the depth) and its body never assigns ``name``."""
    value = _started(loop, name)
    cond, body = loop.child_by_field_name("condition"), loop.child_by_field_name("body")
    parts = binary(cond) if cond is not None else None
    if const_value(value) != 0 or parts is None or body is None or \
            text(strip(parts[0])) != name or parts[1] not in ("<", "!=") or \
            const_value(parts[2]) != depth:
        return False
    return not assigns(body, name)


_LOOPS = ("for_statement", "while_statement", "do_statement", "switch_statement")


def _inside_loop(n: Node, top: Node) -> bool:
    """Whether ``n`` sits in a loop (or switch) of the statement ``top``: a ``continue`` in
    its place would not leave the virtual thread's epilogue."""
    node = n.parent
    while node is not None and node != top:
        if node.type in _LOOPS:
            return True
        node = node.parent
    return top.type in _LOOPS


def render_exit(m: Node) -> str | None:
    """An epilogue's ``return;`` (not in a loop of it, :func:`_inside_loop`) as the coarsened
    thread runs it: the epilogue runs once per virtual thread in the loop over the TM x TN
    outputs, so this output's exit is that loop's ``continue;`` (the next output's epilogue
    runs as the next thread's would); the epilogue holds no barrier, so no thread waits."""
    return "continue;" if m.type == "return_statement" else None


def _check_inlined_values(g: Gemm, prologue: list[Node]) -> None:
    """A thread-dependent local set before the loop is inlined where it is read, inside the
    loop: its value must read no local that is written again (``pa = A + kk + tx`` with
    ``kk`` stepped would read the stepped ``kk``); Refused naming both otherwise."""
    for name in sorted(g.inlinable):
        lo = g.locals[name]
        if lo.value is None or not any(p.start_byte <= lo.decl.start_byte < p.end_byte
                                       for p in prologue):
            continue
        for n in walk(lo.value):
            if n.type == "identifier" and text(n) in g.locals and text(n) in g.assigned:
                raise Refused(f"`{name}` is set from `{text(n)}`, which is written again: "
                              f"read where `{name}` is used, it would not be the value "
                              f"`{name}` was set from", lo.decl)


def _walks(g: Gemm, prologue: list[Node]) -> dict[str, Walk]:
    """The thread-dependent locals declared before the loop and stepped along k
    (:mod:`.regtile_walk`); the others that are written again go to ``g.not_walks`` with the
    reason (refused where the rewrite would inline them)."""
    blocky = _block_locals(g)
    candidates = {
        name: (lo.decl, lo.declarator, lo.count, _is_pointer(lo.declarator))
        for name, lo in g.locals.items() if name in g.threaded and
        any(p.start_byte <= lo.decl.start_byte < p.end_byte for p in prologue)}
    found = walking_locals(candidates, g.body, lambda n: not g.mentions_thread(n) and
                           not reads_block(n, blocky))
    g.not_walks = {n: w for n, w in found.items() if isinstance(w, NotWalk)}
    return {n: w for n, w in found.items() if isinstance(w, Walk)}


def _is_pointer(declarator: Node) -> bool:
    inner = declarator.child_by_field_name("declarator") \
        if declarator.type == "init_declarator" else declarator
    return inner is not None and inner.type == "pointer_declarator"


def _block_locals(g: Gemm) -> set[str]:
    """The locals whose value reads a block index (directly or through another)."""
    blocky: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, lo in g.locals.items():
            if name not in blocky and lo.value is not None and reads_block(lo.value, blocky):
                blocky.add(name)
                changed = True
    return blocky


def _read_pairing(g: Gemm, parts: Parts) -> None:
    """Set ``g.rows_from`` from the output's addresses, and check that each tile's loads
    move with the block index of the output dimension the tile runs along
    (:mod:`.regtile_pairing`); refused where either cannot be evaluated (a pairing the
    rewrite cannot show is a template that is wrong at BM != BN)."""
    def local_value(name: str) -> Node | None:
        lo = g.locals.get(name)
        if name in g.walks and lo is not None:
            # its steps are the same for every block and thread: they cancel in the
            # comparisons of same_move
            return lo.value
        return lo.value if lo is not None and lo.count == 1 and name not in g.assigned \
            else None
    blocky: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, lo in g.locals.items():
            if name not in blocky and lo.value is not None and any(
                    builtin(m, "blockIdx") or (m.type == "identifier" and text(m) in blocky)
                    for m in walk(lo.value)):
                blocky.add(name)
                changed = True

    def varies(node: Node) -> bool:
        return g.mentions_thread(node) or any(
            builtin(m, "blockIdx") or (m.type == "identifier" and text(m) in blocky)
            for m in walk(node))
    def initial_value(name: str) -> Node | None:
        lo = g.locals.get(name)
        return lo.value if lo is not None and lo.count == 1 else None
    def varying_local(name: str) -> bool:
        lo = g.locals.get(name)
        if lo is None or local_value(name) is not None:
            return False
        values = [lo.value] if lo.value is not None else []
        for n in walk(g.body):
            if n.type == "assignment_expression" and \
                    text(strip(n.child_by_field_name("left"))) == name:  # type: ignore[arg-type]
                values.append(n.child_by_field_name("right"))  # type: ignore[arg-type]
        return name in g.threaded or any(varies(v) for v in values)
    ix = Indexing(g.thread_dim, local_value, varies, g.tile, initial_value, varying_local,
                  dict(g.block_size) if g.rect else None)
    stores = output_stores(parts.epilogue, set(g.tiles))
    verdict = pairing(stores, parts.prologue, g.body, ix)
    where = stores[0][2] if stores else None
    if verdict == "neither":
        raise Refused(f"the output `{text(where)[:60]}` is not at (block row * "
                      f"{g.block_size['y']} + thread row, block column * "
                      f"{g.block_size['x']} + thread column) for one block "
                      "index as the rows and the other as the columns", where)
    if verdict is None:
        raise Refused("the output's address could not be evaluated from the block and thread "
                      "indices, so which block index offsets its rows is unknown", where)
    g.rows_from = verdict if verdict in (ROWS_FROM_Y, ROWS_FROM_X) else ROWS_FROM_Y
    block_of = {"y": g.rows_from[0], "x": g.rows_from[1]}
    for s in parts.stores:
        target = store_target(g.store_of(s)) if s.type != "declaration" else []
        access = g.access(target[0]) if target else None
        if access is None or access[0] not in g.tiles:
            continue
        tile = g.tiles[access[0]]
        dims = g.position_dims(access[1])
        for load in loads(s, set(g.tiles)):
            for d, role in zip(dims, tile.roles, strict=True):
                if role == "k" or d is None:
                    continue
                step = g.block_size["y" if role == "y" else "x"]  # the tile's extent there
                moved = same_move(load, parts.prologue, g.body, ix, d, block_of[role], step)
                if moved is not True:
                    raise Refused(
                        f"the load `{_load_text(load)}` of tile {tile.name} "
                        + ("does not move" if moved is False else "cannot be shown to move")
                        + f" by one block along {'rows' if role == 'y' else 'columns'} when "
                        f"the tile position moves by {step}", s)


def _load_text(load: tuple[Node, Node | None]) -> str:
    return f"{text(load[0])}[{text(load[1])}]" if load[1] is not None else f"*{text(load[0])}"


def _loop_store(g: Gemm, s: Node) -> tuple[str, LoopStore | Refused] | None:
    """``s`` as a loop of each thread over several rows (columns) of a tile,
    ``for (int j = <thread index>; j < E; j += <threads along that index>) [{ decls; }]
    S[..j..][..] = ...;``; None when ``s`` is not such a loop. A loop of that shape that
    steps otherwise, reassigns its variable or declares uniform values is answered with its
    refusal (its variable, then the loop store or the refusal)."""
    if s.type != "for_statement":
        return None
    init, cond, update, body = (s.child_by_field_name(f) for f in
                                ("initializer", "condition", "update", "body"))
    if init is None or init.type != "declaration" or cond is None or update is None or \
            body is None:
        return None
    decls = init.children_by_field_name("declarator")
    if len(decls) != 1 or decls[0].type != "init_declarator":
        return None
    var, start = decl_name(decls[0]), decls[0].child_by_field_name("value")
    dim = g.thread_dim(start) if start is not None else None
    if dim is None and start is not None and _is_flat_thread_index(g, start):
        dim = "flat"
    bound = binary(cond)
    stmts = _statements(body) if body.type == "compound_statement" else [body]
    try:
        guard = guarded_store(g, stmts[-1], _is_plain_store) if stmts else None
    except Refused as exc:
        return var, exc
    last = guard.store if guard is not None else stmts[-1] if stmts else None
    if last is None or not store_target(last) or start is None or \
            not g.mentions_thread(start):
        return None
    if guard is not None and dim == "flat":
        return var, Refused(f"the guard `{guard.condition}` inside a loop of the block's "
                            "flat thread index over a tile (a real thread's index, not the "
                            "tile position the loop stores): "
                            "which positions it lets through is not modelled", guard.node)
    if dim is None or not bound or bound[1] != "<" or text(strip(bound[0])) != var:
        return var, Refused(f"the loop `{text(init)} {text(cond)}; {text(update)}` storing a "
                            f"tile starts at `{text(start)}`, neither a thread index nor the "
                            f"block's flat thread index (ty * {g.block_size['x']} + tx), or "
                            "is not bounded by `<`: which thread stores which element is not "
                            "modelled", s)
    extent = const_value(bound[2])
    if dim == "flat":
        return var, _flat_loop_store(g, s, var, extent, update, body, stmts)
    step: Node | None = None
    u = strip(update)
    if u.type == "assignment_expression" and text(strip(u.child_by_field_name("left"))) == var:  # type: ignore[arg-type]
        right = u.child_by_field_name("right")
        if text(u.child_by_field_name("operator")) == "+=":
            step = right
        elif right is not None and (b := binary(right)) and b[1] == "+" and \
                text(strip(b[0])) == var:  # j = j + S
            step = b[2]
    threads = g.block_size[dim]
    if step is None or const_value(step) != threads or extent is None:
        return var, Refused(f"the loop `{text(init)} {text(cond)}; {text(update)}` storing a tile "
                      f"does not step by the block's {threads} threads along {dim} up to a "
                      "constant bound: which thread stores which element is not modelled", s)
    if var in _assigned(body):
        return var, Refused(f"`{var}` is reassigned inside the loop storing a tile", s)
    for d in stmts[:-1]:
        names = [decl_name(x) for x in d.children_by_field_name("declarator")] \
            if d.type == "declaration" else []
        if not names or any(x not in g.threaded or g.locals[x].count > 1 for x in names):
            return var, Refused(f"`{' '.join(text(d).split())[:60]}` in the loop storing a "
                                "tile is not a declaration of a value of the thread's "
                                "position", d)
    return var, LoopStore(var, dim, extent, last, guard=guard)


def _is_plain_store(stmt: Node) -> bool:
    return bool(store_target(stmt))


def _is_store(stmt: Node) -> bool:
    """Whether ``stmt`` is a tile store or a loop that may be one (:func:`_loop_store`)."""
    return bool(store_target(stmt)) or stmt.type == "for_statement"


def _is_flat_thread_index(g: Gemm, node: Node) -> bool:
    """Whether ``node`` is the block's flat thread index ``ty * Bx + tx`` (through locals,
    ``blockDim.x`` or a literal), on random thread positions."""
    rng = random.Random(28)
    for _ in range(4):
        pos = {d: rng.randrange(0, g.block_size[d]) for d in "xy"}

        def leaf(n: Node, pos: dict[str, int] = pos) -> int | Node | None:
            d = g.thread_dim(n)
            if d is not None:
                return pos[d]
            if (bd := builtin(n, "blockDim")) is not None:
                return g.block_size.get(bd, 1)
            if n.type == "identifier":
                lo = g.locals.get(text(n))
                if lo is not None:
                    if lo.count == 1 and text(n) not in g.assigned and lo.value is not None:
                        return lo.value
                    raise _Unknown(text(n))
                return int_value(n)
            return None
        try:
            if evaluate(node, leaf, {}, rng) != pos["y"] * g.block_size["x"] + pos["x"]:
                return False
        except _Unknown:
            return False
    return True


def _block_constant(g: Gemm, node: Node) -> int | None:
    """The value of a constant expression that may read the block's extents
    (``blockDim.x * blockDim.y``, ``BLK_M * BLK_N``), else None."""
    def leaf(n: Node) -> int | Node | None:
        if (bd := builtin(n, "blockDim")) is not None:
            return g.block_size.get(bd, 1)
        if n.type == "identifier":
            value = int_value(n)
            if value is None:
                raise _Unknown(text(n))
            return value
        if n.type == "field_expression":
            raise _Unknown(text(n))
        return None
    try:
        return evaluate(node, leaf, {}, random.Random(28))
    except _Unknown:
        return None


def _flat_loop_store(g: Gemm, s: Node, var: str, extent: int | None, update: Node,
                     body: Node, stmts: list[Node]) -> LoopStore | Refused:
    """``for (int e = <flat thread index>; e < R * C; e += <threads of the block>)`` storing
    the tile element at (``e / C``, ``e % C``), directly or through locals of the body: the
    loop store, or the refusal naming what is missing."""
    threads = g.block_size["x"] * g.block_size["y"]
    u = strip(update)
    step = u.child_by_field_name("right") if u.type == "assignment_expression" and \
        text(u.child_by_field_name("operator")) == "+=" else None
    read = _block_constant(g, step) if step is not None else None
    if read != threads or extent is None:
        return Refused(f"the loop over `{var}` storing a tile does not step by the block's "
                       f"{threads} threads up to a constant bound (step "
                       f"`{text(step) if step is not None else text(update)}` reads as "
                       f"{read}, bound {extent})", s)
    uses = [n for n in walk(body) if n.type == "identifier" and text(n) == var]
    inner: set[int] = set()
    for n in uses:
        parent = n.parent
        parts = binary(parent) if parent is not None else None
        value = const_value(parts[2]) if parts and parts[0] == n else None
        if not parts or parts[1] not in ("/", "%") or value is None:
            return Refused(f"`{text(parent if parent is not None else n)}` uses the flat "
                           f"position `{var}` other than as `{var} / C` (the tile row) and "
                           f"`{var} % C` (the column)", n)
        inner.add(value)
    if len(inner) != 1 or extent % next(iter(inner)) != 0:
        return Refused(f"the loop over `{var}` does not divide its {extent} positions into "
                       "rows of one length", s)
    if var in _assigned(body):
        return Refused(f"`{var}` is reassigned inside the loop storing a tile", s)
    cols = inner.pop()
    g.flat_vars[var] = cols
    # the body's ``int r = e / C, c = e % C;``: the position's row and column
    for name, lo in g.locals.items():
        if body.start_byte <= lo.decl.start_byte < body.end_byte and lo.count == 1 and \
                name not in g.assigned and lo.value is not None and \
                (pos := g.flat_position(strip(lo.value))) is not None:
            g.thread_alias[name] = pos
    for d in stmts[:-1]:
        names = [decl_name(x) for x in d.children_by_field_name("declarator")] \
            if d.type == "declaration" else []
        if not names or any(x not in g.threaded or g.locals[x].count > 1 for x in names):
            return Refused(f"`{' '.join(text(d).split())[:60]}` in the loop storing a tile "
                           "is not a declaration of a value of the thread's position", d)
    return LoopStore(var, "flat", extent // cols, stmts[-1], cols)


def _rect_extents(g: Gemm, loop: Node) -> None:
    """A rectangular block's tiles: the depth along k read from the extents at the tiles'
    k positions (``[.][E + 1]`` is E padded, a literal inner ``[.][33]`` may be 33 or 32
    padded), every other extent the block's threads along its role (a pad of one on the
    inner extent allowed); Refused where they differ."""
    candidates: set[int] | None = None
    for tl in g.tiles.values():
        for i, role in enumerate(tl.roles):
            if role != "k":
                continue
            value = const_value(tl.extents[i])
            assert value is not None  # checked at the top of analyse
            plus = binary(tl.extents[i])
            explicit = plus is not None and plus[1] == "+" and int_value(plus[2]) == 1 and \
                const_value(plus[0]) is not None
            here = {value - 1} if i == 1 and explicit else \
                {value, value - 1} if i == 1 else {value}
            candidates = here if candidates is None else candidates & here
    if not candidates or len(candidates) != 1:
        raise Refused("the shared tiles' depths along k "
                      + ("differ" if not candidates else "are ambiguous (every tile is "
                         "padded along k?)"), loop)
    g.k_size = candidates.pop()
    want = {"y": g.block_size["y"], "x": g.block_size["x"], "k": g.k_size}
    what = {"y": "rows (threads along y)", "x": "columns (threads along x)",
            "k": "depth along k"}
    for tl in g.tiles.values():
        for i, role in enumerate(tl.roles):
            value = const_value(tl.extents[i])
            if value == want[role]:
                continue
            if i == 1 and value == want[role] + 1:
                tl.padded = 1
                continue
            raise Refused(f"the extent `{text(tl.extents[i])}` ({value}) of the shared tile "
                          f"{tl.name} is not the block's {want[role]} {what[role]}", tl.decl)


def _check_cover(g: Gemm, tile: Tile, index: list[Node], dims: list[str],
                 loop_store: LoopStore | None, s: Node) -> None:
    """The tile's store covers each of its positions once: along each index, the threads of
    the block along that index (or a loop store's bound) are the tile's extent there."""
    want = {"y": g.block_size["y"], "x": g.block_size["x"], "k": g.k_size}
    used_var = False
    guard = g.guard_of(s)
    for i, (node, d) in enumerate(zip(index, dims, strict=True)):
        flat = loop_store is not None and loop_store.dim == "flat"
        is_var = loop_store is not None and (flat or (
            strip(node).type == "identifier" and text(strip(node)) == loop_store.var))
        used_var |= is_var
        if is_var and guard is not None and d in guard.limits:
            raise Refused(f"the guard of the store to {tile.name} bounds the thread index "
                          f"along {d}, which the loop storing it also walks: which positions "
                          "are stored is not modelled", guard.node)
        covered = g.block_size[d] if loop_store is None or not is_var else \
            loop_store.extent if not flat or d == "y" else loop_store.inner
        if guard is not None and not is_var:
            # ``if (tx < C)``: the threads past C along d do not store (:mod:`.regtile_guard`)
            covered = guard.covered(d, covered)
        if covered != want[tile.roles[i]]:
            raise Refused(f"the store to {tile.name} covers {covered} positions along its "
                          f"index `{text(node)}`, but the tile's extent there is "
                          f"{want[tile.roles[i]]}: not each element stored once", s)
    if loop_store is not None and not used_var:
        raise Refused(f"the loop storing {tile.name} does not index the tile with its "
                      f"variable `{loop_store.var}`", s)


def _uniform_step(g: Gemm, stmt: Node, compute: list[Node]) -> bool:
    """Whether ``stmt`` only steps a uniform local or parameter (``A += T;``, ``++t;``) that
    no other statement of ``compute`` reads."""
    if stmt.type != "expression_statement" or stmt.named_child_count != 1 or (
            g.mentions_thread(stmt) and not is_step_statement(stmt, g.walks)):
        return False
    e = strip(stmt.named_children[0])
    target = e.child_by_field_name("left") if e.type == "assignment_expression" else \
        e.child_by_field_name("argument") if e.type == "update_expression" else None
    if target is None or strip(target).type != "identifier" or \
            any(n.type == "call_expression" for n in walk(e)):
        return False
    name = text(strip(target))
    return not any(n.type == "identifier" and text(n) == name
                   for c in compute if c != stmt for n in walk(c))


def _tile_access(g: Gemm, node: Node) -> tuple[str, list[Node]] | None:
    """``g.access(node)``; a flat tile indexed otherwise than ``r * T + c`` is refused."""
    sub = g.access(node)
    whole = subscript(node)
    if sub is None and whole is not None and whole[0] in g.tiles:
        raise Refused(f"`{text(node)}` indexes the flat tile {whole[0]} otherwise than "
                      f"`row * {g.tile} + column`", node)
    return sub


def _check_flat_thread_index(g: Gemm) -> None:
    """In a 1-D block, the flat thread index is read only split into a row and a column."""
    assert g.split is not None
    for n in walk(g.body):
        if n.type == "field_expression" and (
                builtin(n, "threadIdx") in ("y", "z") or builtin(n, "blockDim") is not None):
            raise Refused(f"`{text(n)}` is read in a kernel launched with a 1-D block of "
                          f"{g.tile} * {g.tile} threads: only threadIdx.x split by / {g.tile} "
                          f"and % {g.tile} is modelled", n)
        flat = (n.type == "field_expression" and builtin(n, "threadIdx") == "x") or (
            n.type == "identifier" and text(n) in g.split.flat and not (
                n.parent is not None and n.parent.type == "init_declarator" and
                n.parent.child_by_field_name("declarator") == n))
        if flat and not g.split.allowed_use(n) and not _indexes_flat_tile(g, n):
            context = n.parent if n.parent is not None else n
            raise Refused(f"`{text(context)}` uses the flat thread index `{text(n)}` other "
                          f"than split into a row (/ {g.tile}) and a column (% {g.tile}): a "
                          "thread numbering the rewrite does not model", n)


def _indexes_flat_tile(g: Gemm, use: Node) -> bool:
    """Whether ``use`` is the whole index of a flat tile (``S[tid]``: row tid / T, column
    tid % T of the tile)."""
    parent = use.parent
    while parent is not None and parent.type in ("parenthesized_expression", "cast_expression"):
        parent = parent.parent
    if parent is not None and parent.type == "subscript_argument_list":
        parent = parent.parent
    sub = subscript(parent) if parent is not None and \
        parent.type == "subscript_expression" else None
    return sub is not None and sub[0] in g.tiles and g.tiles[sub[0]].flat and \
        len(sub[1]) == 1 and (sub[1][0].start_byte, sub[1][0].end_byte) == \
        (strip(use).start_byte, strip(use).end_byte)


def decl_name(d: Node) -> str:
    """The name a declarator declares (``p`` of ``* p = ...``, ``x`` of ``x[4]``)."""
    inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
    while inner is not None and inner.type in ("pointer_declarator", "array_declarator",
                                               "reference_declarator"):
        inner = inner.child_by_field_name("declarator") or inner.named_children[-1]
    return text(inner)


def loop_header(loop: Node) -> list[Node]:
    return [p for f in ("initializer", "condition", "update")
            if (p := loop.child_by_field_name(f)) is not None]
