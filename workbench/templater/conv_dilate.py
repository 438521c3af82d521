"""Dilated ("a trous") windows for :mod:`.conv`: the value reads the point and a window
loop only through ``y + D * i`` (``D`` a literal or a compile-time constant, 2 .. 16).

A thread's ``OUT_Y`` outputs stay consecutive rows (as the expert of such a filter writes
them): the walk covers the ``OUT_Y + D * (n - 1)`` input rows once, and input row ``s``
(upwards from the thread's first output) feeds output ``k`` through tap ``(s - k) / D``
where ``s - k`` is a multiple of ``D`` within the footprint, so every output adds its taps
in the written order (``i``, then ``j``). Strided outputs (``y0 + D * k``) would need a
block row count divisible by ``D`` and a grid that no longer divides by ``BLOCK_Y *
OUT_Y``; consecutive rows need neither, at the cost of ``D - 1`` rows a thread reads that
only its neighbours' outputs use where ``OUT_Y < D`` (skipped at compile time: a row no
output of the thread needs is not read). The value at walk step ``s`` is read with the
point shifted by ``s % D`` and the window index ``lo + s / D`` (``y + s % D + D * (lo + s /
D)`` is ``y + D * lo + s``); the single-assignment locals it reads that depend on the point
are expanded into it, so a row start kept in a local (``rowStart = plane + (y + D * i) * W
+ x``) moves with the shift; zero padding (an ``if`` or ``continue`` skips) reads the
shifted point the same way. The same holds for the columns (``x + D * j``). USE_SMEM's tile
carries the dilated apron (``D * (n - 1)`` rows and columns past the block's outputs).
Refused (noted): a dilated window in a channel loop or a flipped one; a tap reading several
inputs lifts no tile per read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tree_sitter import Node

from workbench.templater.analysis import text
from workbench.templater.regtile import render
from workbench.templater.stencil import Poly, derivative, scale

if TYPE_CHECKING:  # conv imports this module
    from workbench.templater.conv import _Expr

#: the dilations a window is read at (a step of 1 is :mod:`.conv`'s plain window)
DILATIONS = range(2, 17)


def fold_constants(p: Poly, const: Callable[[str], int | None]) -> Poly:
    """``p`` with every atom of a known compile-time value (a macro, a ``constexpr``)
    multiplied into its coefficient."""
    out: Poly = {}
    for m, c in p.items():
        rest: list[str] = []
        for atom in m:
            v = const(atom)
            if v is None:
                rest.append(atom)
            else:
                c *= v
        key = tuple(sorted(rest))
        out[key] = out.get(key, 0) + c
    return {m: c for m, c in out.items() if c}


def dilated_part(expr: _Expr, node: Node, point: str, var: str, step: int,
                 const: Callable[[str], int | None]) -> Node | None:
    """The first part of ``node`` that depends on ``point`` or ``var`` other than through
    ``point + step * var`` (None: only through it)."""
    names = expr.names(node)
    if not names & {point, var}:
        return None
    opaque: list[Node] = []
    p = expr.poly(node, opaque)
    dp = fold_constants(derivative(p, point), const)
    dv = fold_constants(derivative(p, var), const)
    if dv != scale(dp, step):
        return node
    for o in opaque:
        if o.type == "identifier":  # a local assigned more than once, or the point hidden
            if expr.names(o) & {point, var}:
                return o
            continue
        for child in o.named_children:
            bad = dilated_part(expr, child, point, var, step, const)
            if bad is not None:
                return bad
    return None


def dilation(expr: _Expr, parts: list[Node], point: str, var: str,
             const: Callable[[str], int | None]) -> int | None:
    """The step ``D`` (2 .. 16) through which every part reads ``point + D * var``; None
    where there is none."""
    return next((d for d in DILATIONS
                 if all(dilated_part(expr, p, point, var, d, const) is None for p in parts)),
                None)


def shifted_value(data: bytes, parts: list[Node], values: Mapping[str, Node],
                  names: Callable[[Node], set[str]], shifts: Mapping[str, str],
                  keep: set[str]) -> list[str]:
    """The value's parts with each shifted point name ``p`` read as ``(p + shift)`` and the
    single-assignment locals that depend on one (other than ``keep``: the window counters)
    expanded into it, so they see the shift."""
    def sub(m: Node, depth: int = 0) -> str | None:
        if m.type != "identifier":
            return None
        name = text(m)
        if name in shifts:
            return f"({name} + {shifts[name]})"
        value = values.get(name)
        if value is None or name in keep or depth >= 12 or not names(m) & set(shifts):
            return None
        return "(" + render(data, value, lambda n: sub(n, depth + 1)) + ")"
    return [render(data, p, sub) for p in parts]


def fill_split(counter: str, op: str, dil: int) -> str:
    """``counter / D`` or ``counter % D`` (``op``): the walk's counters (``wb_r``, ``wb_c``)
    are compile-time constants as written; the fill's (``wb_pr``, ``wb_pc``: never negative,
    a quotient and remainder of the thread's element) are split unsigned, a shift and a mask
    rather than a signed division's rounding fix per element."""
    if counter in ("wb_r", "wb_c"):
        return f"{counter} {op} {dil}"
    return f"(int)((unsigned){counter} {op} {dil}u)"


