"""Register tiling of the shared-memory tiled GEMM family (thread coarsening on the parse).

Recognised on the parse, by the roles of its parts rather than by one spelling: a 2-D block
``(T, T)``; a prologue of declarations (thread-index aliases, output coordinates, pointer
set-up, accumulators); one loop over K tiles whose body is *cooperative stores* of shared
``[T][T]`` tiles (``S[ty][tx] = E``, one element per thread, as a conditional expression or
an if/else), a barrier, a *compute* that reads each tile at ``S[thread][k]`` or
``S[k][thread]`` and updates thread-private accumulators, a barrier, and uniform updates;
then an epilogue that stores the accumulators.

The rewrite treats every thread of the original as one *virtual thread* of a
``(BN, BM)`` tile: a real thread ``(tx, ty)`` runs the virtual threads
``(tx + j * THREADS_X, ty + i * THREADS_Y)`` (``i < TM``, ``j < TN``) with its accumulators in
``acc[TM][TN]`` registers, and the shared tiles take their extents from the role of each index
(``[BK][BN]``), a tile read along k in its inner index stored k-major, ``[BK][BM + 1]``
(:mod:`.regtile_space` says why these are decided, not searched). A store ``S[ty][tx] = E(ty, tx)`` gives the tile element at position
``(ty, tx)``; it becomes a loop of all threads over the tile's positions ``(r, c)`` storing
``E(r, c)``. The literal (or macro) T takes its role from where it stands: ``blockIdx.y * T``
is BM, ``blockIdx.x * T`` is BN, every other use (the K step, the inner loop bound, ``t * T``)
is BK. Anything the analysis does not model (a barrier elsewhere, a thread-dependent pointer
that is reassigned, T multiplied by a thread index, an early return) refuses the transform
with its reason and line.

A cooperative store that only the threads inside the tile run (``if (threadIdx.x < T)
S[ty][tx] = ...`` in a block wider than the tile) covers the positions its guard lets
through; the position loop that replaces it stores every position, so the guard goes with it
(:mod:`.regtile_guard`).

A pointer (or index) set per thread before the loop and stepped by the same amount for
every thread after each tile (``pa += T``) is its initial value plus one uniform offset
(:mod:`.regtile_walk`); it is inlined at each virtual thread with that offset. Tiles may be
of float loaded from half-precision matrices (``__half2float`` at the store) or of half;
the epilogue is any per-output code that reads the accumulators (``alpha * acc``,
``alpha * acc + beta * C``, a bias and an activation), run once per virtual thread.

The 1-D spelling (a block of ``T * T`` threads split into row and column by ``/ T`` and
``% T``, tiles declared flat ``[T * T]`` and read ``S[r * T + c]``) is read through
:mod:`.regtile_split` as that same 2-D kernel; its template keeps a 1-D block of
``(BM / TM) * (BN / TN)`` threads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tree_sitter import Node

from workbench.core.errors import WorkbenchError
from workbench.templater.analysis import (
    binary,
    builtin,
    calls,
    factors,
    int_value,
    strip,
    text,
    walk,
)
from workbench.templater.analysis import integer_macros as reading_constants
from workbench.templater.macros import integer_macros
from workbench.templater.plan import Plan
from workbench.templater.regtile_pairing import (
    ROWS_FROM_Y,
)
from workbench.templater.regtile_shapes import constrain_unguarded
from workbench.templater.regtile_split import (
    ThreadSplit,
    const_value,
    flat_index,
    rule_threads,
    square_side,
)
from workbench.templater.regtile_walk import NotWalk, Walk
from workbench.templater.rules import literal

if TYPE_CHECKING:
    from workbench.templater.regtile_diagonal import Diagonal
    from workbench.templater.regtile_guard import Guard

_ELEM = {"float": 4, "double": 8, "__half": 2, "half": 2, "__nv_bfloat16": 2, "int": 4,
         "float2": 8, "double2": 16}  # a complex pair an element (cuComplex, cuDoubleComplex)
_MAX_SMEM = 49152  # static shared memory per block, bytes


class Refused(WorkbenchError):
    """The kernel has the family's shape but a part the analysis cannot follow: ``reason``
    and the node it is about (caught inside the templater and recorded as a finding)."""

    def __init__(self, reason: str, node: Node | None = None) -> None:
        super().__init__(reason, reason=reason)
        self.reason, self.node = reason, node


def apply_or_note(plan: Plan, knob: str,
                  analyse: Callable[[], Callable[[], None] | None]) -> bool:
    """Run ``analyse`` and apply the rewrite it returns (True); False when it found none, or
    refused (the refusal noted against ``knob`` with its reason and line)."""
    try:
        emit = analyse()
    except Refused as exc:
        plan.note(knob, False, exc.reason, exc.node)
        return False
    if emit is None:
        return False
    emit()
    return True


@dataclass
class Local:
    """One declared local: its declarator, initial value and the declaration holding it."""

    name: str
    decl: Node
    declarator: Node
    value: Node | None
    count: int = 1


@dataclass(frozen=True)
class LoopStore:
    """A cooperative store written as a loop of each thread over several rows (columns) of
    a tile, ``for (j = ty; j < E; j += <threads along y>) S[j][tx] = ...``: ``var`` stands
    for the thread index ``dim`` over ``extent`` positions; ``store`` is the one store of
    its body (its other statements declare thread-dependent locals, inlined)."""

    var: str
    dim: str  # "x" / "y"; "flat": the flat thread index over ``extent`` x ``inner``
    extent: int
    store: Node
    inner: int = 0  # a flat loop's row length (the tile's inner extent)
    guard: Guard | None = None  # ``if (tx < C)`` around ``store`` (:mod:`.regtile_guard`)


@dataclass
class Tile:
    """A shared tile: its declaration, extent nodes and the role of each index position
    ("x"/"y": the output dimension the compute reads it along, "k": the reduction)."""

    name: str
    decl: Node
    extents: list[Node]
    roles: list[str] = field(default_factory=list)
    elem_bytes: int = 4
    padded: int = 0  # the author's pad on the inner extent (``[T][T + 1]``)
    flat: bool = False  # declared ``[T * T]``, read ``S[r * T + c]``


def render(data: bytes, node: Node, sub: Callable[[Node], str | None]) -> str:
    """``node``'s text with every subtree for which ``sub`` answers a string replaced."""
    out: list[str] = []
    pos = node.start_byte
    stack = [node]
    while stack:
        n = stack.pop()
        s = sub(n)
        if s is not None:
            out += [data[pos:n.start_byte].decode(), s]
            pos = n.end_byte
        else:
            stack.extend(reversed(n.children))
    out.append(data[pos:node.end_byte].decode())
    return "".join(out)


