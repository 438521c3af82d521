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
``acc[TM][TN]`` registers, and the shared tiles become ``[BM][BK]`` / ``[BK][BN]`` (by the role
of each index). A store ``S[ty][tx] = E(ty, tx)`` gives the tile element at position
``(ty, tx)``; it becomes a loop of all threads over the tile's positions ``(r, c)`` storing
``E(r, c)``. The literal (or macro) T takes its role from where it stands: ``blockIdx.y * T``
is BM, ``blockIdx.x * T`` is BN, every other use (the K step, the inner loop bound, ``t * T``)
is BK. Anything the analysis does not model (a barrier elsewhere, a thread-dependent pointer
that is reassigned, T multiplied by a thread index, an early return) refuses the transform
with its reason and line.

The 1-D spelling (a block of ``T * T`` threads split into row and column by ``/ T`` and
``% T``, tiles declared flat ``[T * T]`` and read ``S[r * T + c]``) is read through
:mod:`.regtile_split` as that same 2-D kernel; its template keeps a 1-D block of
``(BM / TM) * (BN / TN)`` threads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.core.errors import WorkbenchError
from workbench.llm.templater.analysis import (
    binary,
    builtin,
    calls,
    factors,
    int_value,
    strip,
    terms,
    text,
    walk,
)
from workbench.llm.templater.analysis import integer_macros as reading_constants
from workbench.llm.templater.macros import integer_macros
from workbench.llm.templater.plan import Plan
from workbench.llm.templater.regtile_pairing import (
    ROWS_FROM_X,
    ROWS_FROM_Y,
    Indexing,
    loads,
    output_stores,
    pairing,
    same_move,
)
from workbench.llm.templater.regtile_split import (
    ThreadSplit,
    const_value,
    counts_below,
    flat_index,
    rule_threads,
    square_side,
)
from workbench.llm.templater.rules import literal, scale_divisor

_ELEM = {"float": 4, "double": 8, "__half": 2, "half": 2, "__nv_bfloat16": 2, "int": 4}
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

    def __init__(self, plan: Plan, tile: int, *, one_d: bool = False) -> None:
        self.plan, self.tile = plan, tile
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
        self.transposed: dict[str, str] = {}  # tile -> the knob that stores it k-major
        self.rows_from = ROWS_FROM_Y  # the block index that offsets the output's rows first
        self.constants: set[str] = set()  # ``const int`` locals read as integers

    # -- facts -------------------------------------------------------------------------
    def thread_dim(self, node: Node) -> str | None:
        node = strip(node)
        d = builtin(node, "threadIdx") if self.split is None else self.split.dim(node)
        if d is not None:
            return d
        if node.type == "identifier":
            return self.thread_alias.get(text(node))
        return None

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

    def is_tile_size(self, n: Node) -> bool:
        if n.type == "number_literal" or (n.type == "identifier" and n.parent is not None
                                          and n.parent.type != "field_expression"):
            return int_value(n) == self.tile
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
            if len(dims) == 1:
                self.roles[span] = "BM" if dims == {self.rows_from[0]} else "BN"
            elif is_dim:
                raise Refused(f"`{text(n)}` is used other than as a block offset "
                              f"(`{text(top)}`)", n)
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
        parts = flat_index(sub[1][0], self.tile) if len(sub[1]) == 1 else None
        return (sub[0], list(parts)) if parts is not None else None

    # -- rendering ---------------------------------------------------------------------
    def role_sub(self, n: Node) -> str | None:
        role = self.roles.get((n.start_byte, n.end_byte))
        return self.names[role] if role is not None else None

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
                    r, c = (render(self.data, i, sub) for i in access[1])
                    if access[0] not in self.transposed:
                        return f"{access[0]}[{r}][{c}]"  # a flat tile is declared 2-D
                    # both layouts in one expression: the knob is a compile-time 0 / 1
                    knob = self.transposed[access[0]]
                    return f"{access[0]}[{knob} ? ({c}) : ({r})][{knob} ? ({r}) : ({c})]"
            if self.split is not None and n.type == "binary_expression":
                d = self.split.dim(n)
                if d is not None:
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
    if not 1 <= len(plan.block) <= 3 or any(literal(b) != 1 for b in plan.block[2:]):
        return False
    side = square_side(rule_threads(plan.block[0]))
    one_d = side is not None and (len(plan.block) == 1 or literal(plan.block[1]) == 1)
    bx = side if one_d else literal(plan.block[0])
    if len(plan.block) < 2 and not one_d:
        return False
    if not one_d and (bx is None or bx != literal(plan.block[1]) or bx < 2):
        return False
    assert bx is not None
    loops = [s for s in _statements(plan.body) if s.type in ("for_statement", "while_statement")
             and "__syncthreads" in calls(s)]
    shared = [d for d in walk(plan.body) if d.type == "declaration" and
              any(text(c) == "__shared__" for c in d.children)]
    if len(loops) != 1 or len(shared) < 2:
        return False
    from workbench.llm.templater.regtile_emit import emit_register_tile  # imports this
    values = {m.name: m.value for m in integer_macros(plan.source).values()}
    # ``const int TILE = 16;`` (file scope or the kernel's top) is read as the macro would be
    constants = integer_constants(plan)
    with reading_constants({**values, **constants}):
        try:
            g = Gemm(plan, bx, one_d=one_d)
            g.constants = set(constants)
            _analyse(g, loops[0])
        except Refused as exc:
            if exc.reason == "not-gemm":
                return False
            plan.note("REGISTER_TILE", False, exc.reason, exc.node)
            return False
        emit_register_tile(g, loops[0])
    return True


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


