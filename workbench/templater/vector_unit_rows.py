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
first element is), and the grid deals ``bound / (VEC * ITEM_ROWS)`` units. ``E`` must be a
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


@dataclass(frozen=True)
class UnitRows:
    """The row width a one-element region's index is split by, as written and as a size."""

    width: Node  # E in ``t % E``
    width_text: str  # E rendered before the lanes' rewrite (which wraps its divisions)
    width_size: str  # E over the shape's names
    bound_size: str  # the region's bound over the shape's names
    # every divisor of the index (``t / D``, ``t % D``) over the shape's names; None where
    # one is no size: the lanes then keep their carries
    divisors: tuple[str, ...] | None

    def constraints(self) -> list[str]:
        """No vector crosses a row; every group of ``ITEM_ROWS`` rows whole; each divisor of
        the index a multiple of VEC (the lanes' quotients carry nothing)."""
        out = [f"{KNOB} == 1 or {self.width_size} % VEC == 0",
               f"{KNOB} == 1 or {self.bound_size} % ({self.width_size} * {KNOB}) == 0"]
        for d in self.divisors or ():
            if f"{KNOB} == 1 or {d} % VEC == 0" not in out:
                out.append(f"{KNOB} == 1 or {d} % VEC == 0")
        return out

    def lanes(self, body: str) -> str:
        """The lanes of an item over ``body`` (the lane rewrite's text): at ``ITEM_ROWS >
        1`` every divisor is a multiple of VEC and the item starts at one, so its lanes'
        quotients carry nothing (:data:`.vector_rowgroup.ROW_LANE`'s ``wb_row_``)."""
        loop = "#pragma unroll\n        for (int wb_v = 0; wb_v < VEC; ++wb_v) "
        if self.divisors is None:
            return f"{loop}{body}\n"
        rows = re.sub(r"\bwb_lane_(div|mod|carry)\(", r"wb_row_\1(", body)
        if rows == body:
            return f"{loop}{body}\n"
        return (f"#if {KNOB} > 1  // the lanes in one row of every divisor: no carry\n"
                f"{loop}{rows}\n#else\n{loop}{body}\n#endif\n")

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
    return UnitRows(width, plan.rw.text(width), size, bound, _divisors(plan, region))


def _divisors(plan: Plan, region: Region) -> tuple[str, ...] | None:
    """Every divisor of the region's index, as sizes of the shape, once each; None where
    one is no size."""
    out: list[str] = []
    for n in region.walk():
        parts = binary(n) if n.type == "binary_expression" else None
        if parts is None or parts[1] not in ("/", "%") or \
                strip(parts[0]).type != "identifier" or text(strip(parts[0])) != region.var:
            continue
        size = size_expression(plan, parts[2])
        if size is None:
            return None
        if size not in out:
            out.append(size)
    return tuple(out)
