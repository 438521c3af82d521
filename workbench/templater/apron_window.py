"""Row reuse for apron tiles: a thread's OUT_Y consecutive output rows read each tile row
once, into a register window.

A thread of :mod:`.apron` computes OUT_Y consecutive output rows ``ly = threadIdx.y *
OUT_Y + oy`` of one column ``lx``, and output ``(ly, lx)`` reads the tile at ``[ly + a][lx
+ b]`` with ``a``, ``b`` free of the thread. As written each output reads its whole
neighbourhood from shared memory (25 loads for a 5 x 5 stencil), and the compiler cannot
share the rows of neighbouring outputs: a store through a kernel pointer between two
outputs may alias the shared tile as far as it knows. Here ``a`` and ``b`` range over
compile-time sets (literals, macros and the variables of loops with constant bounds around
the read, every combination enumerated), so the rows ``amin .. OUT_Y - 1 + amax`` and the
columns ``bmin .. bmax`` the thread's outputs read are known. The window is loaded once per
output column before its rows (OUT_Y + amax - amin rows of bmax - bmin + 1 values) and every
tile read becomes a read of the window at ``[oy + a - amin][b - bmin]``: the same tile
value, so each output is computed from the same numbers in the same order.

Legal where every read's window lies inside the tile (``0 <= amin``, ``amax <= `` the halo
rows, the same for columns: then the window's loads stay inside the tile for every thread,
even outputs the bounds check skips) and the tap loops have constant bounds. The reuse runs
only where it shares loads and the window fits in registers (``OUT_Y > 1`` and at most
:data:`MAX_WINDOW` values, decided at compile time in the source), so the defaults are the
kernel as written and no knob is added. Where the tile is read from its source instead
(USE_SMEM = 0), only the window positions some output reads (``Window.taps``: a star's
corners are not) are loaded. Loops around tile reads get ``#pragma unroll`` (the
window's indices must be compile-time constants to stay in registers).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import binary, int_value, strip, text
from workbench.templater.apron_loads import Deps, indices
from workbench.templater.inline_bind import written
from workbench.templater.regtile import Refused
from workbench.templater.stencil import Poly, add, scale

#: Most window values a thread loads for one output column. The compiler streams them (a
#: 9 x 9 stencil at OUT_Y = 8, 144 values: 106 registers, no spills, 144 shared loads
#: instead of 648; ptxas -v, sm_90); past this the rows are read as written.
MAX_WINDOW = 256
_MAX_COMBOS = 4096


@dataclass(frozen=True)
class WindowRead:
    """One tile read and its window position as C text (``oy`` added to the row)."""

    node: Node
    row: str  # a - amin
    col: str  # b - bmin


@dataclass(frozen=True)
class Window:
    """The rows and columns around a thread's point that its outputs read."""

    row0: int  # amin
    rows_halo: int  # amax - amin
    col0: int  # bmin
    width: int  # bmax - bmin + 1
    reads: tuple[WindowRead, ...]
    loops: tuple[Node, ...]  # loops around tile reads, to unroll
    # (row, column) of the window that some read takes at output row 0 (``oy`` adds to the
    # row): the other positions of the rectangle (a star's corners) no output reads
    taps: tuple[tuple[int, int], ...] = ()


def loop_range(loop: Node) -> tuple[str, range] | None:
    """(variable, values) of ``for (int v = c0; v < c1 | v <= c1; ++v | v++ | v += 1)``, the
    counter declared in the loop or before it (C89: ``for (v = c0; ...)``; its values in the
    body are the same, the body must not write it either way)."""
    if loop.type != "for_statement":
        return None
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    inc = loop.child_by_field_name("update")
    if init is None or cond is None or inc is None:
        return None
    if init.type == "declaration":
        d = init.child_by_field_name("declarator")
        if d is None or d.type != "init_declarator":
            return None
        var, start = text(d.child_by_field_name("declarator")), d.child_by_field_name("value")
    elif init.type == "assignment_expression" and \
            text(init.child_by_field_name("operator")) == "=" and \
            strip(init.child_by_field_name("left") or init).type == "identifier":
        var = text(strip(init.child_by_field_name("left") or init))
        start = init.child_by_field_name("right")
    else:
        return None
    c0 = None if start is None else _const(start)
    parts = binary(cond)
    if c0 is None or parts is None or text(strip(parts[0])) != var:
        return None
    c1 = _const(parts[2])
    if c1 is None or parts[1] not in ("<", "<="):
        return None
    step = "".join(text(inc).split())
    if step not in (f"++{var}", f"{var}++", f"{var}+=1"):
        return None
    body = loop.child_by_field_name("body")
    if body is None or written(body, var, address=False):
        return None
    return var, range(c0, c1 + (1 if parts[1] == "<=" else 0))


