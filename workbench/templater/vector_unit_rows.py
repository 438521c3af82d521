"""Item rows of a vectorized one-element region (:mod:`.vector`): each item a tile of
``VEC`` columns by ``ITEM_ROWS`` rows of the row its index is split into.

A one-element region often splits its flat index ``t`` into a row and a column by a run-time
row width ``E``: ``ox = t % E`` (a pixel shuffle's output column, an NHWC copy's channel),
the row ``t / E`` decomposed further. The vector family deals a thread ``VEC`` consecutive
elements an item, ``ITEMS_PER_THREAD`` items ``BLOCK * VEC`` apart. ``ITEM_ROWS`` shapes the
item over (column, row) instead: the thread's unit ``u`` (its item's vector as dealt
before) covers the same ``VEC`` columns, ``u % (E / VEC)``, of ``ITEM_ROWS`` consecutive
rows ``(u / (E / VEC)) * ITEM_ROWS + r`` (the expert's work unit of a depth-to-space: both
output rows of an input row, both output columns of an input pixel; adjacent threads stay on
adjacent columns, so every row's stores stay coalesced). Each element is a thread of the
kernel as written, which run in no order, so any such permutation of the elements over the
threads is the same result where it covers each element exactly once: the template's
constraints keep ``E`` a multiple of ``VEC`` (no vector crosses a row) and the bound a
multiple of ``E * ITEM_ROWS`` (every row group whole: a unit is in range exactly where its
first element is), and the grid deals ``bound / (VEC * ITEM_ROWS)`` units. So that a unit's
rows divide once (a gather's integer divisions by run-time extents, a row's worth each
item otherwise), they also keep every run-time divisor ``D`` of ``t`` the row width or a
multiple of ``E * ITEM_ROWS`` and every division of the row ``t / E`` by a multiple of
``ITEM_ROWS``: each row's quotients and remainders are then its unit's first row's plus the
row's share (:data:`UNIT_AT`), under one test a unit, and no lane carries. ``E`` must be a
size expression of the shape (the same value for every thread) that the item's first line
can name (no local of the element's statements), the remainder's ``t`` the region's index
as written; one such width only (two remainders by different widths: which row is not
known, refused).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import binary, declared_name, identifiers, strip, text
from workbench.templater.inline_bind import written
from workbench.templater.plan import Plan
from workbench.templater.vector_access import Illegal, size_expression
from workbench.templater.vector_regions import Region

KNOB = "ITEM_ROWS"

UNIT_ROW = """\
// the element index of item i of a thread whose first vector starts at first (a multiple of
// N): R == 1, the vectors step elements apart; else item i is row i % R of the thread's unit
// first / N + (i / R) * step, which covers N columns of R consecutive rows of a row e wide
// (e a multiple of N, the rows a multiple of R: the template's constraints)
template <int N, int R, typename T, typename S, typename E>
__device__ __forceinline__ T wb_unit_row(T first, int i, S step, E e) {
  if (R == 1)
    return first + i * step * N;
  const T unit = first / N + (T)(i / R) * step;
  const T per = (T)(e / N);
  return (unit / per * R + (T)(i % R)) * (T)e + unit % per * N;
}"""

UNIT_AT = """\
// an element base + r * step of a unit of rows (base its first row's, a multiple of the
// unit's R rows; r its row; step the row width e, or 1 for a quotient by it): every
// quotient and remainder from base's, which the unit's rows share. A divisor d is e, or a
// multiple of e * R (then the unit's rows share its quotient); a quotient by e is divided
// again by a multiple of R only (the template's constraints); lanes k carry nothing
template <typename T>
struct WbAt {
  T base;
  int r;
  T step;
};
template <typename T, typename E>
__device__ __forceinline__ WbAt<T> operator/(WbAt<T> at, E d) {
  return at.step == (T)d ? WbAt<T>{(T)(at.base / d), at.r, (T)1} : WbAt<T>{(T)(at.base / d), 0, (T)0};
}
template <typename T, typename E>
__device__ __forceinline__ int wb_unit_carry(WbAt<T>, int, E) {
  return 0;
}
template <typename T, typename E>
__device__ __forceinline__ auto wb_unit_div(WbAt<T> at, int, E d) -> decltype(at.base / d) {
  return (decltype(at.base / d))(at.base / d + (at.step == (T)d ? (T)at.r : (T)0));
}
template <typename T, typename E>
__device__ __forceinline__ auto wb_unit_mod(WbAt<T> at, int k, E d) -> decltype(at.base % d) {
  return (decltype(at.base % d))(at.base % d + (at.step == (T)d ? (T)0 : (T)at.r * at.step) + k);
}"""


@dataclass(frozen=True)
class UnitRows:
    """The row width a one-element region's index is split by, as written and as a size."""

    width: Node  # E in ``t % E``
    width_text: str  # E rendered before the lanes' rewrite (which wraps its divisions)
    width_size: str  # E over the shape's names
    bound_size: str  # the region's bound over the shape's names
    # every divisor of the index (``t / D``, ``t % D``) over the shape's names, and each
    # (E1, E2) of a quotient's own division (``(t / E1) % E2``); None where a divisor is
    # no size: the lanes then keep their carries and every row its own divisions
    divisors: tuple[str, ...] | None
    nested: tuple[tuple[str, str], ...] = ()

    def constraints(self) -> list[str]:
        """No vector crosses a row; every group of ``ITEM_ROWS`` rows whole; each divisor of
        the index a multiple of VEC (the lanes' quotients carry nothing), and each run-time
        one the row width or a multiple of ``E * ITEM_ROWS``, each division of the row
        (``t / E``) by a multiple of ``ITEM_ROWS`` (a unit's rows share every quotient:
        :data:`UNIT_AT`)."""
        w, k = self.width_size, KNOB
        out = [f"{k} == 1 or {w} % VEC == 0", f"{k} == 1 or {self.bound_size} % ({w} * {k}) == 0"]
        for d in self.divisors or ():
            out.append(f"{k} == 1 or {d} % VEC == 0")
            if re.search(r"[A-Za-z_]", d) and d != w:
                out.append(f"{k} == 1 or {d} == {w} or {d} % ({w} * {k}) == 0")
        for e1, e2 in self.nested if self.divisors is not None else ():
            out.append(f"{k} == 1 or {e1} != {w} or {e2} % {k} == 0")
        return list(dict.fromkeys(out))

    def units(self, items: str, body: str, var: str, typ: str, step: str, bound: str,
              stores: str) -> str:
        """The items' lanes and (``stores``) stores over ``body`` (the lane rewrite's text),
        at ``ITEM_ROWS > 1``, or ``items`` (the items as the vector family writes them)
        where no quotient is shared. At ``ITEM_ROWS > 1`` every divisor is a multiple of
        VEC and each row starts at one, so no lane carries; a unit's rows are all in the
        bound or none, and no vector crosses it (the constraints), so one test a unit
        covers its rows, and each quotient and remainder of a row's index is its unit's
        first row's plus the row's share (``wb_unit_`` of :data:`UNIT_AT`): in one block,
        the unit's rows divide once."""
        rows = re.sub(r"\bwb_lane_(div|mod|carry)\(" + re.escape(var) + r"\b",
                      r"wb_unit_\1(wb_at", body)
        if self.divisors is None or rows == body:
            return items
        width = f"({self.width_text})"
        unit = (f"#pragma unroll\n  for (int wb_u = 0; wb_u < ITEMS_PER_THREAD; ++wb_u) {{\n"
                f"    const {typ} wb_first = wb_unit_row<VEC, {KNOB}>(wb_{var}0, wb_u * {KNOB}, "
                f"({step}), {width});\n"
                f"    if (wb_first < {bound}) {{  // every row of the unit, or none\n"
                f"#pragma unroll\n      for (int wb_r = 0; wb_r < {KNOB}; ++wb_r) {{\n"
                f"        const int wb_i = wb_u * {KNOB} + wb_r;\n"
                f"        const {typ} {var} = wb_unit_row<VEC, {KNOB}>(wb_{var}0, wb_i, "
                f"({step}), {width});\n"
                f"        const WbAt<{typ}> wb_at = {{wb_first, wb_r, ({typ}){width}}};\n"
                f"#pragma unroll\n        for (int wb_v = 0; wb_v < VEC; ++wb_v) {rows}\n"
                f"{stores}      }}\n    }}\n  }}\n")
        return (f"#if {KNOB} > 1  // every divisor of {var} a row or a multiple of the "
                f"unit's rows: a unit divides once\n{unit}#else\n{items}#endif\n")

    def item(self, var: str, step: str) -> str:
        """The item's index: ``wb_unit_row`` of the thread's first vector ``wb_<var>0``."""
        return f"wb_unit_row<VEC, {KNOB}>(wb_{var}0, wb_i, ({step}), ({self.width_text}))"


