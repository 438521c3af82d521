"""A flat 1-D launch over the points of a 3-D box, read as the 3-D point it is.

``idx = blockIdx.x * blockDim.x + threadIdx.x`` over ``nx * ny * nz`` points, split into
``i = idx % nx``, ``j = (idx / nx) % ny``, ``k = idx / (nx * ny)``: the thread's point is
``(i, j, k)``, ``idx`` its place in an ``[nz][ny][nx]`` array. The split is read by value,
not by one spelling: ``idx`` is the mixed-radix number of digits ``x, y, z`` with radices
``r0, r1`` (``x`` fastest), and each local of the kernel (single-assignment, casts and
parentheses seen through) is read as a run of those digits (:class:`Digits`):

- ``e % R`` of a run starting at digit ``a``, ``R`` the product ``r_a .. r_{m-1}``: the run
  ``a .. m`` (``idx % nx`` is ``x``; ``idx % (nx * ny)`` is ``x, y``);
- ``e / R`` alike: the run ``m ..`` (``idx / nx / ny`` and ``idx / sz``, ``sz = nx * ny``,
  are ``z``);
- ``e - f * R`` with ``f`` the run ``m .. end`` of ``e`` (same end): the run ``a .. m``
  (``idx - k * plane`` is ``x, y``; ``rem - j * nx`` is ``x``).

Divisors and factors are compared as integer polynomials over the kernel's names
(:func:`.stencil.poly_of`). The radices are three distinct scalar kernel arguments whose
product is the bound of ``idx`` (``if (idx >= total) return;``, ``total = nx * ny * nz``);
their order is the one order (of six) under which every local that divides or takes a
remainder of ``idx`` reads as a run and some local reads as ``x`` and another as ``z``; a
split that two orders read alike (``k = idx / (nx * ny)`` alone) tells no x extent and is
not read. Pure reading: nothing is rewritten here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import permutations

from tree_sitter import Node

from workbench.templater.analysis import binary, factors, strip, text
from workbench.templater.stencil import Poly, mul, poly_of

#: the axes of a digit, fastest first
AXES = ("x", "y", "z")


@dataclass(frozen=True)
class Digits:
    """The run of digits ``lo .. hi - 1`` of the flat index (``x`` is 0): the value
    ``sum(d_a * r_lo * .. * r_{a-1})`` for ``a`` in ``lo .. hi - 1``."""

    lo: int
    hi: int

    @property
    def axis(self) -> str | None:
        """The axis of a one-digit run (``"x"``, ``"y"``, ``"z"``), else None."""
        return AXES[self.lo] if self.hi == self.lo + 1 else None


@dataclass(frozen=True)
class FlatSplit:
    """The reading of a flat index ``index`` as a 3-D point: ``extents`` the scalar
    arguments bounding x, y, z (fastest first); ``runs`` each local of the kernel read as a
    run of digits (``i`` -> x, ``rem`` -> x, y)."""

    index: str
    extents: tuple[str, str, str]
    runs: Mapping[str, Digits]

    def coordinate(self, name: str) -> str | None:
        """The axis the local ``name`` holds, or None."""
        run = self.runs.get(name)
        return run.axis if run is not None else None

    def point_poly(self, atoms: tuple[str, str, str]) -> dict[str, Poly]:
        """``index`` and each run local as a polynomial over the point's ``atoms`` (x, y,
        z) and the extents: ``idx`` is ``x + nx * y + nx * ny * z``."""
        out = {self.index: self._run_poly(Digits(0, 3), atoms)}
        for name, run in self.runs.items():
            out[name] = self._run_poly(run, atoms)
        return out

    def _run_poly(self, run: Digits, atoms: tuple[str, str, str]) -> Poly:
        out: Poly = {}
        for a in range(run.lo, run.hi):
            key = tuple(sorted((atoms[a], *self.extents[run.lo:a])))
            out[key] = out.get(key, 0) + 1
        return out


def _radix_poly(extents: tuple[str, ...], lo: int, hi: int) -> Poly:
    return {tuple(sorted(extents[lo:hi])): 1}


class _Reader:
    """Reads values as digit runs under one order of the extents."""

    def __init__(self, index: str, extents: tuple[str, str, str],
                 values: Mapping[str, Node]) -> None:
        self.index, self.extents, self.values = index, extents, values

    def poly(self, node: Node) -> Poly:
        return poly_of(node, self.values, divide=True)

    def run(self, node: Node, depth: int = 0) -> Digits | None:
        node = strip(node)
        if node.type == "identifier":
            name = text(node)
            if name == self.index:
                return Digits(0, 3)
            value = self.values.get(name)
            return self.run(value, depth + 1) if value is not None and depth < 12 else None
        parts = binary(node)
        if parts is None or parts[1] not in ("%", "/", "-"):
            return None
        left = self.run(parts[0], depth + 1)
        if left is None:
            return None
        if parts[1] == "-":
            return self._minus(left, parts[2], depth)
        divisor = self.poly(parts[2])
        if divisor == {(): 1}:
            return left if parts[1] == "/" else None
        for m in range(left.lo + 1, left.hi + 1):
            if divisor == _radix_poly(self.extents, left.lo, m):
                return Digits(left.lo, m) if parts[1] == "%" else \
                    (Digits(m, left.hi) if m < left.hi else None)
        return None

    def _minus(self, left: Digits, right: Node, depth: int) -> Digits | None:
        fs = factors(right)
        for k, f in enumerate(fs):
            upper = self.run(f, depth + 1)
            if upper is None or upper.hi != left.hi or not left.lo < upper.lo:
                continue
            rest: Poly = {(): 1}
            for g in fs[:k] + fs[k + 1:]:
                rest = mul(rest, self.poly(g))
            if rest == _radix_poly(self.extents, left.lo, upper.lo):
                return Digits(left.lo, upper.lo)
        return None


def box_extents(bound: Poly, scalars: set[str]) -> tuple[str, ...] | None:
    """The three distinct scalar arguments whose product is ``bound`` (sorted), or None:
    the bound of a flat index over a box."""
    if len(bound) != 1:
        return None
    (monomial, coefficient), = bound.items()
    if coefficient != 1 or len(monomial) != 3 or len(set(monomial)) != 3 or \
            not set(monomial) <= scalars:
        return None
    return tuple(sorted(monomial))


def read_split(index: str, bound: Poly, scalars: set[str], values: Mapping[str, Node],
               divided: list[tuple[str, Node]],
               others: list[tuple[str, Node]]) -> FlatSplit | None:
    """The reading of ``index`` (bounded by ``bound``, a polynomial) as a 3-D point, or
    None. ``scalars``: the kernel's scalar arguments; ``values``: the single-assignment
    locals (``index`` left out); ``divided``: the locals (name, value) whose values divide
    or take a remainder of ``index`` (each must read as a run); ``others``: the other locals
    reading ``index`` (``i = rem - j * nx``), each taken where it reads as a run."""
    extents = box_extents(bound, scalars)
    if extents is None:
        return None
    found: list[FlatSplit] = []
    for order in permutations(extents):
        reader = _Reader(index, (order[0], order[1], order[2]), values)
        runs: dict[str, Digits] = {}
        for name, value in divided:
            run = reader.run(value)
            if run is None:
                break
            runs[name] = run
        else:
            for name, value in others:
                run = reader.run(value)
                if run is not None:
                    runs[name] = run
            axes = {r.axis for r in runs.values()}
            if {"x", "z"} <= axes:
                found.append(FlatSplit(index, (order[0], order[1], order[2]), runs))
    if len(found) != 1:
        return None
    return found[0]