def _analyse(g: Gemm, loop: Node) -> None:
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
    # uniform steps between the barriers that the product does not read (``A += T;`` as
    # the pointers walk along k) run after the second barrier instead: the same values
    moved = [c for c in compute if _uniform_step(g, c, compute)]
    parts = Parts(top[:k], stmts[:syncs[0]], [c for c in compute if c not in moved],
                  moved + stmts[syncs[1] + 1:], top[k + 1:])
    for s in parts.prologue + parts.epilogue:
        for n in walk(s):
            if n.type in ("return_statement", "goto_statement"):
                raise Refused(f"`{text(n)}` outside the loop over tiles: an early exit the "
                              "coarsened threads cannot share", n)
    # thread-dependent locals declared outside the per-thread code are inlined there: they
    # must be single definitions that are never reassigned
    outside = [c for c in parts.prologue + parts.stores]
    g.inlinable = {x for x in g.threaded if any(
        c.start_byte <= g.locals[x].decl.start_byte < c.end_byte for c in outside)}
    for s in outside:
        names = [decl_name(d) for d in s.children_by_field_name("declarator")] \
            if s.type == "declaration" else []
        if len({x in g.inlinable for x in names}) > 1:
            raise Refused(f"`{text(s)}` declares thread-dependent and uniform values "
                          "together", s)
    for name in g.inlinable:
        if g.locals[name].count > 1 or name in g.assigned:
            raise Refused(f"`{name}` depends on the thread index and is reassigned",
                          g.locals[name].decl)
    # the stores: one element per thread of each tile, at thread-index positions
    stored: dict[str, list[str]] = {}
    for s in parts.stores:
        if s.type == "declaration":
            continue
        targets = store_target(s)
        sub = _tile_access(g, targets[0]) if targets else None
        if sub is None or sub[0] not in tiles:
            raise Refused(f"`{' '.join(text(s).split())[:60]}` before the first barrier is "
                          "not a store of a shared tile", s)
        dims = [g.thread_dim(i) for i in sub[1]]
        if None in dims or len(set(dims)) != 2 or sub[0] in stored:
            raise Refused(f"the store to {sub[0]} is not one element per thread at "
                          "(thread y, thread x) positions", s)
        stored[sub[0]] = dims  # type: ignore[assignment]
    if set(stored) != set(tiles):
        raise Refused("not every shared tile is stored before the first barrier", loop)
    # the compute: reads at (thread, k) positions, writes only private state
    writes = {w for c in parts.compute for w in _assigned(c)}
    inner_decls = {lo.name for lo in g.locals.values()
                   if any(lo.decl.start_byte >= c.start_byte and lo.decl.end_byte <= c.end_byte
                          for c in parts.compute)}
    accs = writes - inner_decls
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
    if any(not tl.roles for tl in tiles.values()):
        raise Refused("a shared tile is stored but not read between the barriers", loop)
    if {r for tl in tiles.values() for r in tl.roles} != {"x", "y", "k"}:
        raise Refused("the tiles are not read along both output dimensions", loop)
    if any(tl.elem_bytes == 0 for tl in tiles.values()):
        raise Refused("a shared tile has an element type of unknown size", loop)
    for name in accs:
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
    # a count of tiles may sit in the header or in a local it reads (``n_tiles = K / T``)
    for n in (m for h in loop_header(loop) + parts.prologue + parts.after for m in walk(h)):
        parts_div = binary(n)
        if g.split is not None and g.split.dim(n) is not None:
            continue  # the thread's row, not a count of tiles
        if parts_div and parts_div[1] == "/" and int_value(parts_div[2]) == t:
            # a rounded-up count, ``(K + T - 1) / T`` or ``(K + 15) / 16``, covers the rest
            constant = [sign * (int_value(x) or 0) for sign, x in terms(parts_div[0])
                        if int_value(x) is not None]
            if len(terms(parts_div[0])) - len(constant) != 1 or sum(constant) != t - 1:
                raise Refused(f"`{text(n)}` counts whole tiles of the written size (it assumes "
                              f"a multiple of {t}); a deeper tile would drop the remainder", n)
    for s in parts.after + loop_header(loop):
        if g.mentions_thread(s):
            raise Refused(f"`{text(s)}` in the loop over tiles depends on the thread index", s)
    for s in parts.epilogue:
        if any(subscript(n) and subscript(n)[0] in tiles  # type: ignore[index]
               for n in walk(s) if n.type == "subscript_expression"):
            raise Refused("the epilogue reads a shared tile", s)
        if "__syncthreads" in calls(s):
            raise Refused("a barrier after the loop over tiles", s)
    for s in parts.prologue:
        if s.type == "declaration" or not g.mentions_thread(s):
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
        if scale_divisor(plan.grid[g_rule], str(t), want) is None:
            raise Refused(f"grid rule {plan.grid[g_rule]!r} does not divide by the tile {t}")


