"""The order in which a register tile's cooperative store walks a shared tile (issue 28: first
contact of held-back set 21's pearson_cm_tiled; :mod:`.regtile_emit` writes the loop).

Each cooperative store becomes a loop of all threads over the tile's (row, column)
positions, consecutive threads at consecutive positions along one of the two. Columns first
(the tile's row-major layout) is the default. A kernel whose global reads run along the
tile's rows instead walks them with thread x as written: the Pearson kernel's column-major
data, ``xi[threadIdx.x][threadIdx.y] = X(kb + threadIdx.x, col) - MU(col)``, a tile row per
k. Walking its columns first, a warp's 32 threads read 32 columns of X, a 128-byte line
each, for one word each: eight times the lines the kernel as written reads. So a store
walks rows first where every global read it makes steps by one word or not at all from a
tile row to the next, and some read does neither from a column to the next; such a tile
gets its rows padded by one word (``[BK][BN + 1]``, as the kernel's own ``[NB][NB + 1]``)
so a warp's stores down a column land on distinct banks. A tile stored k-major
(:mod:`.regtile_space`, transposed as it is loaded) keeps its layout, padded already: its
stores walked so land on consecutive words (the a_transposed_literal_32 spelling of
tests/test_templater_regtile_spellings.py).

The strides are evaluated on random block-uniform values (:func:`.regtile_vec.evaluate`);
an index it cannot evaluate keeps the columns-first walk. Either order is the same
program: each position is stored once, before the barrier, by some thread.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from tree_sitter import Node

from workbench.templater.analysis import int_value, text
from workbench.templater.regtile import Gemm
from workbench.templater.regtile_pairing import loads
from workbench.templater.regtile_vec import _Unknown, evaluate

#: Random tile positions each stride is checked at.
_TRIALS = 4


def walks_rows(g: Gemm, store: Node, dims: list[str | None]) -> bool:
    """Whether the cooperative ``store`` (its tile position's thread dimensions ``dims``)
    walks the tile's rows first: its global reads run along them, not along its columns
    (see the module doc)."""
    reads = loads(store, set(g.tiles))
    if not reads:
        return False
    try:
        along = [_steps(g, [index, _moving(g, array)] if index is not None else [array], dims)
                 for array, index in reads]
    except _Unknown:
        return False
    return all(r <= {0, 1} for r, _c in along) and not all(c <= {0, 1} for _r, c in along)


def _moving(g: Gemm, array: Node) -> Node | None:
    """The value of the pointer local ``array`` where each thread has its own (``src[tx]``
    of ``const float *src = x + (long)col * n;``), else None (a kernel argument)."""
    lo = g.locals.get(text(array))
    return lo.value if text(array) in g.inlinable and lo is not None else None


def _steps(g: Gemm, address: list[Node | None],
           dims: list[str | None]) -> tuple[set[int], set[int]]:
    """The steps of the sum of ``address``'s parts from a tile row to the next and from a
    column to the next, at random positions and block-uniform values."""
    rng = random.Random(21)
    rows: set[int] = set()
    cols: set[int] = set()

    def at(r: int, c: int, seen: dict[str, int]) -> int:
        return sum(evaluate(part, thread_leaves(g, dims, r, c), seen, rng) for part in address
                   if part is not None)
    for _ in range(_TRIALS):
        seen: dict[str, int] = {}
        r, c = rng.randrange(0, 63), rng.randrange(0, 63)
        base = at(r, c, seen)
        rows.add(at(r + 1, c, seen) - base)
        cols.add(at(r, c + 1, seen) - base)
    return rows, cols


def thread_leaves(g: Gemm, dims: list[str | None], r: int, c: int
                  ) -> Callable[[Node], int | Node | None]:
    """The leaf values with the store's thread at tile position (r, c): its thread indices
    there, an inlined local's value, a macro's number (None: a block-uniform unknown)."""
    pos = {dims[0] or "y": r, dims[1] or "x": c}

    def leaf(n: Node) -> int | Node | None:
        d = g.thread_dim(n)
        if d is not None:
            return pos.get(d, 0)
        if n.type == "identifier":
            lo = g.locals.get(text(n))
            if text(n) in g.inlinable and lo is not None and lo.value is not None:
                return lo.value
            if lo is None:
                return int_value(n)
        return None
    return leaf