def _locals(body: Node) -> dict[str, Local]:
    out: dict[str, Local] = {}
    for n in walk(body):
        if n.type != "declaration":
            continue
        for d in n.children_by_field_name("declarator"):
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            while inner is not None and inner.type in ("pointer_declarator", "array_declarator"):
                inner = inner.child_by_field_name("declarator")
            name = text(inner)
            if name in out:
                out[name].count += 1
            elif name:
                out[name] = Local(name, n, d, value)
    return out


def _assigned(node: Node) -> set[str]:
    out = set()
    for n in walk(node):
        if n.type in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
            if target is not None and strip(target).type == "identifier":
                out.add(text(strip(target)))
    return out


def single_assignment_values(body: Node, keep: set[str]) -> dict[str, Node]:
    """Local name -> its initialiser, for the locals of ``body`` declared once with a value
    and never assigned again (those in ``keep`` left out): the ones safe to expand."""
    locals_ = _locals(body)
    assigned = _assigned(body)
    return {n: lo.value for n, lo in locals_.items()
            if lo.count == 1 and n not in assigned and lo.value is not None and n not in keep}


def _is_sync(stmt: Node) -> bool:
    return stmt.type == "expression_statement" and stmt.named_child_count == 1 and \
        strip(stmt.named_children[0]).type == "call_expression" and \
        text(strip(stmt.named_children[0]).child_by_field_name("function")) == "__syncthreads"


def _statements(block: Node) -> list[Node]:
    return [c for c in block.named_children if c.type != "comment"]


