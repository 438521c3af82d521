"""A shared tile per input read of a window whose tap reads several inputs or ends in a fold
(:mod:`.conv`, :mod:`.conv_fold`; stereo block matching reads ``|left[y+i][x+j] -
right[y+i][x+j-d]|`` for every disparity d).

The single-input tiles of :mod:`.conv` stage the whole tap value; here each read of an input
in the tap (an element read, or a read-only helper handed a pointer, :mod:`.conv_reads`) gets
a tile of its own: the ``BLOCK_Y * OUT_Y + KS - 1`` rows and ``BLOCK_X * OUT_X + KS - 1``
columns of the block's window inputs, plus ``CH - 1`` columns where the read moves one column
per step of an outermost channel loop of ``CH`` (compile-time) channels. Read by what the
read's index depends on: the point and the window only through ``y + i`` and ``x + j + s *
c`` (``s`` in -1, 0, 1; single-assignment locals expanded, clamps and helpers' arguments
included). The tiles are filled by the whole block before the bounds check, each element
where the first output of the block that reads it passes the check, as the thread would,
with the read evaluated at the block's first point, the element's window row and column and
the channel at which the tile's first column is read (the last for ``s = -1``); the
declarations the read needs are repeated (each reading no memory). A thread then reads
``tile[ty * OUT_Y + r][tx * OUT_X + c' + s * (channel - first)]``.

Refused, with the line, where a tap is added under a condition (a bare read is staged: a
zero-padded read would be staged where the kernel does not read it), a read moves along rows
or by more than a column per channel, the channel count is known only at run time, or an
element's size is unknown. USE_SMEM 0 is the kernel as written."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import text, walk
from workbench.templater.conv_fold_keep import (
    NamesOf,
    conditional,
    declared_name,
    read_type,
    reads_memory,
)
from workbench.templater.plan import Plan
from workbench.templater.regtile import _ELEM, Refused
from workbench.templater.stencil import Poly, derivative

#: bytes of an element a tile may hold
_BYTES = {**_ELEM, "char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "short": 2,
          "unsigned short": 2, "unsigned": 4, "unsigned int": 4, "long long": 8,
          "unsigned long long": 8}

PolyOf = Callable[[Node, list[Node]], Poly]


@dataclass(frozen=True)
class Channel:
    """The outermost channel loop: its variable, first value (text) and count."""

    var: str
    lo: str
    count: int


@dataclass(frozen=True)
class Staged:
    """One read with its tile: the read, its element type, the columns it moves per channel
    step (-1, 0, 1)."""

    read: Node
    elem: str
    shift: int


@dataclass(frozen=True)
class Tiles:
    reads: tuple[Staged, ...]
    decls: tuple[Node, ...]  # the declarations the fill repeats, in the nest's order
    channel: Channel | None

    def first(self, k: int) -> str:
        """The channel at which read ``k``'s tile starts (its first column is read)."""
        ch, s = self.channel, self.reads[k].shift
        assert ch is not None or s == 0
        if ch is None:
            return "0"
        if s == 0:
            return f"({ch.lo})"
        return f"({ch.lo}) + {ch.count - 1}" if s < 0 else f"({ch.lo})"

    def extra(self, k: int) -> int:
        """Columns read ``k``'s tile holds beyond the window's for the channels' shifts."""
        return (self.channel.count - 1) if self.channel is not None and \
            self.reads[k].shift else 0

    def at(self, node: Node, outs: tuple[str, str]) -> str | None:
        """The tile element a thread reads for ``node`` at window input (wb_r, wb_c) of
        channel ``channel`` (None: ``node`` is not staged)."""
        keys = [text(s.read) for s in self.reads]
        if node.type not in ("subscript_expression", "pointer_expression",
                             "call_expression") or text(node) not in keys:
            return None
        k = keys.index(text(node))
        oy, ox = outs
        s, ch = self.reads[k].shift, self.channel
        move = f" + {s} * (({ch.var}) - ({self.first(k)}))" if s and ch is not None else ""
        return (f"wb_stage{k}[(int)threadIdx.y * {oy} + wb_r][(int)threadIdx.x * {ox} + "
                f"wb_c{move}]")


def staged_reads(plan: Plan, names: NamesOf, poly: PolyOf, axes: tuple[str, str],
                 channel: Channel | None, bodies: list[list[Node]], parts: list[Node],
                 condition: Node | None) -> Tiles:
    """The reads of the tap value ``parts`` and of the loops' declarations (``bodies``: the
    nest's loop bodies, outermost first), each with its tile; ``axes``: the point's x and
    the column loop's variable."""
    if condition is not None:
        raise Refused(f"the tap is added under `{text(condition)}`: a tile stages the bare "
                      "reads of each input", condition)
    decls = [s for body in bodies for s in body if s.type == "declaration"]
    found: dict[str, Staged] = {}
    for part in [*parts, *decls]:
        for n in walk(part):
            if text(n) in found or any(n.start_byte >= f.read.start_byte and
                                       n.end_byte <= f.read.end_byte for f in found.values()):
                continue
            elem = read_type(plan, names, n)
            if elem is None:
                continue
            if conditional(n, part):
                raise Refused(f"`{text(n)}` is read on one side of a test: a tile would stage "
                              "it where the kernel does not read it", n)
            if elem not in _BYTES:
                raise Refused(f"`{text(n)}` reads {elem}, an element of unknown size", n)
            shift = _shift(names, poly, n, axes, channel)
            if shift and channel is not None and channel.count == 0:
                raise Refused(f"`{text(n)}` moves with {channel.var}, whose count is known "
                              "only at run time: the tile's width is not", n)
            found[text(n)] = Staged(n, elem, shift)
    if not found:
        raise Refused("the tap reads no input through an index", parts[0])
    declared = {declared_name(d): s for s in decls for d in s.children_by_field_name("declarator")}
    needed = {m for f in found.values() for m in names(f.read) if m in declared}
    for name in sorted(needed):
        if reads_memory(plan, names, declared[name]):
            raise Refused(f"`{text(declared[name])}` declares {name}, which a staged read "
                          "needs, with a read of memory (the fill repeats it for every "
                          "element)", declared[name])
    keep = {declared[m].id for m in needed}
    return Tiles(tuple(found.values()), tuple(s for s in decls if s.id in keep), channel)


