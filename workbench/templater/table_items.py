"""ITEMS_X: outputs a thread along a row that a per-block table serves (issue 28, set 14's
dft64_batched: the expert's KT).

The family: a block builds a table in shared memory once (:mod:`.block_table`: every entry
written under ``i < E`` by the flat thread index), a barrier, then each x thread computes
one output of a row as long as the table (the bin ``k = threadIdx.x`` of a 64-point DFT),
the y threads one row each. The x size stays as the block lift found it (the threads number
the row). ``ITEMS_X`` gives a thread ``ITEMS_X`` of the row's outputs, ``X / ITEMS_X``
apart, in a block of ``X / ITEMS_X`` x threads: the fill becomes a block-stride loop over
the table (each entry written once, the value of its index alone, at any block), and after
the barrier every statement that reads the output's place (``threadIdx.x``, a local copy of
it, a local set from those) runs once an item in an unrolled loop where it was written,
while the statements that do not (the row's pointers, a load of the input inside the sum)
run once a thread: inside a loop or an ``if`` the items share, the items' chains
interleave and each input load serves every item. A local an item sets and reads past its
run of statements becomes an array of one element an item. ``ITEMS_X = 1`` is the kernel as
written.

Legal only where the analysis shows (else a note with the line): a 2-D block whose x size is
the literal ``X`` of a table's extent; one barrier, at the top level of the body; before it
only shared declarations, locals set once from the thread and block builtins and literals,
and the tables' guarded fills, the fill's index read nowhere else; no warp intrinsic,
atomic or ``volatile``; after it, the item statements hold no ``return`` and no ``break`` or
``continue`` out of themselves, write memory only at a place that reads the item, and write
no shared memory; the statements the items share write no memory and assign no item's
local; a local copy of ``threadIdx.x`` read after the barrier is the copy itself (``lane =
threadIdx.x``), not an expression of it.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import LOOPS, builtin, declared_name, is_barrier, text, walk
from workbench.templater.block_table import GuardedTable, guarded_tables
from workbench.templater.ilp_calls import callee_name
from workbench.templater.item_state import MAX_FULL_UNROLL, trip_count
from workbench.templater.plan import Plan
from workbench.templater.purity import device_purity, why_not_pure
from workbench.templater.regtile import Refused, fresh_names
from workbench.templater.rules import literal
from workbench.templater.table_stage import apply_stage, staged_row

NAME = "ITEMS_X"
IT = "wb_m"
FILL = "wb_f"
_TALK = ("__shfl", "__syncwarp", "__ballot", "__any", "__all", "__activemask", "__match",
         "__reduce_", "atomic", "__syncthreads_")


def apply_table_items(plan: Plan) -> bool:
    """Apply where the analysis proves it legal; True when ITEMS_X lifted."""
    x = literal(plan.block[0]) if len(plan.block) == 2 else None
    tables = {t.name: t for t in guarded_tables(plan).values()}
    if x is None or not any(t.extent == x for t in tables.values()):
        return False
    try:
        _lift(plan, x, tables)
    except Refused as exc:
        plan.note(NAME, False, exc.reason, exc.node)
        return False
    return True


def _lift(plan: Plan, x: int, tables: dict[str, GuardedTable]) -> None:
    name = fresh_names(plan, [NAME])[NAME]
    tx = f"({x} / {name})"
    stmts = [s for s in plan.body.named_children if s.type != "comment"]
    barriers = [i for i, s in enumerate(stmts) if is_barrier(s)]
    calls = [n for n in walk(plan.body) if n.type == "call_expression"]
    if len(barriers) != 1 or sum(text(c.child_by_field_name("function")) == "__syncthreads"
                                 for c in calls) != 1:
        raise Refused("the block does not pass exactly one barrier, at the top level of the "
                      "body", plan.body)
    for c in calls:
        if text(c.child_by_field_name("function")).startswith(_TALK):
            raise Refused(f"`{text(c)[:50]}`: threads talk outside the barrier", c)
    if any(text(n) == "volatile" for n in walk(plan.body)):
        raise Refused("a volatile access: warp-synchronous memory", plan.body)
    prefix, tail = stmts[:barriers[0]], stmts[barriers[0] + 1:]
    derived, fills, dropped = _prefix(plan, prefix, tables)
    aliases = {n for n, v in derived.items() if builtin(v, "threadIdx") == "x"}
    for stmt in tail:
        for n in walk(stmt):
            if builtin(n, "blockDim") == "x" or (
                    n.type == "identifier" and text(n) in derived and text(n) not in aliases and
                    _reads_x(derived[text(n)], derived)):
                raise Refused(f"`{text(n)}` after the barrier reads the block's x size or "
                              "the thread's x index other than as a copy of threadIdx.x", n)
    items = _items(plan, tail, aliases)
    local = {declared_name(n)[0] for stmt in tail for n in walk(stmt) if n.type == "declaration"}
    if items - local:
        raise Refused(f"`{sorted(items - local)[0]}` takes an item's value but is declared "
                      "before the barrier or is an argument: the items would share it",
                      plan.body)
    start = stmts[barriers[0]].end_byte
    _Tail(plan, items, aliases, tx, dry=True, start=start).block(tail)  # refuses, edits none
    y_size = literal(plan.block[1])
    if y_size is None and plan.block[1] in plan.params:
        y_size = plan.params[plan.block[1]].spec.get("default")
    try:
        staged = staged_row(plan, tail, int(y_size or 0))
    except Refused as exc:
        plan.note("STAGE", False, exc.reason, exc.node)
        staged = None
    renders = _Tail(plan, items, aliases, tx, dry=False, start=start)
    renders.block(tail)
    for fill, index in fills:
        _fill(plan, fill, index, tx)
    for decl in dropped:
        plan.rw.replace(decl, "")
    plan.block[0] = f"{x} / {name}"
    plan.launch_bounds = f"({x} / {name}) * {plan.block[1]}"
    plan.add_param(name, {"kind": "choice", "values": [v for v in (1, 2, 4, 8) if x % v == 0],
                          "default": 1,
                          "description": f"outputs of the row a thread, {x} / {name} apart, "
                                         f"in a block of {x} / {name} x threads (as written: "
                                         "1)"},
                   f"{stmts[barriers[0]].start_point.row + 1}: __syncthreads()")
    plan.note(name, True, f"the table fill is a block-stride loop; after the barrier "
              f"{renders.runs} run(s) of statements per item, the rest shared; arrays "
              f"{sorted(renders.arrays) or 'none'}", stmts[barriers[0]])
    if staged is not None:
        apply_stage(plan, staged, stmts[barriers[0]], tx, plan.block[1])
    if renders.loops:
        unroll_shared_loop(plan, renders.loops[-1])


def unroll_shared_loop(plan: Plan, loop: Node) -> None:
    """UNROLL: ``#pragma unroll (N)`` on the outermost shared loop the items interleave in
    (0: the compiler's choice, as written; any value computes the same)."""
    prev = loop.prev_sibling
    if prev is not None and prev.type in ("preproc_call", "comment") and \
            text(prev).startswith("#pragma") and "unroll" in text(prev):
        plan.note("UNROLL", False, "the loop has its own #pragma unroll", loop)
        return
    name = fresh_names(plan, ["UNROLL"])["UNROLL"]
    if name in plan.params:
        return
    plan.helper(f"constexpr int wb_unroll_x = {name};  // #pragma unroll reads a constant, "
                "not a macro")
    plan.rw.insert(loop.start_byte, f"\n#if {name} > 0\n#pragma unroll (wb_unroll_x)\n#endif\n")
    trips = trip_count(loop)
    values = [0, 1, 2, 4, 8] + ([trips] if trips is not None and
                                8 < trips <= MAX_FULL_UNROLL else [])
    plan.add_param(name, {"kind": "choice", "values": values, "default": 0,
                          "description": "unroll factor of the loop the items share (0: the "
                                         "compiler's choice, as written)"},
                   f"{loop.start_point.row + 1}: {text(loop).splitlines()[0][:60]}")
    plan.note(name, True, "unroll factor of the loop the items share (any value computes "
              "the same)", loop)


def _prefix(plan: Plan, prefix: list[Node], tables: dict[str, GuardedTable]
            ) -> tuple[dict[str, Node], list[tuple[Node, str]], list[Node]]:
    """(the locals set before the barrier, the fills with their index text, the
    declarations of the fills' indices, which the fills' loops replace)."""
    fills: list[tuple[Node, str]] = []
    derived: dict[str, Node] = {}
    for stmt in prefix:
        if stmt.type == "declaration" and any(text(c) == "__shared__" for c in stmt.children):
            continue
        if stmt.type == "declaration":
            name, _d, value = declared_name(stmt)
            d = plan.facts.defs.get(name)
            if value is None or d is None or d.assigned or not _builtin_only(value, derived):
                raise Refused(f"`{text(stmt)[:60]}` before the barrier is not a local set "
                              "once from the thread indices and blockDim", stmt)
            derived[name] = value
            continue
        index = _fill_index(stmt, tables)
        if index is None:
            raise Refused(f"`{text(stmt)[:60]}` before the barrier is neither a declaration "
                          "nor a table's guarded fill", stmt)
        fills.append((stmt, index))
    dropped = []
    for _fill_stmt, index in fills:
        if index not in derived:
            continue
        outside = [n for n in walk(plan.body) if n.type == "identifier" and text(n) == index
                   and not _declares(n) and not any(
                       f.start_byte <= n.start_byte < f.end_byte for f, _i in fills)]
        if outside:
            raise Refused(f"the fill's index `{index}` is read past the fill", outside[0])
        dropped += [d for d in prefix if d.type == "declaration" and
                    declared_name(d)[0] == index and d not in dropped]
    return derived, fills, dropped


def _reads_x(value: Node, derived: dict[str, Node]) -> bool:
    return any(builtin(n, "threadIdx") == "x" or builtin(n, "blockDim") == "x" or
               (n.type == "identifier" and text(n) in derived and
                _reads_x(derived[text(n)], derived)) for n in walk(value))


def _declares(n: Node) -> bool:
    p = n.parent
    return p is not None and p.type in ("init_declarator", "declaration")


def _builtin_only(value: Node, derived: dict[str, Node]) -> bool:
    for n in walk(value):
        if n.type == "field_expression" and builtin(n, "blockIdx") is not None:
            return False  # the row's locals belong after the barrier, where items share them
        if n.type == "identifier" and text(n) not in derived and \
                text(n) not in ("threadIdx", "blockDim"):
            return False
        if n.type in ("call_expression", "subscript_expression", "assignment_expression",
                      "update_expression"):
            return False
    return True


def _fill_index(stmt: Node, tables: dict[str, GuardedTable]) -> str | None:
    """The index text of a guarded fill ``if (i < E) ..`` of the tables, else None."""
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
        return None
    writes = [n for n in walk(stmt) if n.type == "subscript_expression" and
              text(n.child_by_field_name("argument")) in tables]
    if not writes:
        return None
    cond = stmt.child_by_field_name("condition")
    inner = cond.named_children[0] if cond is not None and cond.named_child_count == 1 \
        else None
    left = inner.child_by_field_name("left") if inner is not None else None
    right = inner.child_by_field_name("right") if inner is not None else None
    op = text(inner.child_by_field_name("operator")) if inner is not None and \
        inner.type == "binary_expression" else ""
    if op == "<" and left is not None:
        return text(left)
    if op == ">" and right is not None:
        return text(right)
    return None


def _fill(plan: Plan, fill: Node, index: str, tx: str) -> None:
    """``if (i < E) BODY`` as a loop over the table's entries the block's threads stride."""
    cond = fill.child_by_field_name("condition")
    body = fill.child_by_field_name("consequence")
    assert cond is not None and body is not None
    for n in walk(fill):
        if text(n) == index and n.type in ("identifier", "field_expression"):
            plan.rw.replace(n, FILL)
    rows = plan.block[1]
    plan.rw.replace_span(fill.start_byte, fill.end_byte, make=lambda rw: (
        f"for (int {FILL} = threadIdx.y * {tx} + threadIdx.x; {rw.text(cond)[1:-1].strip()}; "
        f"{FILL} += {tx} * {rows}) {rw.text(body)}"))


def _items(plan: Plan, tail: list[Node], aliases: set[str]) -> set[str]:
    """The locals after the barrier whose value depends on the item (fixpoint)."""
    items: set[str] = set()
    while True:
        grown = set(items)
        for stmt in tail:
            for n in walk(stmt):
                target, value = _assigned(plan, n)
                if target is None:
                    continue  # memory, not a local's state
                if (value is not None and _mentions(value, grown, aliases)) or \
                        _under_item_control(n, stmt, grown, aliases):
                    grown.add(target)
        if grown == items:
            return items
        items = grown


def _assigned(plan: Plan, n: Node) -> tuple[str | None, Node | None]:
    """(the local ``n`` declares or assigns, its value): a name, or the local value under a
    target's fields and elements (``acc.x += ..``); None for memory (a pointer's place, an
    argument's, a shared array's)."""
    if n.type == "declaration":
        name, _d, value = declared_name(n)
        return (name or None), value
    if n.type in ("assignment_expression", "update_expression"):
        t = n.child_by_field_name("left") or n.child_by_field_name("argument")
        if t is not None and t.type == "identifier":
            return text(t), n.child_by_field_name("right")
        root = _root(t) if t is not None else None
        d = plan.facts.defs.get(text(root)) if root is not None else None
        if d is not None and not d.is_pointer and not d.is_shared:
            return d.name, n.child_by_field_name("right")
    return None, None


def _root(target: Node) -> Node:
    """The name under a target's fields and elements (``acc.x``, ``v[2]`` -> ``acc``,
    ``v``)."""
    while target.type in ("field_expression", "subscript_expression"):
        inner = target.child_by_field_name("argument")
        if inner is None:
            break
        target = inner
    return target


def _under_item_control(n: Node, top: Node, items: set[str], aliases: set[str]) -> bool:
    up = n.parent
    while up is not None and up != top.parent:
        if up.type in ("if_statement", *LOOPS):
            heads = [up.child_by_field_name(f) for f in ("condition", "initializer", "update")]
            if any(h is not None and _mentions(h, items, aliases) for h in heads):
                return True
        up = up.parent
    return False


def _mentions(node: Node, items: set[str], aliases: set[str]) -> bool:
    return any((n.type == "identifier" and (text(n) in items or text(n) in aliases)) or
               (n.type == "field_expression" and builtin(n, "threadIdx") == "x")
               for n in walk(node))


class _Tail:
    """Renders the statements after the barrier: item runs in unrolled loops over items."""

    def __init__(self, plan: Plan, items: set[str], aliases: set[str], tx: str,
                 dry: bool, start: int) -> None:
        self.plan, self.items, self.aliases, self.tx = plan, items, aliases, tx
        self.start = start  # the first byte after the barrier
        self.dry = dry  # check every statement, edit nothing
        self.name = tx.split("/")[1].strip(" )")
        self.arrays: set[str] = set()
        self.runs = 0
        self.loops: list[Node] = []  # shared for loops holding item runs, innermost first

    def block(self, stmts: list[Node]) -> None:
        run: list[Node] = []
        for stmt in stmts:
            if _mentions(stmt, self.items, self.aliases):
                if not self._can_share(stmt):
                    run.append(stmt)
                    continue
                self._flush(run)
                run = []
                body = stmt.child_by_field_name("body") or \
                    stmt.child_by_field_name("consequence")
                assert body is not None
                before = self.runs
                self.block([s for s in body.named_children if s.type != "comment"])
                if stmt.type == "for_statement" and self.runs > before:
                    self.loops.append(stmt)
                continue
            self._flush(run)
            run = []
            self._check_shared(stmt)
        self._flush(run)

    def _can_share(self, stmt: Node) -> bool:
        """A loop or ``if`` (no ``else``) whose header reads no item, its body a block: the
        items share it, its statements rendered in turn."""
        if stmt.type not in (*LOOPS, "if_statement"):
            return False
        heads = [stmt.child_by_field_name(f) for f in ("condition", "initializer", "update")]
        body = stmt.child_by_field_name("body") or stmt.child_by_field_name("consequence")
        return not any(h is not None and _mentions(h, self.items, self.aliases)
                       for h in heads) and body is not None and \
            body.type == "compound_statement" and \
            stmt.child_by_field_name("alternative") is None

    def _check_shared(self, stmt: Node) -> None:
        purity = device_purity(self.plan.source)
        for n in walk(stmt):
            callee = callee_name(n) if n.type == "call_expression" else None
            if callee is not None and purity.get(callee) is not None:
                raise Refused(f"{why_not_pure(self.plan.source, callee)}: a statement the "
                              "items share would run it once a thread", n)
            target = n.child_by_field_name("left") or n.child_by_field_name("argument") \
                if n.type in ("assignment_expression", "update_expression") else None
            d = self.plan.facts.defs.get(text(_root(target))) if target is not None else None
            if target is not None and target.type != "identifier" and \
                    (d is None or d.is_pointer or d.is_shared):
                raise Refused(f"`{text(n)[:60]}` writes memory once a thread, where the "
                              "threads as written wrote it once each", n)

    def _flush(self, run: list[Node]) -> None:
        if not run:
            return
        self.runs += 1
        spans = (run[0].start_byte, run[-1].end_byte)
        for stmt in run:
            self._check_item(stmt)
        declared = {}
        for stmt in run:
            if stmt.type == "declaration":
                name, _d, _v = declared_name(stmt)
                if name:
                    declared[name] = stmt
        arrays = {n for n, decl in declared.items() if n in self.items and
                  any(u.type == "identifier" and text(u) == n and u.start_byte >= self.start
                      and not spans[0] <= u.start_byte < spans[1]
                      for u in walk(self.plan.body))}
        hoisted = []
        for local in sorted(arrays):
            hoisted.append(self._array_decl(declared[local], local))
        self.arrays |= arrays
        if self.dry:
            return
        for n in walk(self.plan.body):  # the tail's uses only: a name may recur before
            if n.type == "identifier" and text(n) in arrays and not _declares(n) and \
                    n.start_byte >= self.start:
                self.plan.rw.replace(n, f"{text(n)}[{IT}]")
        for stmt in run:
            for n in walk(stmt):
                if n.type == "field_expression" and builtin(n, "threadIdx") == "x":
                    self.plan.rw.replace(n, f"(threadIdx.x + {IT} * {self.tx})")
                elif n.type == "identifier" and text(n) in self.aliases and not _declares(n):
                    self.plan.rw.replace(n, f"({text(n)} + {IT} * {self.tx})")
        ind = " " * run[0].start_point.column
        head = "".join(f"{h}\n{ind}" for h in hoisted)
        self.plan.rw.insert(spans[0], f"{head}#pragma unroll\n{ind}for (int {IT} = 0; {IT} < "
                                      f"{self.name}; ++{IT}) {{\n{ind}  ")
        self.plan.rw.insert(spans[1], f"\n{ind}}}")

    def _array_decl(self, decl: Node, name: str) -> str:
        """The hoisted ``T name[ITEMS_X];`` of an item's local; its declaration becomes the
        item's element's assignment (or nothing)."""
        _name, d, value = declared_name(decl)
        inner = d.child_by_field_name("declarator") if d is not None and \
            d.type == "init_declarator" else d
        if inner is None or inner.type != "identifier":
            raise Refused(f"`{text(decl)[:60]}`: an item's local that is not a plain value",
                          decl)
        kind = " ".join(text(c) for c in decl.children
                        if c.type not in ("init_declarator", "identifier", ";") and
                        text(c) != "const")
        if self.dry:
            pass
        elif value is None:
            self.plan.rw.replace(decl, "")
        else:
            self.plan.rw.replace_span(decl.start_byte, decl.end_byte, make=lambda rw: (
                f"{name}[{IT}] = {rw.text(value)};"))
        return f"{kind} {name}[{self.name}];"

    def _check_item(self, stmt: Node) -> None:
        for n in walk(stmt):
            if n.type == "return_statement":
                raise Refused("`return` in a statement that reads the item", n)
            if n.type in ("break_statement", "continue_statement", "goto_statement"):
                up = n.parent
                while up is not None and up.type not in (*LOOPS, "switch_statement") and \
                        up != stmt:
                    up = up.parent
                if n.type == "goto_statement" or up is None or \
                        up.type not in (*LOOPS, "switch_statement"):
                    raise Refused(f"`{text(n)}` leaves a statement the items run in turn", n)
            if n.type in ("assignment_expression", "update_expression"):
                target = n.child_by_field_name("left") or n.child_by_field_name("argument")
                if target is None:
                    continue
                root = _root(target)
                d = self.plan.facts.defs.get(text(root))
                if target.type == "identifier" or (
                        d is not None and not d.is_pointer and not d.is_shared and
                        text(root) in self.items):
                    continue  # a local (an item's: checked declared after the barrier)
                if d is not None and d.is_shared:
                    raise Refused(f"`{text(n)[:60]}` writes shared memory after the barrier",
                                  n)
                if not _mentions(target, self.items, self.aliases):
                    raise Refused(f"`{text(n)[:60]}` writes memory at a place shared by all "
                                  "items", n)
