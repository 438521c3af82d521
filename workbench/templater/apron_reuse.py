"""ROW_REUSE's emission for the apron family (:mod:`.apron`): each output column's register
window over the tile rows its OUT_Y outputs read (:mod:`.apron_window` finds it), the tile
reads made window reads, the window's load (from the tile, or straight from the source at
USE_SMEM = 0: only the positions some output reads), and the row sums beside it."""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from workbench.templater.analysis import text
from workbench.templater.apron_facts import ApronFacts, o_ctype
from workbench.templater.apron_loads import base_array
from workbench.templater.apron_rowsums import row_sums
from workbench.templater.apron_separable import separable_rows
from workbench.templater.apron_window import MAX_WINDOW, Window
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused
from workbench.templater.rewrite import Rewriter


def window_name(f: ApronFacts, tile: str) -> str:
    """The register window of ``tile``: ``wb_win`` for the first tile, ``wb_win_<tile>``
    for the others of its geometry (one window each, the same rows and columns)."""
    return "wb_win" if tile == f.tile else f"wb_win_{tile}"


def window_values(w: Window, oy_n: str) -> str:
    """An upper bound (C text in ``oy_n``) of the window positions read from the source: per
    column, its first read row to its last at output row 0, plus ``oy_n - 1`` rows."""
    spans: dict[int, tuple[int, int]] = {}
    for r, c in w.taps:
        lo, hi = spans.get(c, (r, r))
        spans[c] = (min(lo, r), max(hi, r))
    fixed = sum(hi - lo for lo, hi in spans.values())
    return f"({len(spans)} * {oy_n} + {fixed})"


def tapped_test(taps: tuple[tuple[int, int], ...], oy_n: str) -> str:
    """C test that window position ``[wb_r][wb_c]`` is read by one of the thread's ``oy_n``
    outputs: ``taps`` are the (row, column) positions output row 0 reads, output ``oy``
    reads them ``oy`` rows down; runs of rows in one column make one range test."""
    by_col: dict[int, list[int]] = {}
    for r, c in taps:
        by_col.setdefault(c, []).append(r)
    terms = []
    for c, rows in sorted(by_col.items()):
        rows = sorted(set(rows))
        runs: list[list[int]] = []
        for r in rows:
            if runs and r == runs[-1][1] + 1:
                runs[-1][1] = r
            else:
                runs.append([r, r])
        spans = " || ".join(f"(wb_r >= {lo} && wb_r < {hi} + {oy_n})" for lo, hi in runs)
        terms.append(f"(wb_c == {c} && ({spans}))")
    return " || ".join(terms) or "false"


def register_window(plan: Plan, f: ApronFacts, oy_n: str, ctype: str,
           read_tile: Callable[[Rewriter, Node], str],
           window_load: Callable[[str, str, str], str]) -> str:
    """The per-column register window of :mod:`.apron_window` (its load, as text with
    ``BX`` for the block's x size) with every tile read made a window read where the window
    is in use; empty (and the reason noted) where the reads cannot share one."""
    w = f.window
    if isinstance(w, Refused):
        plan.note("ROW_REUSE", False, f"{w.reason}: each output reads its tile neighbourhood "
                  "as written", w.node if w.node is not None else f.decl)
        return ""
    rows = f"{oy_n} + {w.rows_halo}"
    count = 1 + len(f.others)  # one window a tile, the same rows and columns
    for read in w.reads:
        def tap(r: Rewriter, n: Node = read.node, row: str = read.row, col: str = read.col
                ) -> str:
            win = window_name(f, base_array(n) or f.tile)
            return f"(wb_reuse ? {win}[wb_oy + {row}][{col}] : {read_tile(r, n)})"
        plan.rw.replace_span(read.node.start_byte, read.node.end_byte, make=tap)
    windows = {r.node.start_byte: window_name(f, base_array(r.node) or f.tile) for r in w.reads}
    # (before the loops' pragmas: ROW_SUMS's branch goes before its nest's pragma)
    sums = "" if f.others else separable_rows(plan, w, oy_n, ctype, rows)
    if not sums:  # no weighted term: unit-weight sums of the taps' terms
        sums = row_sums(plan, w, oy_n, rows, windows)
    for loop in w.loops:
        before = loop.prev_sibling
        if before is None or "unroll" not in text(before):
            data = plan.source.data
            lead = data[data.rfind(b"\n", 0, loop.start_byte) + 1:loop.start_byte]
            indent = " " * loop.start_point.column
            plan.rw.insert(loop.start_byte, ("" if not lead.strip() else "\n" + indent) +
                           "#pragma unroll\n" + indent)
    each = f" for each of the {count} tiles" if f.others else ""
    plan.note("ROW_REUSE", True, f"each thread's {oy_n} output rows read each tile row once: "
              f"a ({rows}) x {w.width} register window per output column{each}, loaded before "
              f"its rows, where {oy_n} > 1 and they hold at most {MAX_WINDOW} values (the tile "
              f"reads as written otherwise); {len(w.reads)} tile read(s) made window reads",
              f.decl)
    extra = "".join(f"    {o_ctype(o)} {window_name(f, o[0])}[{rows}][{w.width}];\n"
                    for o in f.others)
    if f.others:
        plan.note("SEPARABLE", False, f"the window holds {count} tiles: weighted row sums "
                  "are modelled over one tile's window", f.decl)
    size = f"({rows}) * {w.width}" + (f" * {count}" if f.others else "")
    return (f"    // the tile rows and columns this column's {oy_n} outputs read, loaded once\n"
            f"    const bool wb_reuse = {oy_n} > 1 && {size} <= {MAX_WINDOW};\n"
            f"    {ctype} wb_win[{rows}][{w.width}];\n" + extra +
            f"    if (wb_reuse) {{\n"
            f"#pragma unroll\n"
            f"      for (int wb_r = 0; wb_r < {rows}; ++wb_r)\n"
            f"#pragma unroll\n"
            f"        for (int wb_c = 0; wb_c < {w.width}; ++wb_c)\n"
            f"          " + window_load(f"(int)threadIdx.y * {oy_n} + {w.row0} + wb_r",
                                    f"(int)threadIdx.x + wb_ox * BX + {w.col0} + wb_c",
                                    tapped_test(w.taps, oy_n)) + "\n"
            "    }\n" + sums)
