"""One declaration per point index, before the analysis (issue 28: first contact).

``int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 8 + threadIdx.y;`` declares the
thread's output point in one statement; every family that finds the point reads one
declaration per index (its statement is where the rewrite widens it to several outputs), so
the same kernel written with two statements lifted and this one was refused ("declares the
x index with other variables"). Splitting it into ``int x = ...; int y = ...;`` is a pure
respelling: the declarators run in order either way and each still sees the ones before it.

Only a top-level declaration of the kernel's body is split, and only where one of its
declarators is a point index (its value reads both ``blockIdx`` and ``threadIdx``), every
declarator is a plain name with a value (no pointers, arrays or references, whose ``*`` /
``[]`` belong to one declarator) and nothing but the type comes before the first one. Each
split statement gets a line of its own (a rewrite may end one with a ``//`` comment); the
line map of :class:`.inline_calls.InlinedSource` tells every later line's place in the
kernel as written, so findings keep the kernel's lines.
"""

from __future__ import annotations

from dataclasses import replace

from tree_sitter import Node

from workbench.core.cuda_source import CudaSourceError, parse_cuda
from workbench.templater.analysis import walk
from workbench.templater.inline_calls import InlinedSource


def entry_body(current: InlinedSource, entry: str | None) -> Node | None:
    """The body of ``entry`` in ``current``, the source a rewrite before the analysis edits;
    None when the kernel cannot be found (the analysis reports that itself)."""
    try:
        source = parse_cuda(current.text, current.file)
        return source.body(source.kernel(entry))
    except CudaSourceError:
        return None


def split_points(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each declaration of ``entry``'s body that declares several variables
    split into one declaration per variable, each on its own line, the line map following
    (unchanged when there is none, or when the kernel cannot be found: the analysis reports
    that itself)."""
    body = entry_body(current, entry)
    if body is None:
        return current
    data = current.text.encode()
    edits = [(s, split) for s in walk(body) if (split := _split(data, s)) is not None]
    if not edits:
        return current
    lines = current.text.count("\n") + 1
    origin = [current.baseline_line(n) for n in range(1, lines + 1)]
    for s, parts in sorted(edits, key=lambda e: e[0].start_byte, reverse=True):
        row = s.start_point[0]  # 0-based line of the declaration (one line: see _split)
        indent = data[data.rfind(b"\n", 0, s.start_byte) + 1:s.start_byte].decode()
        indent = indent if not indent.strip() else " " * len(indent)
        new = f"\n{indent}".join(parts)
        data = data[:s.start_byte] + new.encode() + data[s.end_byte:]
        origin[row + 1:row + 1] = [origin[row]] * (len(parts) - 1)
    return replace(current, text=data.decode(), origin=tuple(origin))


def _split(data: bytes, s: Node) -> list[str] | None:
    """The declarations ``s`` splits into, or None where it is not a statement of a block
    declaring several variables on one line after nothing but its type and qualifiers."""
    if s.type != "declaration" or s.parent is None or \
            s.parent.type != "compound_statement" or s.start_point[0] != s.end_point[0]:
        return None
    decls = s.children_by_field_name("declarator")
    if len(decls) < 2:
        return None
    head = data[s.start_byte:decls[0].start_byte].decode().rstrip()
    if "," in head or "(" in head:
        return None
    return [f"{head} {data[d.start_byte:d.end_byte].decode()};" for d in decls]
