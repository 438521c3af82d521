"""Byte-range edits over a parsed source, composed outermost-first.

Transforms record edits against the baseline's bytes (tree-sitter offsets). A structural
edit (a loop rewritten as a whole) is *lazy*: its text is produced when the file is
rendered, through :meth:`Rewriter.render`, so the literal edits made inside the loop (a
stride that became ``BLOCK_THREADS``) appear in the rewritten loop too.

Two views of a span. :meth:`Rewriter.text` is a node as the file renders it: the last edit
made over exactly its span, eager or lazy (a family copying a term that another replaced
whole copies the replacement), else its render. :meth:`Rewriter.render` is what an edit over
exactly ``[a, b)`` replaces: the bytes with the edits inside them and the insertions at either
end (a hoist declares its name equal to it). Edits over one span stack, the last made
outermost: inside a lazy edit's ``make`` its own span, text or render, is what stood under
that edit (the edit made over it before, else the bytes with the edits inside), so a wrap of
its own span (``WB_RO(...)`` around a read) neither recurses nor drops another's edit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
        """A replacement strictly within ``[start, end)`` (not all of it), an insertion at any
        of its points (both ends included)."""
        if self.start == self.end:
            return start <= self.start <= end
        return start <= self.start and self.end <= end and (self.start, self.end) != (start, end)


class Rewriter:
    """Collects edits against ``data`` and renders any span with the edits inside it."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.edits: list[Edit] = []
        self._making: list[Edit] = []  # the lazy edits being made, outermost first

    def replace(self, node: Node, text: str) -> None:
        self.edits.append(Edit(node.start_byte, node.end_byte, text))

    def replace_span(self, start: int, end: int, text: str = "", make: TextFn | None = None) -> None:
        self.edits.append(Edit(start, end, text, make))

    def discard(self, edits: list[Edit]) -> None:
        """Drop ``edits`` (made earlier) again."""
        self.edits = [e for e in self.edits if e not in edits]

    @contextmanager
    def keeping(self, keep: Callable[[Edit], bool]) -> Iterator[None]:
        """Within the block, only the edits ``keep`` accepts are made (a render without one
        transform's own edits); every edit is back after it."""
        saved = self.edits
        self.edits = [e for e in saved if keep(e)]
        try:
            yield
        finally:
            self.edits = saved

    def insert(self, pos: int, text: str) -> None:
        self.edits.append(Edit(pos, pos, text))

    def text(self, node: Node) -> str:
        """``node`` as the file renders it: the last edit made over exactly its span, eager or
        lazy (inside that edit's own ``make``: the one made before it), else :meth:`render`."""
        start, end = node.start_byte, node.end_byte
        whole = self._whole(start, end)
        return whole if whole is not None else self.render(start, end)

    def render(self, start: int = 0, end: int | None = None) -> str:
        """The bytes ``[start, end)`` with the edits inside them (over one span: the last
        made) and the insertions at either end; not an edit over exactly ``[start, end)``:
        this is what such an edit replaces. Inside the ``make`` of a lazy edit over exactly
        ``[start, end)`` (a wrap of its own span) what it replaces is the edit made over the
        span before it, where one was: another family's edit stays inside the wrap."""
        stop = len(self.data) if end is None else end
        if any((m.start, m.end) == (start, stop) for m in self._making):
            whole = self._whole(start, stop)
            if whole is not None:
                return whole
        inner = sorted(((i, e) for i, e in enumerate(self._visible()) if e.inside(start, stop)),
                       key=lambda p: (p[1].start, p[1].start != p[1].end,
                                      -(p[1].end - p[1].start),
                                      -p[0] if p[1].start != p[1].end else p[0]))
        out: list[str] = []
        pos = start
        for _i, edit in inner:
            if edit.start < pos:
                continue  # covered by an outer edit, or by one made later over the same span
            out.append(self.data[pos:edit.start].decode())
            out.append(self._made(edit))
            pos = edit.end
        out.append(self.data[pos:stop].decode())
        return "".join(out)

    def _whole(self, start: int, end: int) -> str | None:
        """The last visible edit over exactly ``[start, end)`` made, None where none is."""
        whole = [e for e in self._visible() if (e.start, e.end) == (start, end) != (end, end)]
        return self._made(whole[-1]) if whole else None

    def _visible(self) -> list[Edit]:
        """The edits in the order made, less the lazy ones being made and, over a span one of
        them replaces, those made after it: a ``make`` sees what stands under its edit (a
        caller that swapped ``edits`` inside a ``make`` may have left that edit out)."""
        if not self._making:
            return self.edits
        cut: dict[tuple[int, int], int] = {}
        for m in self._making:
            at = next((i for i, e in enumerate(self.edits) if e is m), None)
            if at is not None and m.start != m.end:
                cut[(m.start, m.end)] = min(at, cut.get((m.start, m.end), at))
        return [e for i, e in enumerate(self.edits) if i < cut.get((e.start, e.end), i + 1)
                and not any(e is m for m in self._making)]

    def _made(self, edit: Edit) -> str:
        if edit.make is None:
            return edit.text
        self._making.append(edit)
        try:
            return edit.make(self)
        finally:
            self._making.pop()


def warp_all(flag: str) -> str:
    """Lines that make ``flag`` (a ``bool`` local) the vote of a warp's active lanes on the
    device, so a following ``if (flag)`` is warp-uniform; the host simulation, which has no
    warps, keeps the lane's own flag. The ``#ifdef`` holds a whole statement: a branch whose
    braces open inside a preprocessor conditional does not parse (the kernel folder's
    reader then finds no kernel in the written template)."""
    return (f"#ifdef __CUDA_ARCH__\n  {flag} = __all_sync(__activemask(), {flag});\n"
            "#endif\n")