class Gemm:
    """The facts of one kernel of the family and their rendering."""

    def __init__(self, plan: Plan, tile: int, *, one_d: bool = False,
                 rows: int | None = None) -> None:
        self.plan, self.tile = plan, tile
        # threads per block along x (the output's columns) and y (its rows) as launched; a
        # rectangular block (rows != tile) has tiles of three sizes, the depth along k read
        # from the tiles' extents (:func:`.regtile_analysis.analyse`)
        self.block_size = {"x": tile, "y": rows if rows is not None else tile}
        self.k_size = tile
        self.rect = self.block_size["x"] != self.block_size["y"]
        self.loop_stores: dict[tuple[int, int], LoopStore] = {}
        # a store (or loop store) only some threads run, ``if (tx < C) S[ty][tx] = ...``
        self.guards: dict[tuple[int, int], Guard] = {}
        # a loop store's flat position ``e`` (``for (e = tid; e < R * C; e += threads)``)
        # -> C: ``e / C`` is the tile row it stores, ``e % C`` the column
        self.flat_vars: dict[str, int] = {}
        self.data = plan.source.data
        self.body = plan.body
        self.locals = _locals(self.body)
        self.assigned = _assigned(self.body)
        single = {n for n, lo in self.locals.items() if lo.count == 1 and n not in self.assigned}
        self.thread_alias: dict[str, str] = {}
        self.block_alias: dict[str, str] = {}
        # a 1-D block of T * T threads: the thread's x / y are splits of its flat index
        self.split: ThreadSplit | None = ThreadSplit(tile, {
            n: v for n in single if (v := self.locals[n].value) is not None}) if one_d else None
        for name in single:
            value = self.locals[name].value
            if value is not None and self.split is not None:
                if (d := self.split.dim(strip(value))) is not None:
                    self.thread_alias[name] = d
            elif value is not None and builtin(value, "threadIdx") in ("x", "y"):
                self.thread_alias[name] = builtin(value, "threadIdx")  # type: ignore[assignment]
            if value is not None and builtin(value, "blockIdx") in ("x", "y", "z"):
                self.block_alias[name] = builtin(value, "blockIdx")  # type: ignore[assignment]
        # locals whose value depends on the thread index (directly or through another)
        self.threaded: set[str] = set(self.thread_alias)
        changed = True
        while changed:
            changed = False
            for name, lo in self.locals.items():
                if name not in self.threaded and lo.value is not None and \
                        self.mentions_thread(lo.value):
                    self.threaded.add(name)
                    changed = True
        self.roles: dict[tuple[int, int], str] = {}
        self.tiles: dict[str, Tile] = {}
        self.accumulators: list[Local] = []
        self.names: dict[str, str] = {}
        self.inlinable: set[str] = set()
        # the tiles stored k-major (transposed as they are loaded), see
        # :func:`.regtile_emit.emit_register_tile`
        self.transposed: set[str] = set()
        self.rows_from = ROWS_FROM_Y  # the block index that offsets the output's rows first
        self.constants: set[str] = set()  # ``const int`` locals read as integers
        self.roles_known = False  # every tile's roles read from the product
        # thread-dependent locals stepped along k (:mod:`.regtile_walk`): each read is its
        # initial value at the virtual thread plus a uniform offset
        self.walks: dict[str, Walk] = {}
        # the loop over k tiles' test, where it stops at the block's diagonal, rendered in k
        # (:mod:`.regtile_diagonal`)
        self.diagonal: Diagonal | None = None
        self.not_walks: dict[str, NotWalk] = {}
        # the step of a hand-unrolled loop over k (``k += 4`` reading k .. k + 3): the
        # depth BK stays a multiple of it
        self.k_step = 1

    # -- facts -------------------------------------------------------------------------
    def unguarded(self, s: Node) -> Node:
        """The statement a guarded top-level store ``s`` runs (``s`` itself unguarded)."""
        guard = self.guards.get((s.start_byte, s.end_byte))
        return guard.store if guard is not None else s

    def store_of(self, s: Node) -> Node:
        """The one tile store of the top-level store statement ``s``: the store itself, the
        body's store of a loop store, under any guard."""
        loop_store = self.loop_stores.get((s.start_byte, s.end_byte))
        return loop_store.store if loop_store is not None else self.unguarded(s)

    def guard_of(self, s: Node) -> Guard | None:
        """The guard around top-level store ``s`` or around its loop's store (None: every
        thread stores)."""
        guard = self.guards.get((s.start_byte, s.end_byte))
        loop_store = self.loop_stores.get((s.start_byte, s.end_byte))
        return guard if guard is not None else loop_store.guard if loop_store is not None \
            else None

    def thread_dim(self, node: Node) -> str | None:
        node = strip(node)
        d = builtin(node, "threadIdx") if self.split is None else self.split.dim(node)
        if d is not None:
            return d
        if node.type == "identifier":
            return self.thread_alias.get(text(node))
        if node.type == "binary_expression" and self.flat_vars:
            return self.flat_position(node)
        return None

    def flat_position(self, node: Node) -> str | None:
        """"y" for ``e / C``, "x" for ``e % C`` of a flat loop store's position ``e``."""
        parts = binary(node)
        if not parts or parts[1] not in ("/", "%") or strip(parts[0]).type != "identifier":
            return None
        inner = self.flat_vars.get(text(strip(parts[0])))
        if inner is None or const_value(parts[2]) != inner:
            return None
        return "y" if parts[1] == "/" else "x"

    def mentions_thread(self, node: Node) -> bool:
        for n in walk(node):
            if builtin(n, "threadIdx") is not None:
                return True
            if n.type == "identifier" and text(n) in getattr(self, "threaded", set()):
                return True
        return False

    def block_dim(self, node: Node) -> str | None:
        node = strip(node)
        d = builtin(node, "blockIdx")
        if d is None and node.type == "identifier":
            d = self.block_alias.get(text(node))
        return d

    def sizes(self) -> set[int]:
        """The tile sizes as written: the block's threads along x and y, the depth along k."""
        return {*self.block_size.values(), self.k_size}

    def grid_divisor(self, rule: int) -> int:
        """The written tile size the grid rule ``rule`` (0: x, 1: y) divides by: the rows
        per block along the block index that offsets the rows, the columns along the other."""
        dim = "xy"[rule]
        return self.block_size["y" if dim == self.rows_from[0] else "x"]

    def is_tile_size(self, n: Node) -> bool:
        if n.type == "number_literal" or (n.type == "identifier" and n.parent is not None
                                          and n.parent.type != "field_expression"):
            return int_value(n) in self.sizes()
        return False

    def classify(self, extent_spans: set[tuple[int, int]]) -> None:
        """The role of every use of T (BM, BN or BK) and of every ``blockDim``."""
        for n in walk(self.body):
            span = (n.start_byte, n.end_byte)
            is_dim = builtin(n, "blockDim") is not None and n.type == "field_expression"
            if span in extent_spans or not (self.is_tile_size(n) or is_dim):
                continue
            top = n
            while top.parent is not None and (
                    top.parent.type == "parenthesized_expression" or
                    (top.parent.type == "binary_expression" and
                     text(top.parent.child_by_field_name("operator")) == "*")):
                top = top.parent
            dims = {self.block_dim(f) for f in factors(top)} - {None}
            if "z" in dims:
                raise Refused(f"`{text(top)}` multiplies the batch index (blockIdx.z) by the "
                              f"tile size {self.tile}: the grid's z is kept as written", n)
            if any(self.thread_dim(f) is not None for f in factors(top)):
                raise Refused(f"`{text(top)}` multiplies a thread index by the tile size "
                              f"{self.tile}: a thread numbering the rewrite does not model", n)
            value = self.block_size.get(builtin(n, "blockDim") or "z", 1) if is_dim else \
                int_value(n)
            if len(dims) == 1:
                role = "BM" if dims == {self.rows_from[0]} else "BN"
                # one output per thread: a block offsets its rows (columns) by its threads
                # along y (x)
                want = self.block_size["y" if role == "BM" else "x"]
                if value != want:
                    raise Refused(f"`{text(top)}` offsets the block by {value} "
                                  f"{'rows' if role == 'BM' else 'columns'}, but the block "
                                  f"has {want} threads along them (one output each)", n)
                self.roles[span] = role
            elif is_dim:
                raise Refused(f"`{text(n)}` is used other than as a block offset "
                              f"(`{text(top)}`)", n)
            elif value != self.k_size:
                raise Refused(f"`{text(top)}` uses the block size {value} other than as a "
                              f"block offset (the tiles' depth along k is {self.k_size}): a "
                              "dependency the rewrite does not model", n)
            else:
                self.roles[span] = "BK"

    def access(self, node: Node) -> tuple[str, list[Node]] | None:
        """(array, [row, column]) of a subscript; a flat tile's one index split into its
        row and column (None when it is not written ``r * T + c``)."""
        sub = subscript(node)
        if sub is None:
            return None
        tile = self.tiles.get(sub[0])
        if tile is None or not tile.flat:
            return sub
        if len(sub[1]) == 1 and self.whole_flat(sub[1][0]):
            return sub[0], [sub[1][0], sub[1][0]]  # S[tid]: (tid / T, tid % T)
        parts = flat_index(sub[1][0], self.tile) if len(sub[1]) == 1 else None
        return (sub[0], list(parts)) if parts is not None else None

    def whole_flat(self, index: Node) -> bool:
        """Whether ``index`` is a 1-D block's flat thread index itself (``S[tid]``)."""
        return self.split is not None and self.split.is_flat(index)

    def position_dims(self, index: list[Node]) -> list[str | None]:
        """The thread dimension ("y" / "x") at each position of an access's [row, column]."""
        if len(index) == 2 and index[0] == index[1] and self.whole_flat(index[0]):
            return ["y", "x"]
        return [self.thread_dim(i) for i in index]

    # -- rendering ---------------------------------------------------------------------
    def role_sub(self, n: Node) -> str | None:
        role = self.roles.get((n.start_byte, n.end_byte))
        return self.names[role] if role is not None else None

    def uniform_sub(self, n: Node) -> str | None:
        """Substitution for the code every thread runs once per tile (the loop header, the
        statements after the product): roles, and a walking local's steps taken by its
        uniform offset."""
        if self.diagonal is not None and n == self.diagonal.test:
            return self.diagonal.in_k(self.names)
        role = self.role_sub(n)
        if role is not None:
            return role
        if n.type == "identifier" and text(n) in self.walks:
            return self.walks[text(n)].offset
        return None

    def region(self, threads: dict[str, str], acc: bool) -> Callable[[Node], str | None]:
        """Substitution for code run by a virtual thread or at a tile position: thread
        indices become ``threads[dim]``, thread-dependent locals declared outside are
        inlined, accumulators index the register tile."""
        acc_names = {a.name for a in self.accumulators}

        def sub(n: Node) -> str | None:
            role = self.role_sub(n)
            if role is not None:
                return role
            if n.type == "subscript_expression" and (
                    n.parent is None or n.parent.type != "subscript_expression"):
                access = self.access(n)
                if access is not None and len(access[1]) == 2 and (
                        access[0] in self.transposed or (access[0] in self.tiles and
                                                         self.tiles[access[0]].flat)):
                    r, c = (render(self.data, i, sub) for i in access[1]) \
                        if self.position_dims(access[1]) != ["y", "x"] or \
                        access[1][0] != access[1][1] else (threads["y"], threads["x"])
                    if access[0] not in self.transposed:
                        return f"{access[0]}[{r}][{c}]"  # a flat tile is declared 2-D
                    return f"{access[0]}[{c}][{r}]"  # stored k-major: the indices swap
            if self.split is not None and n.type == "binary_expression":
                d = self.split.dim(n)
                if d is not None:
                    return threads[d]
            if n.type == "binary_expression" and (d := self.flat_position(n)) is not None:
                return threads[d]
            d = builtin(n, "threadIdx") if n.type == "field_expression" else None
            if d is not None:
                return threads[d]
            if n.type == "identifier":
                name = text(n)
                if name in self.thread_alias:
                    return threads[self.thread_alias[name]]
                if acc and name in acc_names:
                    return f"{name}[wb_i][wb_j]"
                lo = self.locals.get(name)
                if name in self.walks and lo is not None and lo.value is not None:
                    return f"(({render(self.data, lo.value, sub)}) + {self.walks[name].offset})"
                if name in self.inlinable and lo is not None and lo.value is not None:
                    return "(" + render(self.data, lo.value, sub) + ")"
            return None
        return sub


