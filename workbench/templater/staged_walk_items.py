"""ITEMS on a staged walk: outputs a thread, ``BLOCK_THREADS`` apart, each reading
every staged element once it is in a register (:mod:`.staged_walk`).

The thread's output index ``i = blockIdx.x * B + threadIdx.x`` (``B`` the block's size, in
any spelling) becomes ``ITEMS`` indices ``i[u] = blockIdx.x * ITEMS *
B + threadIdx.x + u * BLOCK_THREADS``; every local set from an item's state (the index, what
is read at it, the running sums) becomes an array of one element an item, set in one loop
over the items before the tile loop; in the walk the statements from the first that reads an
item's state to the end of their block run once an item (the staged element read before
them is shared: a loop over the tile keeps its one load of it); after the walk the
statements from the first that reads an item's state run once an item. The grid's
``ceil_div(X, BLOCK_THREADS)`` divides by ``BLOCK_THREADS * ITEMS``.

Legal only where (else refused with the line): one declaration before the tile loop reads
``blockIdx.x`` (and threadIdx.x), as ``blockIdx.x * B`` plus terms that do not read it, and
nothing else reads ``blockIdx.x`` or ``gridDim.x``; the item statements before the loop are
declarations of one name (a value or a pointer) or statements writing only item locals, and
nothing between them and the loop writes a name one before it reads (they move to the loop:
what they read after it, a constant declared between them, say, they read there as written); the tile's load and the loop's
bounds read no item's state; what the walk runs once an item writes only its own locals and
item locals; what follows the walk has no ``return`` once it reads an item's state, and
each of its statements from there reads one. No name is declared again where it is an
item's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    builtin,
    declared_name,
    factors,
    line,
    mentions,
    terms,
    text,
    walk,
)
from workbench.templater.inline_bind import declared, statements
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Rewriter
from workbench.templater.rules import scale_divisor
from workbench.templater.vector import Illegal

NAME = "ITEMS"
LOOP = f"#pragma unroll\n    for (int wb_u = 0; wb_u < {NAME}; ++wb_u) {{"


@dataclass(frozen=True)
class Items:
    """Where the items' state lives: the index's declaration and its ``blockIdx.x``, the
    items' names, the statements before the loop that set them, the runs of statements
    the walk and the end run once an item (first, last) and the grid rule."""

    index: Node
    block: Node
    names: tuple[str, ...]
    moved: tuple[Node, ...]
    runs: tuple[tuple[Node, Node], ...]
    grid: str


def target(n: Node) -> Node | None:
    """The variable or array an assignment or step writes (None: through a pointer)."""
    left = n.child_by_field_name("left" if n.type == "assignment_expression" else "argument")
    while left is not None and left.type in ("subscript_expression", "field_expression",
                                             "parenthesized_expression"):
        left = left.child_by_field_name("argument") if left.type != \
            "parenthesized_expression" else left.named_children[0]
    return left if left is not None and left.type == "identifier" else None


def _written_names(s: Node) -> set[str]:
    """The names ``s`` declares (a declaration) or assigns; the locals a compound statement
    declares inside it (``if (i < n) { float4 v = p[i]; me.x = v.x; }``'s ``v``) are its
    own, not state it leaves behind (:func:`_inner_locals`)."""
    own = _inner_locals(s)
    out = set() if own else set(declared(s))
    for n in walk(s):
        if n.type in ("assignment_expression", "update_expression"):
            t = target(n)
            if t is not None and text(t) not in own:
                out.add(text(t))
    return out


def _inner_locals(s: Node) -> set[str]:
    """The names a statement other than a declaration declares inside it (a block's)."""
    return set() if s.type == "declaration" else set(declared(s))


def find_items(plan: Plan, before: list[Node], header: list[Node], load: list[Node],
               steps: list[Node], after: list[Node], sums: list[str],
               reads: Callable[[Node], str]) -> Items:
    """The items of a staged walk (module doc); raises Illegal with the reason."""
    index, block = _index(plan, before, reads)
    per = {declared_name(index)[0], *sums}
    moved: list[Node] = []
    while True:
        moved = [s for s in before if mentions(s, per) or _written_names(s) & per]
        grown = per | {n for s in moved for n in _written_names(s)}
        if grown == per:
            break
        per = grown
    for s in moved:
        if s.type == "declaration":
            d = s.child_by_field_name("declarator")
            inner = d.child_by_field_name("declarator") if d is not None and \
                d.type == "init_declarator" else d
            if len(s.children_by_field_name("declarator")) != 1 or inner is None or \
                    inner.type not in ("identifier", "pointer_declarator"):
                raise Illegal(f"`{' '.join(text(s).split())[:60]}` declares an item's state "
                              "other than as one value or pointer", s)
        elif _written_names(s) - per:
            raise Illegal(f"`{' '.join(text(s).split())[:60]}` sets an item's state and "
                          "something else", s)
        elif _inner_locals(s) & per:
            raise Illegal(f"`{' '.join(text(s).split())[:60]}` declares "
                          f"{sorted(_inner_locals(s) & per)[0]}, an item's state, again", s)
    reads_moved: set[str] = set()  # the names the moved statements so far read
    for s in before:
        if s in moved:
            reads_moved |= {text(n) for n in walk(s) if n.type == "identifier"}
        elif _written_names(s) & reads_moved:
            raise Illegal(f"`{' '.join(text(s).split())[:60]}` writes a name an item's "
                          "state is set from, after it is set", s)
    for s in [*load, *header]:
        hit = next((n for n in walk(s) if n.type == "identifier" and text(n) in per), None)
        if hit is not None:
            raise Illegal(f"the tile's load or the loop's bounds read {text(hit)}, an item's "
                          "state", hit)
    runs = _runs(steps, per)
    if not runs:
        raise Illegal("the walk reads no item's state", steps[0] if steps else None)
    tail = _tail(after, per)
    grid = scale_divisor(plan.grid[0], "BLOCK_THREADS", f"BLOCK_THREADS * {NAME}") \
        if len(plan.grid) == 1 else None
    if grid is None:
        raise Illegal(f"the grid rule `{', '.join(plan.grid)}` does not divide by "
                      "BLOCK_THREADS", index)
    for first, last in runs:
        _check_run(first, last, per, stores=False)
    if tail:
        _check_run(*tail, per, stores=True)
    names = tuple(n for s in moved for n in _written_names(s) if n in per)
    return Items(index, block, tuple(dict.fromkeys(names)), tuple(moved),
                 (*runs, *([tail] if tail else [])), grid)


def _index(plan: Plan, before: list[Node], reads: Callable[[Node], str]) -> tuple[Node, Node]:
    found = [s for s in before if s.type == "declaration" and
             any(builtin(n, "blockIdx") == "x" for n in walk(s))]
    if len(found) != 1:
        raise Illegal("no declaration before the tile loop reads blockIdx.x (the output index)"
                      if not found else f"`{' '.join(text(found[1]).split())}` reads blockIdx.x "
                      "besides the output index: the items' blocks would be told apart "
                      "otherwise", found[1] if found else None)
    for n in walk(plan.body):
        if builtin(n, "gridDim") is not None or (builtin(n, "blockIdx") == "x" and
                                                 not found[0].start_byte <= n.start_byte <
                                                 found[0].end_byte):
            raise Illegal(f"`{text(n)}` is read outside the output index's declaration: the "
                          "items' blocks would be told apart otherwise", n)
    _, _, value = declared_name(found[0])
    offset = [t for _, t in terms(value) if any(builtin(n, "blockIdx") == "x"
                                                for n in walk(t))] if value is not None else []
    parts = factors(offset[0]) if len(offset) == 1 else []
    block = next((p for p in parts if builtin(p, "blockIdx") == "x"), None)
    size = next((p for p in parts if p is not block), None)
    if len(parts) != 2 or block is None or size is None or not (
            reads(size) == "BLOCK_THREADS" or builtin(size, "blockDim") == "x"):
        raise Illegal(f"`{' '.join(text(found[0]).split())}` is not blockIdx.x times the "
                      "block size plus terms without it", found[0])
    return found[0], block


def _runs(stmts: list[Node], per: set[str]) -> list[tuple[Node, Node]]:
    """The statements run once an item: from the first reading an item's state to the end
    of its block, inside a loop whose header and followers read none."""
    first = next((i for i, s in enumerate(stmts) if mentions(s, per)), None)
    if first is None:
        return []
    s = stmts[first]
    rest = stmts[first + 1:]
    if s.type == "for_statement" and not any(mentions(r, per) for r in rest):
        body = s.child_by_field_name("body")
        heads = [s.child_by_field_name(f) for f in ("initializer", "condition", "update")]
        if body is not None and not any(h is not None and mentions(h, per) for h in heads):
            inner = statements(body) if body.type == "compound_statement" else [body]
            return _runs(inner, per)
    return [(s, stmts[-1])]


def _tail(after: list[Node], per: set[str]) -> tuple[Node, Node] | None:
    first = next((i for i, s in enumerate(after) if mentions(s, per)), None)
    if first is None:
        return None
    for s in after[first:]:
        if not mentions(s, per) and s.type not in ("comment",) and \
                not s.type.startswith("preproc"):
            raise Illegal(f"`{' '.join(text(s).split())[:60]}` after the walk reads no item's "
                          "state: it would run once an item", s)
        hit = next((n for n in walk(s) if n.type == "return_statement"), None)
        if hit is not None:
            raise Illegal("a return after the walk would end every item of the thread", hit)
    return after[first], after[-1]


def _check_run(first: Node, last: Node, per: set[str], *, stores: bool) -> None:
    """Refuses a run that declares an item's name again or writes what is not its own or an
    item's (``stores``: memory at a place an item's state names too)."""
    parent = first.parent
    assert parent is not None
    run = [c for c in parent.children if first.start_byte <= c.start_byte <= last.start_byte]
    own = {n for s in run for n in declared(s)}
    again = sorted(own & per)
    if again:
        raise Illegal(f"{again[0]}, an item's state, is declared again where the items run",
                      first)
    for s in run:
        for n in walk(s):
            if n.type in ("assignment_expression", "update_expression"):
                t = target(n)
                left = n.child_by_field_name("left" if n.type == "assignment_expression"
                                             else "argument")
                mine = t is not None and (text(t) in own or text(t) in per)
                store = stores and left is not None and left.type != "identifier" and \
                    mentions(left, per)
                if not mine and not store:
                    raise Illegal(f"`{text(n)[:60]}` writes {text(t) if t else 'memory'} "
                                  "once an item", n)


def apply_items(plan: Plan, items: Items, loop: Node) -> None:
    """Rewrite the staged walk for ``ITEMS`` (module doc)."""
    per = set(items.names)
    spans = [*items.moved, *[c for first, last in items.runs for c in _run(first, last)]]
    skip = set()
    for s in items.moved:
        if s.type == "declaration":
            d = s.child_by_field_name("declarator")
            inner = d.child_by_field_name("declarator") if d is not None and \
                d.type == "init_declarator" else d
            skip.add(declarator_span(inner))
    for s in spans:
        for n in walk(s):
            if n.type == "identifier" and text(n) in per and \
                    (n.start_byte, n.end_byte) not in skip:
                plan.rw.replace(n, f"{text(n)}[wb_u]")
    plan.rw.replace(items.block, f"(blockIdx.x * {NAME})")
    for s in items.moved:
        plan.rw.replace(s, _array(s) if s.type == "declaration" else "")

    def init(rw: Rewriter) -> str:
        sets = []
        for s in items.moved:
            if s.type != "declaration":
                sets.append(" ".join(rw.render(s.start_byte, s.end_byte).split()))
                continue
            name, _, value = declared_name(s)
            if value is None:
                continue
            more = " + wb_u * BLOCK_THREADS" if s == items.index else ""
            sets.append(f"{name}[wb_u] = {rw.text(value)}{more};")
        return f"{LOOP}\n      " + "\n      ".join(sets) + "\n    }\n  "
    plan.rw.replace_span(loop.start_byte, loop.start_byte, make=init)
    for first, last in items.runs:
        plan.rw.insert(first.start_byte, f"\n{LOOP}\n")
        plan.rw.insert(last.end_byte, "\n    }")
    plan.grid = [items.grid]
    plan.add_param(NAME, {"kind": "choice", "values": [1, 2, 4], "default": 1,
                          "description": "outputs a thread, BLOCK_THREADS apart, each reading "
                                         "every staged element (1: as written)"},
                   f"{line(items.index)}: {' '.join(text(items.index).split())}")
    plan.note(NAME, True, f"{', '.join(items.names)} kept once an item; the walk shares each "
              "staged element among a thread's items", items.index)


def _run(first: Node, last: Node) -> list[Node]:
    parent = first.parent
    assert parent is not None
    return [c for c in parent.children if first.start_byte <= c.start_byte <= last.start_byte]


def declarator_span(d: Node | None) -> tuple[int, int]:
    while d is not None and d.type == "pointer_declarator":
        d = d.child_by_field_name("declarator")
    return (d.start_byte, d.end_byte) if d is not None else (-1, -1)


def _array(s: Node) -> str:
    """``const float4 me = ..;`` -> ``float4 me[ITEMS];`` (a pointer keeps the
    qualifiers of what it points at)."""
    d = s.child_by_field_name("declarator")
    inner = d.child_by_field_name("declarator") if d is not None and \
        d.type == "init_declarator" else d
    assert inner is not None
    kind = text(s.child_by_field_name("type"))
    if inner.type == "identifier":
        return f"{kind} {text(inner)}[{NAME}];"
    quals = " ".join(text(c) for c in s.children if c.type == "type_qualifier")
    start, end = declarator_span(inner)
    raw = (inner.text or b"").decode()
    at, to = start - inner.start_byte, end - inner.start_byte
    return f"{quals} {kind} {raw[:at]}{raw[at:to]}[{NAME}]{raw[to:]};".strip()