def unit_rows(plan: Plan, region: Region) -> UnitRows:
    """The row width of ``region`` (a flat one-element region): the one ``E`` of its
    ``var % E``. Raises Illegal with the line where there is none, more than one, or one
    the item's first line cannot read."""
    if region.loop:
        raise Illegal(f"the loop over {region.var} walks its own elements", region.node)
    bound = size_expression(plan, region.bound)
    if bound is None:
        raise Illegal(f"the bound `{text(region.bound)}` is no size of the shape", region.node)
    widths: dict[str, Node] = {}
    for n in region.walk():
        parts = binary(n) if n.type == "binary_expression" else None
        if parts is None or parts[1] != "%" or strip(parts[0]).type != "identifier" or \
                text(strip(parts[0])) != region.var:
            continue
        widths.setdefault(" ".join(text(parts[2]).split()), parts[2])
    if not widths:
        raise Illegal(f"no `{region.var} % E` splits the index into a row and a column",
                      region.at)
    if len(widths) > 1:
        raise Illegal(f"`{region.var}` is split by more than one width "
                      f"({', '.join(sorted(widths))}): which is the row is not known",
                      region.at)
    width = next(iter(widths.values()))
    size = size_expression(plan, width)
    inner = {declared_name(n)[0] for n in region.walk() if n.type == "declaration"}
    names = {text(i) for i in identifiers(width)}
    scalars = {p.name for p in plan.kernel.params if not p.is_pointer}
    if size is None or names & inner or \
            any(written(plan.body, s, address=False) for s in names & scalars):
        raise Illegal(f"the row width `{text(width)}` of `{region.var} % "
                      f"{text(width)}` is not the same size for every thread before the "
                      "element's statements", width)
    divisors, nested = _divisors(plan, region)
    return UnitRows(width, plan.rw.text(width), size, bound, divisors, nested)


def _divisors(plan: Plan, region: Region) -> tuple[tuple[str, ...] | None,
                                                 tuple[tuple[str, str], ...]]:
    """Every divisor of the region's index, as sizes of the shape, once each (None where one
    is no size), and each (E1, E2) of a quotient ``t / E1`` divided again by E2."""
    out: list[str] = []
    nested: list[tuple[str, str]] = []
    for n in region.walk():
        parts = binary(n) if n.type == "binary_expression" else None
        if parts is None or parts[1] not in ("/", "%") or \
                strip(parts[0]).type != "identifier" or text(strip(parts[0])) != region.var:
            continue
        size = size_expression(plan, parts[2])
        if size is None:
            return None, ()
        if size not in out:
            out.append(size)
        outer = n
        while outer.parent is not None and outer.parent.type == "parenthesized_expression":
            outer = outer.parent
        up = binary(outer.parent) if parts[1] == "/" and outer.parent is not None and \
            outer.parent.type == "binary_expression" else None
        if up is not None and up[1] in ("/", "%") and up[0].start_byte == outer.start_byte:
            again = size_expression(plan, up[2])
            if again is not None and (size, again) not in nested:
                nested.append((size, again))
    return tuple(out), tuple(nested)
