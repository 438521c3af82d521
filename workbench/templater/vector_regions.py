"""The regions the vector family (:mod:`.vector`) rewrites: a unit-stride per-thread loop's
body, or a one-element-per-thread region at the top of the entry's body, ``T i =
blockIdx.x * B + threadIdx.x;`` then its guard, ``if (i < n) { .. }`` as the last statement
or the exit ``if (i >= n) return;`` with the element's statements after it (the exit is
the body's: those statements run exactly where ``if (i < n) { .. }`` runs them)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    JUMPS,
    binary,
    block_offset,
    builtin,
    declared_name,
    strip,
    terms,
    text,
    walk,
)
from workbench.templater.item_state import assigned_names
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Rewriter


@dataclass(frozen=True)
class Region:
    """A unit-stride per-thread region: its variable, body, bound and how it advances."""

    var: str
    var_type: str
    body: Node
    bound: Node
    start: str  # rendered start (element index of the thread's first item)
    step: str  # rendered distance between a thread's items (elements, before VEC)
    loop: bool  # a loop (True) or one guarded item per thread (False)
    node: Node  # what the rewrite replaces (from its start; an exit region: the exit)
    guards: tuple[Node, ...] = ()  # a loop's invariant conjuncts beside var < bound (.lane_bound)
    exit: bool = False  # ``if (var >= bound) return;`` is ``node``; ``body`` the entry's body
    # a loop whose start adds an offset to the thread's place (``begin + threadIdx.x``): the
    # place (rendered; scaled by VEC, the offset not) and the offset's terms (aligned)
    place: str | None = None
    offset: tuple[Node, ...] = ()

    def statements(self) -> list[Node]:
        """The element's statements: the body, or an exit region's statements after it."""
        if not self.exit:
            return [self.body]
        return [c for c in self.body.named_children if c.start_byte >= self.node.end_byte]

    @property
    def end_byte(self) -> int:
        """Where the rewritten span ends: the node's end, an exit region's last statement's."""
        return self.statements()[-1].end_byte if self.exit else self.node.end_byte

    @property
    def at(self) -> Node:
        """The node a note about the element's body names (its line)."""
        return self.node if self.exit else self.body

    def holds(self, n: Node) -> bool:
        """Whether ``n`` is in the element's statements."""
        first = self.node.end_byte if self.exit else self.body.start_byte
        return first <= n.start_byte < (self.end_byte if self.exit else self.body.end_byte)

    def walk(self) -> list[Node]:
        """Every node of the element's statements."""
        return [n for s in self.statements() for n in walk(s)]

    def text(self, rw: Rewriter) -> str:
        """The element's body as a compound statement, as the file renders it."""
        if not self.exit:
            return rw.text(self.body)
        return "{" + rw.render(self.node.end_byte, self.end_byte) + "\n}"


@dataclass(frozen=True)
class FlatRegion:
    """A one-element-per-thread region at the top of the entry's body: ``T i = blockIdx.x * B
    + threadIdx.x;`` (``decl``, B its ``literal``), then the guard, either ``if (i < n)
    {..}`` as the last statement or the exit ``if (i >= n) return;`` (``exit``) with the
    element's statements after it (``bound``: n)."""

    decl: Node
    literal: Node
    guard: Node
    bound: Node
    exit: bool

    def statements(self, plan: Plan) -> list[Node]:
        """The element's statements: the if's consequence, or those after the exit."""
        if not self.exit:
            body = self.guard.child_by_field_name("consequence")
            return [body] if body is not None else []
        return [c for c in plan.body.named_children if c.start_byte >= self.guard.end_byte]


def exit_bound(statement: Node, var: str) -> Node | None:
    """B where ``statement`` is ``if (var >= B) return;`` (or ``B <= var``, or ``{ return;
    }``), no else: every thread at or past B leaves, so what follows runs exactly where
    ``if (var < B) { .. }`` would run it, the exit being the body's. None otherwise."""
    from workbench.templater.inline_exits import _condition  # it reads this module

    cond = _condition(statement)
    parts = binary(cond) if cond is not None else None
    if parts is None:
        return None
    left, op, right = parts
    if op == "<=":
        left, right, op = right, left, ">="
    if op != ">=" or strip(left).type != "identifier" or text(strip(left)) != var:
        return None
    return right


