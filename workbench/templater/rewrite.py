"""Byte-range edits over a parsed source, composed outermost-first.

Transforms record edits against the baseline's bytes (tree-sitter offsets). A structural
edit (a loop rewritten as a whole) is *lazy*: its text is produced when the file is
rendered, through :meth:`Rewriter.render`, so the literal edits made inside the loop (a
stride that became ``BLOCK_THREADS``) appear in the rewritten loop too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

TextFn = Callable[["Rewriter"], str]


@dataclass(frozen=True)
class Edit:
    """Replace bytes ``[start, end)`` (``start == end``: insert) with ``text`` or ``make()``."""

    start: int
    end: int
    text: str = ""
    make: TextFn | None = None

    def inside(self, start: int, end: int) -> bool:
        if self.start == self.end:
            return start <= self.start <= end
        return start <= self.start and self.end <= end and (self.start, self.end) != (start, end)


class Rewriter:
    """Collects edits against ``data`` and renders any span with the edits inside it."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.edits: list[Edit] = []

    def replace(self, node: Node, text: str) -> None:
        self.edits.append(Edit(node.start_byte, node.end_byte, text))

    def replace_span(self, start: int, end: int, text: str = "", make: TextFn | None = None) -> None:
        self.edits.append(Edit(start, end, text, make))

    def discard(self, edits: list[Edit]) -> None:
        """Drop ``edits`` (made earlier) again."""
        self.edits = [e for e in self.edits if e not in edits]

    def insert(self, pos: int, text: str) -> None:
        self.edits.append(Edit(pos, pos, text))

    def text(self, node: Node) -> str:
        """``node``'s text with every edit inside it (or replacing all of it) applied."""
        for e in self.edits:
            if (e.start, e.end) == (node.start_byte, node.end_byte) and e.make is None \
                    and e.start != e.end:
                return e.text
        return self.render(node.start_byte, node.end_byte)

    def render(self, start: int = 0, end: int | None = None) -> str:
        stop = len(self.data) if end is None else end
        inner = sorted((e for e in self.edits if e.inside(start, stop)),
                       key=lambda e: (e.start, e.start != e.end, -(e.end - e.start)))
        out: list[str] = []
        pos = start
        for edit in inner:
            if edit.start < pos or (edit.start == edit.end and edit.start < pos):
                continue  # covered by an outer edit already taken
            out.append(self.data[pos:edit.start].decode())
            out.append(edit.make(self) if edit.make is not None else edit.text)
            pos = edit.end
        out.append(self.data[pos:stop].decode())
        return "".join(out)


def warp_all(flag: str) -> str:
    """Lines that make ``flag`` (a ``bool`` local) the vote of a warp's active lanes on the
    device, so a following ``if (flag)`` is warp-uniform; the host simulation, which has no
    warps, keeps the lane's own flag. The ``#ifdef`` holds a whole statement: a branch whose
    braces open inside a preprocessor conditional does not parse (the kernel folder's
    reader then finds no kernel in the written template)."""
    return (f"#ifdef __CUDA_ARCH__\n  {flag} = __all_sync(__activemask(), {flag});\n"
            "#endif\n")
