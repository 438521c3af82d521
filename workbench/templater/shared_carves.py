"""An ``extern __shared__`` buffer carved into tiles at compile-time offsets, read as the
static shared arrays it holds, before the analysis (set 26's bgemm_abt_dyn).

::

    extern __shared__ float smem[];        // launched with smem_bytes = 2 * 16 * 17 * 4
    float *sa = smem;                      // [TILE][TILE + 1]
    float *sb = smem + TILE * (TILE + 1);  // [TILE][TILE + 1]

is, for every family, the two arrays ``__shared__ float sa[TILE * (TILE + 1)], sb[TILE *
(TILE + 1)];`` and a launch with no dynamic shared memory: each part's extent is the
distance to the next part's offset (the last one's, what the launch's ``smem_bytes`` leaves
after it), and its text is that offset's (or an earlier part's of the same size), so a
lifted tile size resizes it. A part read ``p[r * W + c]`` at one row stride ``W`` (a factor
of its extent) is then written 2-D, ``p[r][c]`` (:func:`.apron_flat.flat_rows`): the tiled
families (:mod:`.regtile`) read ``[T][T + 1]`` tiles. The launch's ``smem_bytes`` becomes 0.

Taken only where every offset is a compile-time integer (literals, macros, file constants),
the parts are pointers of the buffer's element type declared once with ``name``, ``name +
OFF``, ``&name[OFF]`` or an earlier part ``+ OFF``, never assigned, every other use of a part a
subscript ``p[i]`` (no element's address taken: the buffer's alignment is not the arrays')
and the buffer named nowhere else; the launch's ``smem_bytes`` an integer that is a whole
number of elements, at most 48 KB (static arrays' limit), leaving the last part at least one
element (the last part's extent is what it leaves: written as an earlier part's extent where
it is that size, else as the number, where no tile family reads it as a tile). Elsewhere the
buffer's alignment as written (``extern __shared__ __align__(16) float smem[];``) stays on
every part. Elsewhere the buffer stays as written with the reason and line (the block lift then keeps the block, which
the launch sizes the buffer for: :mod:`.regtile_blockdim`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from itertools import pairwise

from tree_sitter import Node

from workbench.core.errors import WorkbenchError
from workbench.templater.analysis import binary, int_expr_value, strip, subscript_index, text, walk
from workbench.templater.analysis import integer_macros as reading_constants
from workbench.templater.apron_flat import flat_rows
from workbench.templater.const_via import STATIC_SMEM
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import entry_source
from workbench.templater.records import Finding
from workbench.templater.regtile import _ELEM as _ELEM_BYTES  # a tile element's bytes
from workbench.templater.rules import literal
from workbench.templater.tile_count_loops import file_integers

SHARED_CARVE = "SHARED_CARVE"



@dataclass(frozen=True)
class _Part:
    """A pointer carved out of the buffer: its name, its declaration, its offset (elements)
    and the text of the distance from the part it is offset from (None: from the buffer)."""

    name: str
    decl: Node
    offset: int
    step: str | None
    base: str | None


class _Refused(WorkbenchError):
    """The buffer is not carved as the module reads it: why, and the node."""

    def __init__(self, reason: str, node: Node) -> None:
        super().__init__(reason, reason=reason)
        self.reason, self.node = reason, node


def static_carves(current: InlinedSource, entry: str | None,
                  smem_bytes: str) -> tuple[InlinedSource, str]:
    """``current`` with ``entry``'s carved ``extern __shared__`` buffer written as static
    shared arrays and the launch's dynamic shared memory that follows (``"0"``); unchanged,
    with a finding saying why, where the buffer is not read as carved (module doc)."""
    found = entry_source(current, entry)
    if found is None:
        return current, smem_bytes
    source, body = found
    root = source.tree.root_node
    externs = [d for d in [*root.children, *walk(body)] if d.type == "declaration"
               and {"extern", "__shared__"} <= {text(c) for c in d.children}]
    if not externs:
        return current, smem_bytes
    try:
        edits, names = _carve_edits(root, body, externs, smem_bytes,
                                    file_integers(current))
    except _Refused as exc:
        finding = Finding(SHARED_CARVE, False, exc.reason + "; the buffer stays as written",
                          current.baseline_line(exc.node.start_point.row + 1))
        return _with(current, finding), smem_bytes
    carved = current.edited(edits)
    carved = flat_rows(carved, entry, set(names))
    finding = Finding(SHARED_CARVE, True, f"`{text(externs[0]).strip()}` carved at compile-time "
                      f"offsets into {', '.join(names)}: read as static shared arrays (their "
                      "extents the distances between the offsets), the launch's dynamic shared "
                      "memory 0", current.baseline_line(externs[0].start_point.row + 1))
    return _with(carved, finding), "0"


def _with(current: InlinedSource, finding: Finding) -> InlinedSource:
    return replace(current, findings=(*current.findings, finding))


def _carve_edits(root: Node, body: Node, externs: list[Node], smem_bytes: str,
                 constants: dict[str, int]) -> tuple[list[tuple[int, int, str]], list[str]]:
    """The edits writing the buffer's parts as static arrays, and the parts' names in
    offset order; _Refused where the buffer is not carved as the module reads it."""
    if len(externs) != 1:
        raise _Refused("more than one `extern __shared__` buffer: which part each launch's "
                       "byte belongs to is not read", externs[1])
    extern = externs[0]
    buffer, elem = _buffer(extern)
    size = _ELEM_BYTES.get(elem)
    total = literal(smem_bytes)
    if size is None:
        raise _Refused(f"`{text(extern).strip()}` holds `{elem}`, whose size is not read", extern)
    if total is None or total % size:
        raise _Refused(f"the launch's dynamic shared memory `{smem_bytes}` is not a whole number "
                       f"of `{elem}` known before the launch", extern)
    if total > STATIC_SMEM:
        raise _Refused(f"the launch's dynamic shared memory `{smem_bytes}` is more than the "
                       f"{STATIC_SMEM} bytes static shared arrays may hold", extern)
    outside = [n for n in walk(root) if n.type == "identifier" and text(n) == buffer and
               not (body.start_byte <= n.start_byte < body.end_byte)
               and not (extern.start_byte <= n.start_byte < extern.end_byte)]
    if outside:
        raise _Refused(f"`{buffer}` is named outside the kernel (line "
                       f"{outside[0].start_point.row + 1})", outside[0])
    with reading_constants(constants):
        parts = _parts(body, extern, buffer, elem)
    parts.sort(key=lambda p: p.offset)
    if not parts or parts[0].offset != 0:
        raise _Refused(f"`{buffer}` has no part at offset 0", extern)
    for a, b in pairwise(parts):
        if a.offset == b.offset:
            raise _Refused(f"`{a.name}` and `{b.name}` start at one offset of `{buffer}`: one "
                           "memory that two arrays would split", b.decl)
    count = total // size
    sizes = [b.offset - a.offset for a, b in pairwise(parts)]
    sizes.append(count - parts[-1].offset)
    for part, n in zip(parts, sizes, strict=True):
        if n <= 0:
            raise _Refused(f"`{part.name}` holds no element of `{buffer}` (the launch's "
                           f"{count} elements, its offset {part.offset})", part.decl)
    texts: list[str] = []
    for k, (part, n) in enumerate(zip(parts, sizes, strict=True)):
        after = parts[k + 1] if k + 1 < len(parts) else None
        own = after.step if after is not None and after.base in (part.name, None) and \
            (after.base is not None or part.offset == 0) else None
        same = next((t for t, m in zip(texts, sizes, strict=False) if m == n), None)
        texts.append(own or same or str(n))
    edits = [(extern.start_byte, extern.end_byte, "")]
    # the buffer's alignment as written (``extern __shared__ __align__(16) float smem[];``)
    # stays on every part: a part may be read as wider vectors
    aligned = _ALIGNMENT.search(text(extern))
    align = f"{aligned.group(0)} " if aligned is not None else ""
    for part, extent in zip(parts, texts, strict=True):
        edits.append((part.decl.start_byte, part.decl.end_byte,
                      f"__shared__ {align}{elem} {part.name}[{extent}];"))
    return edits, [p.name for p in parts]


#: an alignment written on the buffer: CUDA's ``__align__(n)``, C++'s ``alignas(n)``
_ALIGNMENT = re.compile(r"\b(?:__align__|alignas)\s*\((?:[^()]|\([^()]*\))*\)")


def _buffer(extern: Node) -> tuple[str, str]:
    """The buffer's name and element type (``smem``, ``float``)."""
    node = extern.child_by_field_name("declarator")
    while node is not None and node.type != "identifier":
        node = node.child_by_field_name("declarator")
    kind = extern.child_by_field_name("type")
    return ("" if node is None else text(node),
            " ".join(text(kind).split()) if kind is not None else "")


