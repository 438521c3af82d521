"""The text of one inlining: the callee's body, bound (:mod:`.inline_site`), written in
place of its call, and where each line of the result comes from in the text before.

The body keeps its comments and its layout (re-indented to the call's depth); a comment line
names the call it stands for; the template parameters' ``#define`` lines take the callee's
place in the file (or go before the kernel when the callee is defined after it, or is kept
because something else calls it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from workbench.templater.analysis import text, walk
from workbench.templater.inline_bind import (
    flat,
    names_in,
    spelled_targs,
    statements,
    words,
    written,
)
from workbench.templater.inline_site import Binding, Site


@dataclass(frozen=True)
class Written:
    """The text after one inlining, the line of the text before each of its lines comes
    from, what was done and the call's line."""

    text: str
    origin: tuple[int, ...]
    summary: str
    line: int


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    text: str = ""
    origin: int = 0  # the line its text is told to come from (its first line's, when copied)
    copied: bool = False  # the text's lines are consecutive lines from ``origin`` on


def write(site: Site, binding: Binding) -> Written:
    """The file with ``site``'s callee inlined as ``binding`` says."""
    indent = _indent(site.data, site.statement.start_byte)
    block = site.statement.parent is not None and \
        site.statement.parent.type != "compound_statement"  # a lone body: made a block
    outside, indent = indent, indent + "  " if block else indent
    lines = [f"// {flat(site.call)}: {site.name}'s body, inlined"]
    for p, arg in binding.copies:
        decl = site.data[p.node.start_byte:p.declarator.end_byte].decode()
        decl = words(" ".join(decl.split()), binding.subs)
        const = "" if written(site.body, p.name) or "const" in decl.split() or p.indirect \
            else "const "
        lines.append(f"{const}{decl} = {arg};")
    head = ("{\n" + indent if block else "") + "".join(f"{line}\n{indent}" for line in lines)
    inner = statements(site.body, comments=True)
    row = site.statement.start_point.row + 1
    edits = [_Edit(site.statement.start_byte, site.statement.end_byte, head, row)]
    if inner:
        body = _body_text(site, binding)
        edits.append(_Edit(site.statement.end_byte, site.statement.end_byte,
                           _reindent(body, _indent(site.data, inner[0].start_byte), indent),
                           inner[0].start_point.row + 1, copied=True))
    else:
        edits[0] = replace(edits[0], text=head.rstrip())
    if block:
        edits.append(_Edit(site.statement.end_byte, site.statement.end_byte,
                           f"\n{outside}}}", row))
    edits += _callee_edits(site, binding)
    out, origin = _assemble(site.data, edits)
    summary = f"{site.name}{spelled_targs(site.call)} inlined into {site.entry_name}"
    if binding.told:
        summary += ": " + "; ".join(binding.told)
    return Written(out, tuple(origin), summary, site.call.start_point.row + 1)


def _body_text(site: Site, binding: Binding) -> str:
    """The callee's statements (and comments) with its names bound; a final ``return v;``
    of a result becomes the caller's declaration initialised with ``v``."""
    inner = statements(site.body, comments=True)
    start, end = inner[0].start_byte, inner[-1].end_byte
    edits: list[tuple[int, int, str]] = []
    for n in names_in(site.body):
        if text(n) in binding.subs:
            edits.append((n.start_byte, n.end_byte, binding.subs[text(n)]))
    for n in walk(site.body):
        if n.type == "preproc_arg":  # ``#pragma unroll BS``
            edits.append((n.start_byte, n.end_byte, words(text(n), binding.subs)))
    if site.init is not None:
        ret = next(s for s in reversed(inner) if s.type == "return_statement")
        value = ret.named_children[0]
        before = site.data[site.statement.start_byte:site.call.start_byte].decode()
        after = site.data[site.call.end_byte:site.statement.end_byte].decode()
        opened, closed = ("(", ")") if value.type == "comma_expression" else ("", "")
        if site.call.parent != site.init:  # an operand (`(float)f(..)`): the call's value
            kind = text(site.fn.child_by_field_name("type"))
            opened, closed = f"(({words(kind, binding.subs)})(", "))"
        edits.append((ret.start_byte, value.start_byte, before + opened))
        edits.append((value.end_byte, ret.end_byte, closed + after))
    pieces, pos = [], start
    for a, b, t in sorted(edits):
        if a < pos:
            continue
        pieces += [site.data[pos:a].decode(), t]
        pos = b
    pieces.append(site.data[pos:end].decode())
    return "".join(pieces)