def fresh_names(plan: Plan, wanted: list[str]) -> dict[str, str]:
    used = {text(n) for n in walk(plan.source.tree.root_node) if n.type == "identifier"} | \
        {text(n.child_by_field_name("name")) for n in walk(plan.source.tree.root_node)
         if n.type == "preproc_def"}
    return {w: (w if w not in used else f"TUNED_{w}") for w in wanted}


def lift_regtile(plan: Plan) -> bool:
    """Register tiling of a shared-memory tiled GEMM; False when the kernel is not of the
    family (or is, and the analysis refused it: the finding says why)."""
    if not any(d.type == "declaration" and any(text(c) == "__shared__" for c in d.children)
               for d in walk(plan.body)):
        from workbench.templater.regtile_naive import lift_naive  # it imports this module
        return lift_naive(plan)  # the product without shared tiles
    if not 1 <= len(plan.block) <= 3 or any(literal(b) != 1 for b in plan.block[2:]):
        return False
    side = square_side(rule_threads(plan.block[0]))
    one_d = side is not None and (len(plan.block) == 1 or literal(plan.block[1]) == 1)
    bx = side if one_d else literal(plan.block[0])
    if len(plan.block) < 2 and not one_d:
        return False
    by = bx if one_d else literal(plan.block[1])
    if not one_d and (bx is None or by is None or bx < 2 or by < 2):
        return False
    assert bx is not None and by is not None
    if bx != by and (bx & (bx - 1) or by & (by - 1)):
        return False  # a rectangular block of other than powers of two: not modelled
    loops = [s for s in _statements(plan.body) if s.type in ("for_statement", "while_statement")
             and "__syncthreads" in calls(s)]
    shared = [d for d in walk(plan.body) if d.type == "declaration" and
              any(text(c) == "__shared__" for c in d.children)]
    staged_do = next((s for s in _statements(plan.body) if s.type == "do_statement"
                      and "__syncthreads" in calls(s)), None)
    if not loops and staged_do is not None and len(shared) >= 2:
        plan.note("REGISTER_TILE", False, "the walk over the shared tiles is a do-while: its "
                  "first pass runs before its test (at a reduction length of 0 too), the loop "
                  "over k the register tile writes does not; a for or while loop is read",
                  staged_do)
        return False
    if len(loops) != 1 or len(shared) < 2:
        return False
    # both import this module
    from workbench.templater.regtile_analysis import analyse, integer_constants
    from workbench.templater.regtile_diagonal import diagonal
    from workbench.templater.regtile_emit import emit_register_tile
    values = {m.name: m.value for m in integer_macros(plan.source).values()}
    # ``const int TILE = 16;`` (file scope or the kernel's top) is read as the macro would be;
    # the constants the caller reads (a struct's ``Tile::ROWS``, a namespace's ``cfg::BK``:
    # :func:`.semantic.file_constants`) stay read
    from workbench.templater.analysis import _CONSTANTS
    constants = integer_constants(plan)
    with reading_constants({**(_CONSTANTS.get() or {}), **values, **constants}):
        rect_unread = bx != by  # until the analysis has read every tile's roles
        try:
            g = Gemm(plan, bx, one_d=one_d, rows=by)
            g.constants = set(constants)
            analyse(g, loops[0])
            g.diagonal = diagonal(plan.body, loops[0])  # t <= blockIdx.y: a triangle
        except Refused as exc:
            if exc.reason == "not-gemm" or (rect_unread and not g.roles_known):
                return False  # a rectangular block whose tiles are not read as a GEMM's
            plan.note("REGISTER_TILE", False, exc.reason, exc.node)
            return False
        emit_register_tile(g, loops[0])
        if g.diagonal is not None:
            g.diagonal.note(plan, g.names)
        constrain_unguarded(plan, {"y": g.names["BM"], "x": g.names["BN"], "k": g.names["BK"]},
                            loops[0].child_by_field_name("condition"))
    return True


def subscript(node: Node) -> tuple[str, list[Node]] | None:
    idx: list[Node] = []
    node = strip(node)
    while node.type == "subscript_expression":
        i = node.child_by_field_name("indices") or node.child_by_field_name("index")
        if i is None:
            return None
        idx.insert(0, strip(i.named_children[0]) if i.type == "subscript_argument_list"
                   and i.named_child_count == 1 else strip(i))
        node = strip(node.child_by_field_name("argument"))  # type: ignore[arg-type]
    return (text(node), idx) if node.type == "identifier" and idx else None