def x_indices(plan: Plan, stmts: list[Node], *,
              block_dim: bool = False) -> Iterator[tuple[int, Node, str, Node]]:
    """Each declaration of ``stmts`` (the body's top level) of a thread's x index,
    ``T v = blockIdx.x * B + threadIdx.x`` in either order: its position, the declaration,
    the name and the block's term. ``block_dim``: B may also be ``blockDim.x`` (a 1-D
    block's launch size, the same number as a literal block would be)."""
    for k, decl in enumerate(stmts):
        if decl.type != "declaration":
            continue
        var, _d, value = declared_name(decl)
        if value is None:
            continue
        parts = terms(value)
        offs = [t for _s, t in parts if block_offset(t, "x") is not None or
                (block_dim and _block_dim_offset(t))]
        if len(parts) == 2 and len(offs) == 1 and any(plan.facts.is_thread(t, "x")
                                                      for _s, t in parts):
            yield k, decl, var, offs[0]


def _block_dim_offset(node: Node) -> bool:
    """``blockIdx.x * blockDim.x`` in either order (a cast on either factor)."""
    parts = binary(node)
    return parts is not None and parts[1] == "*" and (
        (builtin(parts[0], "blockIdx") == "x" and builtin(parts[2], "blockDim") == "x") or
        (builtin(parts[2], "blockIdx") == "x" and builtin(parts[0], "blockDim") == "x"))


def flat_region(plan: Plan, *, block_dim: bool = False) -> FlatRegion | None:
    """The :class:`FlatRegion` at the top of the body, None where there is none. With
    ``block_dim`` (a 1-D block) its block term may be ``blockIdx.x * blockDim.x``: the region
    then starts its items at ``blockIdx.x * B`` with B the block rule
    (:func:`.vector.vector_flat`), which is ``blockDim.x`` at every launch."""
    stmts = [c for c in plan.body.named_children if c.type != "comment"]
    for k, decl, var, offset in x_indices(plan, stmts, block_dim=block_dim):
        lit = binary(offset)
        assert lit is not None
        literal_node = strip(lit[2] if builtin(lit[0], "blockIdx") else lit[0])
        for s in stmts[k + 1:-1]:  # the exit form: at least one statement after the exit
            bound = exit_bound(s, var)
            if bound is not None:
                return FlatRegion(decl, literal_node, s, bound, True)
        last = stmts[-1]
        cond = last.child_by_field_name("condition")
        if last.type != "if_statement" or last.child_by_field_name("alternative") is not None \
                or cond is None or k == len(stmts) - 1:
            return None
        b = binary(cond.named_children[0] if cond.named_children else cond)
        if b is None or b[1] != "<" or text(strip(b[0])) != var:
            return None
        return FlatRegion(decl, literal_node, last, b[2], False)
    return None


def thread_state_before(plan: Plan, flat: FlatRegion) -> tuple[str, Node] | None:
    """Why a one-element region cannot take several elements a thread: its index's
    declaration moves into the region (items and lanes each get their own), so a statement
    before the guard that reads the index would lose it, a local set before the guard
    from the thread's place along x (``threadIdx``, ``blockIdx.x``, or a local set from them:
    a sum over a tile with ``self = pts[t + 128 * blockIdx.x]``) holds the thread's one
    element where each lane needs its own (``blockIdx.y`` is every lane's), and an exit
    before the guard on the thread's place would leave for every lane and item. None when
    none of these."""
    decl, guard = flat.decl, flat.guard
    var = declared_name(decl)[0]
    stmts = [c for c in plan.body.named_children if c.type != "comment"]
    at = next(k for k, c in enumerate(stmts) if c.start_byte == guard.start_byte)
    placed: set[str] = set()  # locals whose value depends on the thread's place
    for s in stmts[:at]:
        names = {text(n) for n in walk(s) if n.type == "identifier"}
        if s.start_byte > decl.start_byte and var in names:
            return (f"`{text(s).splitlines()[0][:60]}` reads {var} before its guard: the "
                    f"index becomes each item's own inside the region", s)
        here = s.start_byte != decl.start_byte and (names & placed or any(
            builtin(n, "threadIdx") or builtin(n, "blockIdx") == "x" for n in walk(s)))
        if here and any(n.type in JUMPS for n in walk(s)):
            return (f"`{text(s).splitlines()[0][:60]}` leaves before the guard on the "
                    "thread's place: every vector lane and item would leave with it", s)
        if here:
            placed |= assigned_names(s)
    for n in (n for b in flat.statements(plan) for n in walk(b)):
        if n.type == "identifier" and text(n) in placed:
            return (f"the region reads {text(n)}, set before it from the thread's place: "
                    "each vector lane and item would read the thread's one value", n)
    return None