def _callee_edits(site: Site, binding: Binding) -> list[_Edit]:
    """The callee's definition and prototypes removed (where nothing else calls it) and the
    template parameters' ``#define`` lines put where it was (before the kernel when it is
    defined after it, or kept)."""
    defines = "\n".join(f"#define {n} {v}" for n, v in binding.defines)
    line = site.outer.start_point.row + 1
    kept = site.kept()
    edits: list[_Edit] = []
    before = site.outer.start_byte < site.entry.start_byte
    data, outer = site.data, site.outer
    if not kept:
        for p in site.prototypes():
            edits.append(_Edit(p.start_byte, _line_end(data, p.end_byte)))
        if before and defines:
            edits.append(_Edit(outer.start_byte, outer.end_byte, defines, line))
        else:
            end = _line_end(data, outer.end_byte)
            if data[end:end + 1] == b"\n" and data[:outer.start_byte].endswith(b"\n\n"):
                end += 1  # one blank line where it stood between two
            edits.append(_Edit(outer.start_byte, end))
    if defines and (kept or not before):
        top = site.entry
        while top.parent is not None and top.parent.type != "translation_unit":
            top = top.parent
        at = data.rfind(b"\n", 0, top.start_byte) + 1
        edits.append(_Edit(at, at, defines + "\n", line))
    return edits


def _indent(data: bytes, pos: int) -> str:
    """The blanks that open ``pos``'s line."""
    start = data.rfind(b"\n", 0, pos) + 1
    line = data[start:pos].decode()
    return line[:len(line) - len(line.lstrip())]


def _reindent(body: str, old: str, new: str) -> str:
    lines = body.split("\n")
    return "\n".join([lines[0], *(new + line[len(old):] if line.startswith(old) else line
                                  for line in lines[1:])])


def _line_end(data: bytes, pos: int) -> int:
    """``pos``, or past the newline when only blanks follow it on its line."""
    end = data.find(b"\n", pos)
    return end + 1 if end >= 0 and not data[pos:end].strip() else pos


def _assemble(data: bytes, edits: Iterable[_Edit]) -> tuple[str, list[int]]:
    """``data`` with ``edits`` applied, and the line of ``data`` each output line is told to
    come from (its first non-blank text's)."""
    pieces: list[tuple[str, Iterator[int]]] = []
    pos = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        pieces.append((data[pos:e.start].decode(), _lines_from(data, pos)))
        pieces.append((e.text, _lines_from(data, -1, e.origin, e.copied)))
        pos = e.end
    pieces.append((data[pos:].decode(), _lines_from(data, pos)))
    origin: list[int] = []
    line_origin, has_text = 0, False
    for piece, lines in pieces:
        for i, segment in enumerate(piece.split("\n")):
            if i:
                origin.append(line_origin)
                line_origin, has_text = 0, False
            at = next(lines)
            if segment.strip() and not has_text:
                line_origin, has_text = at, True
            elif not line_origin:
                line_origin = at
    origin.append(line_origin)
    return "".join(piece for piece, _ in pieces), origin


def _lines_from(data: bytes, pos: int, origin: int = 0, copied: bool = True) -> Iterator[int]:
    """The lines a piece's segments come from: consecutive from ``pos``'s line (or from
    ``origin``), or ``origin`` for each when the text is written, not copied."""
    line = data.count(b"\n", 0, pos) + 1 if pos >= 0 else origin
    while True:
        yield line
        if copied:
            line += 1
