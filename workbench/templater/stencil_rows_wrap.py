"""Wrapped rows and columns in the rows family's register window (OUT_Y over a periodic field).

A periodic stencil reads its neighbour rows around the field: after
:mod:`.periodic_index` the row above is ``((r - 1) >= 0 ? (r - 1) : (r - 1) + H)``, the row
below ``((r + 1) >= H ? (r + 1) - H : (r + 1))`` (a hand-written torus spells them the
same way). Such a select is no polynomial, so the window could not key its slot. Read by
roles here: a select ``X >= 0 ? X : X + N`` (``lo``: ``t`` moved up a period where it is
negative), ``X >= N ? X - N : X`` (``hi``: moved down where it reaches ``N``) or the
``hi`` one whose other side is the ``lo`` one of the same ``X`` and ``N`` (``both``), each
compared as polynomials, ``N`` one name. As a polynomial it is ``t + w`` with ``w`` an atom
naming the select (its kind, ``N`` and ``t``): the row part of an index is then ``(y + d
+ w) * S`` and the column part ``x + e + w'``, so the window keys the read at ``(d, e)``
with the wraps' kinds beside.

Sound because every read that lands in one slot (row ``y0 + j`` of one column) computes
the same address: two reads through the same function of ``t = y + d`` agree at every
``t``; a wrapped read and a read through another function agree where both are ``t``:
``lo`` is ``t`` for ``t >= 0`` (one of the two reads at ``d >= 0``: every output's row is
at least 0, the launch's built-ins), ``hi`` for ``t < N`` (one of them at ``d <= 0`` where
the guards around it prove the output's row below ``N``, :func:`.periodic_index.below`).
Where neither holds the family is refused with the line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.templater.analysis import binary, strip, text
from workbench.templater.periodic_index import below
from workbench.templater.regtile import Refused
from workbench.templater.stencil import Poly, add, poly_of, poly_text, scale

WRAP_ATOM = "wb_wrap:"


@dataclass(frozen=True)
class Wrap:
    """A select that wraps ``t`` into ``0 .. n - 1`` (``kind`` says from which side)."""

    kind: str  # "lo", "hi" or "both"
    n: str
    t: Poly

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.n}"


@dataclass
class Wraps:
    """Index polynomials where each recognised wrap is ``t`` plus an atom of its own."""

    values: Mapping[str, Node]
    atoms: dict[str, Wrap] = field(default_factory=dict)

    def of(self, node: Node) -> Poly:
        return poly_of(node, self.values, leaf=self._leaf, divide=True)

    def _leaf(self, node: Node) -> Poly | None:
        w = self._select(node)
        if w is None:
            return None
        atom = f"{WRAP_ATOM}{w.key}:{poly_text(w.t)}"
        self.atoms[atom] = w
        return add(w.t, {(atom,): 1})

    def _select(self, node: Node) -> Wrap | None:
        node = strip(node)
        if node.type != "conditional_expression":
            return None
        cond, yes, no = (node.child_by_field_name(k) for k in
                         ("condition", "consequence", "alternative"))
        parts = binary(strip(cond)) if cond is not None else None
        if parts is None or parts[1] != ">=" or yes is None or no is None:
            return None
        t, k = self.of(parts[0]), self.of(parts[2])
        if not k:  # X >= 0 ? X : X + N
            n = add(self.of(no), scale(t, -1))
            if self.of(yes) == t and _name(n):
                return Wrap("lo", next(iter(n))[0], t)
            return None
        if not _name(k) or add(self.of(yes), scale(t, -1)) != scale(k, -1):
            return None
        n_name = next(iter(k))[0]
        if self.of(no) == t:  # X >= N ? X - N : X
            return Wrap("hi", n_name, t)
        inner = self._select(no)
        if inner is not None and inner.kind == "lo" and inner.n == n_name and inner.t == t:
            return Wrap("both", n_name, t)
        return None


def _name(p: Poly) -> bool:
    """``p`` is one name (coefficient 1)."""
    return len(p) == 1 and next(iter(p.values())) == 1 and len(next(iter(p))) == 1 and \
        next(iter(p))[0].isidentifier()


def split_wraps(diff: Poly, stride: Poly, wraps: Wraps
                ) -> tuple[Poly, Wrap | None, Wrap | None] | None:
    """``diff`` without its wraps' atoms, the row's wrap (its atom times the stride) and the
    column's (its atom alone); None where a wrap stands elsewhere."""
    rest: Poly = {}
    by_atom: dict[str, Poly] = {}
    for m, c in diff.items():
        found = [a for a in m if a in wraps.atoms]
        if not found:
            rest[m] = c
            continue
        if len(found) > 1:
            return None
        other = list(m)
        other.remove(found[0])
        by_atom.setdefault(found[0], {})[tuple(other)] = c
    row = col = None
    for atom, coef in by_atom.items():
        if coef == stride and row is None:
            row = wraps.atoms[atom]
        elif coef == {(): 1} and col is None:
            col = wraps.atoms[atom]
        else:
            return None
    return rest, row, col


def wraps_at(w: Wrap | None, axis: str, offset: int) -> bool:
    """``w`` (if any) wraps ``axis + offset``."""
    return w is None or w.t == add({(axis,): 1}, {(): offset} if offset else {})


def check_shared(body: Node, y: str, reads: list[tuple[Node, int, Wrap | None]]) -> None:
    """Refused where two reads of one column (node, row offset, row wrap) may land in one
    slot through functions of the row that differ there (see the module doc)."""
    for i, (n1, d1, w1) in enumerate(reads):
        for n2, d2, w2 in reads[i + 1:]:
            if (w1.key if w1 else "") == (w2.key if w2 else ""):
                continue
            for w in (w1, w2):
                if w is None:
                    continue
                if w.kind in ("lo", "both") and d1 < 0 and d2 < 0:
                    raise Refused(f"`{text(n1)}` and `{text(n2)}` may share a row of the "
                                  f"window above the field's first ({w.n} wraps one of them, "
                                  "not the other)", n2)
                if w.kind in ("hi", "both") and not any(
                        d <= 0 and below(body, n, y, w.n) for n, d in ((n1, d1), (n2, d2))):
                    raise Refused(f"`{text(n1)}` and `{text(n2)}` may share a row of the "
                                  f"window past the field's last: no guard proves {y} < {w.n} "
                                  "at a read of the two at or above the output's row", n2)