def _const(node: Node) -> int | None:
    """An integer constant expression of literals and macros (``2 * R``, ``K - 1``)."""
    v = int_value(node)
    if v is not None:
        return v
    node = strip(node)
    if node.type == "unary_expression" and text(node.child_by_field_name("operator")) == "-":
        arg = node.child_by_field_name("argument")
        inner = None if arg is None else _const(arg)
        return None if inner is None else -inner
    parts = binary(node)
    if parts is None or parts[1] not in ("+", "-", "*"):
        return None
    a, b = _const(parts[0]), _const(parts[2])
    if a is None or b is None:
        return None
    return a + b if parts[1] == "+" else a - b if parts[1] == "-" else a * b


def _pairs(a: Poly, b: Poly, ranges: dict[str, range]) -> list[tuple[int, int]] | None:
    """The (row, column) offsets one read takes over its loops' counters, jointly."""
    got = _joint((a, b), ranges)
    return None if got is None else [(r, c) for r, c in got]


def _values(p: Poly, ranges: dict[str, range]) -> list[int] | None:
    got = _joint((p,), ranges)
    return None if got is None else [v for (v,) in got]


def _joint(polys: tuple[Poly, ...], ranges: dict[str, range]) -> list[tuple[int, ...]] | None:
    """The values of ``polys`` at every combination of their counters (None where a counter
    has no constant range or the combinations pass :data:`_MAX_COMBOS`)."""
    atoms = sorted({a for p in polys for m in p for a in m})
    if any(a not in ranges for a in atoms):
        return None
    combos = 1
    for a in atoms:
        combos *= max(1, len(ranges[a]))
    if combos > _MAX_COMBOS:
        return None
    out = []
    for vals in itertools.product(*(ranges[a] for a in atoms)):
        env = dict(zip(atoms, vals, strict=True))
        row = []
        for p in polys:
            total = 0
            for m, c in p.items():
                term = c
                for a in m:
                    term *= env[a]
                total += term
            row.append(total)
        out.append(tuple(row))
    return out


def _c_text(p: Poly) -> str:
    parts = []
    for m, c in sorted(p.items()):
        parts.append(" * ".join(([str(c)] if c != 1 or not m else []) + list(m)))
    return "(" + " + ".join(parts) + ")" if parts else "0"


def analyse_window(deps: Deps, reads: list[Node], top: list[Node], halo_y: int,
                   halo_x: int) -> Window:
    """The register window of the tile ``reads`` (made after the barrier, in the statements
    ``top``), or Refused saying why the reads cannot share one."""
    if not reads:
        raise Refused("no tile read after the barrier")
    tops = {(s.start_byte, s.end_byte) for s in top}
    found: list[tuple[Node, Poly, Poly, dict[str, range]]] = []
    loops: dict[int, Node] = {}
    for read in reads:
        up = read.parent
        while up is not None and up.type == "parenthesized_expression":
            up = up.parent
        if up is not None and up.type == "pointer_expression" and \
                text(up.child_by_field_name("operator")) == "&":
            raise Refused(f"`{text(up)}` takes the tile's address (reads through it would "
                          "bypass the window)", up)
        ranges: dict[str, range] = {}
        p = read.parent
        while p is not None:
            if p.type in ("for_statement", "while_statement", "do_statement"):
                got = loop_range(p)
                if got is None:
                    raise Refused(f"`{text(p).splitlines()[0][:60]}` around a tile read is not "
                                  "a loop with constant bounds", p)
                ranges.setdefault(got[0], got[1])  # the innermost loop of a name wins
                loops[p.start_byte] = p
            if (p.start_byte, p.end_byte) in tops:
                break
            p = p.parent
        idx = indices(read)
        polys = []
        for k, dim in enumerate(("y", "x")):
            opaque: list[Node] = []
            full = deps.poly(idx[k], opaque)
            if opaque:
                raise Refused(f"`{text(idx[k])}` is not a polynomial of the point and loop "
                              "counters", read)
            polys.append(add(full, scale({(f"threadIdx.{dim}",): 1}, -1)))
        found.append((read, polys[0], polys[1], ranges))
    rows: list[int] = []
    cols: list[int] = []
    pairs: set[tuple[int, int]] = set()
    for read, a, b, at in found:
        av = _values(a, at)
        bv = _values(b, at)
        ab = _pairs(a, b, at)
        if av is None or bv is None or ab is None:
            raise Refused(f"`{text(read)}`'s offsets from the point are not over loop "
                          "counters with constant bounds and constants", read)
        rows += av
        cols += bv
        pairs |= set(ab)
    amin, amax, bmin, bmax = min(rows), max(rows), min(cols), max(cols)
    if amin < 0 or amax > halo_y or bmin < 0 or bmax > halo_x:
        raise Refused(f"the tile reads reach rows {amin}..{amax} and columns {bmin}..{bmax} "
                      f"of the point's neighbourhood, outside the halo ({halo_y} x {halo_x})",
                      found[0][0])
    window = tuple(WindowRead(r, _c_text(add(a, {(): -amin})), _c_text(add(b, {(): -bmin})))
                   for r, a, b, _at in found)
    return Window(amin, amax - amin, bmin, bmax - bmin + 1, window,
                  tuple(loops[k] for k in sorted(loops)),
                  tuple(sorted((r - amin, c - bmin) for r, c in pairs)))
