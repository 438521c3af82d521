"""A cooperative tile store that only some threads run (:mod:`.regtile`'s family).

A block wider than a tile along one index often copies that tile with the threads that fit:
a block of 32 x 16 threads stores a 16 x 16 slice of A with ``if (threadIdx.x < 16)
As[ty][tx] = ...;``. The guard is read as bounds on the thread indices, a conjunction of
``t < C`` (``t <= C``, ``C > t``) with ``t`` a thread index (or an alias of one) and ``C`` a
constant: along a bounded index the store covers ``min(C, threads along it)`` positions,
which the analysis checks against the tile's extent there (each element stored once, as
for an unguarded store). The rewrite stores every position of the tile with a loop of all
threads over the tile (:mod:`.regtile_emit`), so the guard, which only kept the threads
outside the tile from storing, is dropped with it: inside that loop every position is one
the guard let through. A guard of any other form (it reads data, a block index, or bounds a
thread from below) is refused naming it: which threads store is then not modelled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import binary, chain, text
from workbench.templater.regtile import Gemm, Refused, _statements
from workbench.templater.regtile_split import const_value


@dataclass(frozen=True)
class Guard:
    """The if statement guarding one store, the store it guards and the bound of each
    thread index it reads (``{"x": 16}``: only threads with x < 16 store)."""

    node: Node
    store: Node
    limits: dict[str, int]
    condition: str  # as written, one line

    def covered(self, dim: str, threads: int) -> int:
        """Positions stored along thread index ``dim`` by ``threads`` threads."""
        return min(threads, self.limits.get(dim, threads))


def guarded_store(g: Gemm, stmt: Node, is_store: Callable[[Node], bool]) -> Guard | None:
    """``stmt`` as ``if (<bounds on thread indices>) <store>`` with no else; None when it is
    not an if without an else around one statement for which ``is_store`` holds. Refused
    when it is, and its condition is not bounds on thread indices."""
    cons = _consequence(stmt)
    if cons is None or not is_store(cons):
        return None
    cond = stmt.child_by_field_name("condition")
    assert cond is not None  # an if statement has one
    limits: dict[str, int] = {}
    expr = cond.named_children[-1] if cond.type == "condition_clause" else cond
    for leaf in chain(expr, "&&"):
        bound = _thread_bound(g, leaf)
        if bound is None or bound[0] in limits:
            raise Refused(f"the guard `{' '.join(text(expr).split())[:60]}` of a tile store "
                          "is not bounds on thread indices (`threadIdx.x < C`, each index "
                          f"once): `{' '.join(text(leaf).split())[:40]}` says which threads "
                          "store in a way the rewrite does not model", stmt)
        limits[bound[0]] = bound[1]
    return Guard(stmt, cons, limits, " ".join(text(expr).split())[:60])


def _consequence(stmt: Node) -> Node | None:
    """The one statement an if without an else runs (None: not such an if)."""
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
        return None
    cons = stmt.child_by_field_name("consequence")
    if cons is not None and cons.type == "compound_statement":
        inner = _statements(cons)
        return inner[0] if len(inner) == 1 else None
    return cons


def _thread_bound(g: Gemm, node: Node) -> tuple[str, int] | None:
    """(thread index, count of threads let through) of ``t < C``, ``t <= C`` or ``C > t``."""
    parts = binary(node)
    if not parts:
        return None
    left, op, right = parts
    if op in (">", ">="):
        left, right, op = right, left, "<" if op == ">" else "<="
    if op not in ("<", "<="):
        return None
    dim, value = g.thread_dim(left), const_value(right)
    if dim is None or value is None:
        return None
    return dim, value + (op == "<=")
