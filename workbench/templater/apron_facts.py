"""What the apron family (:mod:`.apron`) found in a kernel: the tile, its geometry, its
loads and fills, the work after the barrier, the register window and INTERIOR's tests; the
record its emission (:mod:`.apron`, :mod:`.apron_reuse`) reads."""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater import apron_interior as interior
from workbench.templater.analysis import text
from workbench.templater.apron_loads import Load
from workbench.templater.apron_side import SideFill
from workbench.templater.apron_window import Window
from workbench.templater.regtile import Refused


@dataclass(frozen=True)
class ApronFacts:
    """One apron tile's facts (see the module doc)."""

    tile: str
    decl: Node
    extents: list[Node]
    elem: int
    bx: int
    by: int
    hx: int
    hy: int
    pad: int
    loads: list[Load]
    offsets: dict[tuple[int, int], str]
    pre: list[Node]
    post: list[Node]
    redeclare: list[Node]
    reads: int
    window: Window | Refused  # the row reuse, or why there is none
    read_nodes: tuple[Node, ...] = ()  # the tile reads after the barrier
    fills: tuple[SideFill, ...] = ()  # the tables beside the tile: their fills
    side_bytes: int = 0  # and their shared memory
    bounds: tuple[interior.Bound, ...] | Refused = ()  # INTERIOR's tests, or why none
    region: int = 0  # where the span an interior block copies begins
    # tiles of the same geometry beside the first (name, declaration, extents, element
    # bytes): sized, padded and read alike, each output's values from each
    others: tuple[tuple[str, Node, tuple[Node, ...], int], ...] = ()




def o_ctype(other: tuple[str, Node, tuple[Node, ...], int]) -> str:
    """The element type of a sibling tile (its declaration's, ``__shared__`` dropped)."""
    return text(other[1].child_by_field_name("type")).replace("__shared__", "").strip()