def _shift(names: NamesOf, poly: PolyOf, read: Node, axes: tuple[str, str],
           channel: Channel | None) -> int:
    """The columns ``read`` moves per channel step: its index may read the channel only in
    ``x + j + s * c`` with s in -1, 0, 1 (every such term agreeing)."""
    if channel is None or channel.var not in names(read):
        return 0
    x, j = axes
    c = channel.var
    found: set[int] = set()

    def visit(node: Node) -> None:
        if c not in names(node):
            return
        opaque: list[Node] = []
        p = poly(node, opaque)
        dx, dj, dc = derivative(p, x), derivative(p, j), derivative(p, c)
        if dc:
            s = {m: k / dx[m] for m, k in dc.items() if m in dx}
            if not dx or dx != dj or len(s) != len(dc) or len(set(s.values())) != 1 or \
                    {m: k * next(iter(s.values())) for m, k in dx.items()} != dc:
                raise Refused(f"`{text(node)}` moves with {c} other than along the columns "
                              f"({x} + {j} + s * {c})", node)
            found.add(int(next(iter(s.values()))))
        for o in opaque:
            if o.type == "identifier":
                raise Refused(f"`{text(o)}` depends on {c} through a local assigned more "
                              "than once", o)
            for child in o.named_children:
                visit(child)

    visit(read)
    if len(found) > 1 or not found <= {-1, 0, 1}:
        raise Refused(f"`{text(read)}` moves by {sorted(found)} columns per step of {c}: a "
                      "tile for a move of one column is modelled", read)
    return found.pop() if found else 0


def tile_bytes(tiles: Tiles, rows: str, cols: str) -> str:
    """The shared bytes of the block's tiles (``rows`` x ``cols`` the window's inputs)."""
    return " + ".join(f"{_BYTES[s.elem]} * ({rows}) * ({cols} + {tiles.extra(k)})"
                      for k, s in enumerate(tiles.reads))


def tile_fill(tiles: Tiles, knob: str, point: tuple[str, str, str, str],
              loops: tuple[tuple[str, str, int], tuple[str, str, int]], check: Callable[[str, str], str],
              sizes: tuple[str, str, str, str]) -> str:
    """The cooperative fill before the bounds check under ``#if knob``: ``point`` the names
    (y, x) and the block's first output (row, column); ``loops`` the row and column loops
    (variable, first value, window count); ``check(rows, cols)`` the bounds check of the
    output that far from the block's first; ``sizes`` the block (x, y) and outputs per
    thread (rows, columns)."""
    y, x, y0, x0 = point
    (i, ilo, n), (j, jlo, m) = loops
    bx, by, oy, ox = sizes
    rows, cols = f"({by} * {oy} + {n - 1})", f"({bx} * {ox} + {m - 1})"
    ch = tiles.channel
    decls = "\n    ".join(text(s) for s in tiles.decls)
    out = [f"#if {knob}  // each input's window reads for the block, staged once\n"]
    for k, s in enumerate(tiles.reads):
        width, reach = f"({cols} + {tiles.extra(k)})", m - 1 + tiles.extra(k)
        at_ch = f"    const int {ch.var} = {tiles.first(k)};\n" if ch is not None else ""
        out.append(
            f"  __shared__ {s.elem} wb_stage{k}[{rows}][{cols} + {tiles.extra(k)}];  // "
            f"`{text(s.read)}`\n"
            f"  for (int wb_e = (int)threadIdx.y * {bx} + (int)threadIdx.x; wb_e < {rows} * "
            f"{width}; wb_e += {bx} * {by}) {{\n"
            f"    const int wb_pr = wb_e / {width}, wb_pc = wb_e % {width};\n"
            f"    const int {y} = {y0};\n    const int {x} = {x0};\n{at_ch}"
            f"    const int {i} = ({ilo}) + wb_pr;\n    const int {j} = ({jlo}) + wb_pc;\n"
            f"    {decls}\n"
            f"    // read where the block's first output that reads it passes the check\n"
            f"    const int wb_first = wb_pr > {n - 1} ? wb_pr - {n - 1} : 0;\n"
            f"    const int wb_first_c = wb_pc > {reach} ? wb_pc - {reach} : 0;\n"
            f"    wb_stage{k}[wb_pr][wb_pc] = {check('wb_first', 'wb_first_c')} ? "
            f"({s.elem})({text(s.read)}) : ({s.elem})0;\n  }}\n")
    out.append("  __syncthreads();\n#endif\n  ")
    return "".join(out)


def tile_note(tiles: Tiles, rows: str, cols: str) -> str:
    """USE_SMEM's finding."""
    parts = []
    for k, st in enumerate(tiles.reads):
        ch = tiles.channel
        moves = f", {tiles.extra(k)} more columns for the loop over {ch.var}" \
            if ch is not None and st.shift else ""
        parts.append(f"`{text(st.read)}` ({rows} x {cols}{moves})")
    return ("each input read of the taps staged for the block in a shared tile of its own "
            "before the bounds check, read there by every thread: " + "; ".join(parts))