def _parts(body: Node, extern: Node, buffer: str, elem: str) -> list[_Part]:
    """The pointers carved out of ``buffer`` (module doc); _Refused at the first use that is
    not one, or a part used other than by subscript."""
    parts: dict[str, _Part] = {}
    uses = [n for n in walk(body) if n.type == "identifier" and
            not (extern.start_byte <= n.start_byte < extern.end_byte)]
    for n in uses:
        if text(n) != buffer and text(n) not in parts:
            continue
        decl = _carving(n)
        if decl is None:
            if text(n) == buffer:
                raise _Refused(f"`{_statement(n)}` reads `{buffer}` other than as the start of "
                               "a part `T *p = buffer + OFF;`", n)
            continue
        part = _part(decl, buffer, parts, elem)
        if part.name in parts:
            raise _Refused(f"`{part.name}` is declared twice", decl)
        parts[part.name] = part
    for n in uses:
        name = text(n)
        if name not in parts or _carving(n) is not None or _declares(n, parts[name].decl):
            continue
        sub = n.parent
        if sub is None or sub.type != "subscript_expression" or \
                sub.child_by_field_name("argument") != n:
            raise _Refused(f"`{_statement(n)}` uses the part `{name}` other than as `{name}[i]` "
                           "(it is moved or handed on)", n)
        if sub.parent is not None and sub.parent.type == "pointer_expression":
            raise _Refused(f"`{_statement(n)}` takes the address of an element of `{name}`: "
                           "the alignment the buffer gave it is not read", n)
    return list(parts.values())