def _read_pairing(g: Gemm, parts: Parts) -> None:
    """Set ``g.rows_from`` from the output's addresses, and check that each tile's loads
    move with the block index of the output dimension the tile runs along
    (:mod:`.regtile_pairing`); a 1-D block, whose rows and columns come from one index, is
    refused where either cannot be evaluated."""
    def local_value(name: str) -> Node | None:
        lo = g.locals.get(name)
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
    ix = Indexing(g.thread_dim, local_value, varies, g.tile, initial_value, varying_local)
    stores = output_stores(parts.epilogue, set(g.tiles))
    verdict = pairing(stores, parts.prologue, g.body, ix)
    where = stores[0][2] if stores else None
    if verdict == "neither":
        raise Refused(f"the output `{text(where)[:60]}` is not at (block row * {g.tile} + "
                      f"thread row, block column * {g.tile} + thread column) for one block "
                      "index as the rows and the other as the columns", where)
    if verdict is None and g.split is not None:
        raise Refused("the output's address could not be evaluated from the block and thread "
                      "indices, so which block index offsets its rows is unknown", where)
    g.rows_from = verdict if verdict in (ROWS_FROM_Y, ROWS_FROM_X) else ROWS_FROM_Y
    block_of = {"y": g.rows_from[0], "x": g.rows_from[1]}
    for s in parts.stores:
        target = store_target(s) if s.type != "declaration" else []
        access = g.access(target[0]) if target else None
        if access is None or access[0] not in g.tiles:
            continue
        tile = g.tiles[access[0]]
        dims = [g.thread_dim(i) for i in access[1]]
        for load in loads(s, set(g.tiles)):
            for d, role in zip(dims, tile.roles, strict=True):
                if role == "k" or d is None:
                    continue
                moved = same_move(load, parts.prologue, g.body, ix, d, block_of[role])
                if moved is False or (moved is None and g.split is not None):
                    raise Refused(
                        f"the load `{text(load[0])}[{text(load[1])}]` of tile {tile.name} "
                        + ("does not move" if moved is False else "cannot be shown to move")
                        + f" by one block along {'rows' if role == 'y' else 'columns'} when "
                        f"the tile position moves by {g.tile}", s)


def _uniform_step(g: Gemm, stmt: Node, compute: list[Node]) -> bool:
    """Whether ``stmt`` only steps a uniform local or parameter (``A += T;``, ``++t;``) that
    no other statement of ``compute`` reads."""
    if stmt.type != "expression_statement" or stmt.named_child_count != 1 or \
            g.mentions_thread(stmt):
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
        if flat and not g.split.allowed_use(n):
            context = n.parent if n.parent is not None else n
            raise Refused(f"`{text(context)}` uses the flat thread index `{text(n)}` other "
                          f"than split into a row (/ {g.tile}) and a column (% {g.tile}): a "
                          "thread numbering the rewrite does not model", n)


def decl_name(d: Node) -> str:
    inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
    return text(inner)


def loop_header(loop: Node) -> list[Node]:
    return [p for f in ("initializer", "condition", "update")
            if (p := loop.child_by_field_name(f)) is not None]