def first_needing(step: str, dil: int, count: int) -> str:
    """The first output (0 ..) whose dilated window holds the input at the walk's
    ``step``: ``step - D * min(step / D, count - 1)``."""
    return f"{step} - {dil} * ({step} / {dil} < {count - 1} ? {step} / {dil} : {count - 1})"


def tap_test(step: str, out: str, dil: int, count: int) -> str:
    """Output ``out`` takes a tap at the walk's ``step``."""
    d = f"({step} - {out})"
    return f"{d} >= 0 && {d} <= {dil * (count - 1)} && {d} % {dil} == 0"


def tap_index(lo: str, step: str, out: str, dil: int) -> str:
    """Output ``out``'s window index at the walk's ``step`` (where :func:`tap_test`)."""
    return f"(({lo}) + ({step} - {out}) / {dil})"


@dataclass(frozen=True)
class RowWalk:
    """One input row of a window's walk (inside the row loop ``wb_r``) whose columns are
    dilated, in the texts its caller knows."""

    column: str  # the column loop's head (``wb_c``; it skips a column no output needs)
    read: str  # the value's read: ``const ELEM wb_v = ...;`` lines (``#if`` .. for tiles)
    elem: str
    cols: str  # the columns the walk covers
    outs: tuple[str, str]  # OUT_Y, OUT_X
    take_r: str  # output row wb_k takes a tap at input row wb_r
    dil: int  # the columns' dilation
    count: int  # the window's columns
    update: str  # output (wb_k, wb_q)'s update from ``wb_v`` at input column ``wb_c``


def row_accumulate(w: RowWalk) -> str:
    """The row's values read once into registers (``wb_row``), then every output row whose
    tap row it is adds them, each output column its taps ``wb_tc`` upwards (input column
    ``wb_q + D * wb_tc``): each output's taps in the written order (rows, then columns).
    With no test inside the column walk, nvcc unrolls the whole walk (tests and tap
    indices resolved at compile time) where one test per output and input column leaves
    the row walk rolled from 16 rows on (its tap reads and tests at run time)."""
    oy, ox = w.outs
    read = w.read.replace(f"const {w.elem} wb_v = ", "wb_row[wb_c] = ")
    update = re.sub(r"\bwb_v\b", "wb_row[wb_c]", w.update)
    return (f"    {w.elem} wb_row[{w.cols}];  // the row's inputs this thread needs, each "
            f"loaded once\n"
            f"{w.column}{read}    }}\n"
            f"#pragma unroll\n    for (int wb_k = 0; wb_k < {oy}; ++wb_k) {{\n"
            f"      if ({w.take_r}) {{  // input row wb_r is a tap row of output row wb_k\n"
            f"#pragma unroll\n        for (int wb_q = 0; wb_q < {ox}; ++wb_q) {{\n"
            f"#pragma unroll\n          for (int wb_tc = 0; wb_tc < {w.count}; ++wb_tc) {{\n"
            f"            const int wb_c = wb_q + {w.dil} * wb_tc;  // the input column of "
            f"tap wb_tc\n"
            f"            {update};\n"
            f"          }}\n        }}\n      }}\n    }}\n")