def _carving(n: Node) -> Node | None:
    """The declaration ``T *p = n + OFF;`` (a form of :func:`_offset_form`) whose base is
    the identifier ``n``, else None."""
    p = n.parent
    while p is not None and p.type in ("binary_expression", "parenthesized_expression",
                                       "subscript_expression", "pointer_expression",
                                       "subscript_argument_list"):
        p = p.parent
    if p is None or p.type != "init_declarator":
        return None
    value = p.child_by_field_name("value")
    pointer = p.child_by_field_name("declarator")
    if value is None or not (value.start_byte <= n.start_byte < value.end_byte) or \
            pointer is None or pointer.type != "pointer_declarator" or \
            _offset_form(value)[0] != text(n):
        return None
    decl = p.parent
    return decl if decl is not None and decl.type == "declaration" else None


def _part(decl: Node, buffer: str, parts: dict[str, _Part], elem: str) -> _Part:
    """The part ``decl`` declares; _Refused where it is not one the module reads."""
    declarators = decl.children_by_field_name("declarator")
    kind = decl.child_by_field_name("type")
    if len(declarators) != 1 or kind is None or " ".join(text(kind).split()) != elem:
        raise _Refused(f"`{text(decl)}` is not one pointer of the buffer's `{elem}`", decl)
    init = declarators[0]
    pointer = init.child_by_field_name("declarator")
    if pointer is None or pointer.type != "pointer_declarator" or \
            any(text(c) in ("volatile",) for c in pointer.children):
        raise _Refused(f"`{text(decl)}` is not one pointer of the buffer's `{elem}`", decl)
    ident = pointer.child_by_field_name("declarator")
    value = init.child_by_field_name("value")
    if ident is None or ident.type != "identifier" or value is None:
        raise _Refused(f"`{text(decl)}` is not one pointer of the buffer's `{elem}`", decl)
    base, step = _offset_form(value)
    if base is None or (base != buffer and base not in parts):
        raise _Refused(f"`{text(decl)}` is not `{buffer} + OFF` or an earlier part `+ OFF`",
                       decl)
    offset = 0 if step is None else int_expr_value(step)
    if offset is None:
        raise _Refused(f"`{text(decl)}`: the offset `{text(step)}` is not a compile-time "
                       "integer", decl)
    start = 0 if base == buffer else parts[base].offset
    return _Part(text(ident), decl, start + offset, None if step is None else text(step),
                 None if base == buffer else base)


def _offset_form(value: Node) -> tuple[str | None, Node | None]:
    """``base`` and the offset of ``base``, ``base + OFF``, ``OFF + base`` or
    ``&base[OFF]`` (None, None for any other form)."""
    value = strip(value)
    if value.type == "identifier":
        return text(value), None
    parts = binary(value)
    if parts is not None and parts[1] == "+":
        for b, off in ((parts[0], parts[2]), (parts[2], parts[0])):
            if strip(b).type == "identifier":
                return text(strip(b)), off
    if value.type == "pointer_expression" and text(value).startswith("&"):
        arg = value.child_by_field_name("argument")
        arg = strip(arg) if arg is not None else None
        if arg is not None and arg.type == "subscript_expression":
            base = arg.child_by_field_name("argument")
            if base is not None and base.type == "identifier":
                return text(base), subscript_index(arg)
    return None, None


def _declares(n: Node, decl: Node) -> bool:
    return decl.start_byte <= n.start_byte < decl.end_byte


def _statement(n: Node) -> str:
    """The text of the statement around ``n`` (for a note)."""
    p: Node | None = n
    while p is not None and not p.type.endswith("statement") and p.type != "declaration":
        p = p.parent
    return " ".join(text(p if p is not None else n).split())

