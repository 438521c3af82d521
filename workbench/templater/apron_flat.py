"""A flat shared window indexed by hand, read as the 2-D array it is, before the analysis
(issue 28: set 17's corr7x7_bank4).

``__shared__ float tile[WH * WW];`` read at ``tile[(ty + dy) * WW + (tx + dx)]`` is a window
of WH rows of WW values: the apron family (:mod:`.apron`) reads a tile as ``[rows][columns]``
and knows its extents, its loads and its reads by that shape. Each access is rewritten to
the same element of ``tile[WH][WW]``:

- ``r * WW + c`` (terms in any order, a product either way round, under a cast to ``int``
  or not) as ``[r][c]``: the address ``r * WW + c`` in both, whatever ``c``'s range; a row
  or column with a subtraction is cast to ``int`` (``threadIdx.x - 1`` is unsigned: on its
  own it would wrap, where the flat sum's 32-bit arithmetic wrapped back);
- the flat counter of the ``for`` loop around the access, ``tile[e]``, as ``[e / WW][e %
  WW]``: two locals at the top of the loop's body, and every ``e / WW`` and ``e % WW`` of the
  body read as them (the same values); C's division keeps ``(e / WW) * WW + e % WW == e``
  for every integer ``e``;
- any other index ``i`` as ``[(i) / WW][(i) % WW]``, the same element alike.

The row stride is the factor of the declared extent ``WH * WW`` that multiplies a row in the
reads (the same text, or the same integer); the other factor is the row count. Only a
window is taken: an array read somewhere at a row of ``threadIdx.y`` and a column of
``threadIdx.x`` (single-assignment locals followed), every use of it a subscript; a GEMM's
``As[ty * T + k]`` (no ``threadIdx.x`` in the column) keeps its spelling. Every line keeps
its number.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    int_value,
    single_values,
    strip,
    subscript_index,
    text,
    walk,
)
from workbench.templater.inline_bind import fresh
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import entry_body


@dataclass(frozen=True)
class _Row:
    """An access ``r * stride + c`` of the flat array: its row, its column (text) and the
    column's terms."""

    row: Node
    col: str
    col_terms: tuple[Node, ...]


def flat_windows(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each flat shared window of ``entry`` written as a 2-D array
    (unchanged when there is none, or when the kernel cannot be found)."""
    body = entry_body(current, entry)
    if body is None:
        return current
    values = single_values(body)
    edits: list[tuple[int, int, str]] = []
    taken = {text(n) for n in walk(body) if n.type == "identifier"}
    for decl, name, extent in _flat_shared(body):
        window = _window_edits(body, decl, name, extent, values, taken)
        if window is not None:
            edits += window
    return current.edited(edits) if edits else current


def flat_rows(current: InlinedSource, entry: str | None, names: set[str]) -> InlinedSource:
    """``current`` with each flat shared array of ``entry`` named in ``names`` written as a
    2-D array wherever every access has one row stride (the rewrite of :func:`flat_windows`,
    without its window test: the caller knows the arrays are row-major tiles, as the parts
    of a carved ``extern __shared__`` buffer (:mod:`.shared_carves`) are); unchanged where
    an access has none."""
    body = entry_body(current, entry)
    if body is None:
        return current
    edits: list[tuple[int, int, str]] = []
    taken = {text(n) for n in walk(body) if n.type == "identifier"}
    for decl, name, extent in _flat_shared(body):
        if name in names:
            edits += _window_edits(body, decl, name, extent, {}, taken, window=False) or []
    return current.edited(edits) if edits else current


def _flat_shared(body: Node) -> list[tuple[Node, str, Node]]:
    """The ``__shared__`` one-extent arrays of ``body`` whose extent is a product."""
    out = []
    for decl in walk(body):
        if decl.type != "declaration" or "__shared__" not in text(decl).split("[")[0]:
            continue
        for d in decl.children_by_field_name("declarator"):
            inner = d.child_by_field_name("declarator")
            size = d.child_by_field_name("size")
            parts = binary(size) if size is not None else None
            if d.type == "array_declarator" and inner is not None and \
                    inner.type == "identifier" and size is not None and parts is not None \
                    and parts[1] == "*":
                out.append((decl, text(inner), size))
    return out


def _window_edits(body: Node, decl: Node, name: str, extent: Node,
                  values: dict[str, Node], taken: set[str],
                  window: bool = True) -> list[tuple[int, int, str]] | None:
    """The edits that make ``name[extent]`` a 2-D window, or None when it is not one
    (``window`` False: a 2-D array whenever every access that is a row has one stride, and
    at least one is)."""
    uses = [n for n in walk(body) if n.type == "identifier" and text(n) == name
            and not _declares(n, decl)]
    subs = [n.parent for n in uses]
    if not uses or any(s is None or s.type != "subscript_expression"
                       or s.child_by_field_name("argument") != n
                       or (s.parent is not None and s.parent.type == "subscript_expression"
                           and s.parent.child_by_field_name("argument") == s)
                       for n, s in zip(uses, subs, strict=True)):
        return None
    factors = binary(extent)
    assert factors is not None
    rows: dict[int, _Row] = {}
    strides: set[int] = set()
    for s in subs:
        assert s is not None
        for k, f in enumerate((factors[0], factors[2])):
            row = _row_form(subscript_index(s), f)
            if row is not None:
                rows[s.start_byte] = row
                strides.add(k)
                break
    if len(strides) != 1 or (window and not any(
            _reads(s) and _mentions(r.row, "y", values) and any(_mentions(t, "x", values) for t in r.col_terms)
            for s in subs if s is not None and (r := rows.get(s.start_byte)) is not None)):
        return None
    k = strides.pop()
    count, stride = (factors[2], factors[0]) if k == 0 else (factors[0], factors[2])
    wide = f"({text(stride)})" if strip(stride).type != "identifier" and \
        int_value(stride) is None else text(stride)
    edits = [(extent.start_byte, extent.end_byte, f"{text(count)}][{text(stride)}")]
    loops: dict[int, tuple[str, str]] = {}
    for s in subs:
        assert s is not None
        idx = subscript_index(s)
        row = rows.get(s.start_byte)
        if row is not None:
            edits.append((idx.start_byte, idx.end_byte,
                          f"{_signed(text(row.row))}][{_signed(row.col)}"))
            continue
        loop = _counter_loop(s, idx)
        if loop is None:
            edits.append((idx.start_byte, idx.end_byte,
                          f"({text(idx)}) / {wide}][({text(idx)}) % {wide}"))
            continue
        if loop.start_byte not in loops:
            names = (fresh(f"wb_{text(idx)}_row", taken), fresh(f"wb_{text(idx)}_col", taken))
            loops[loop.start_byte] = names
            edits += _counter_edits(loop, text(idx), stride, wide, names, s)
        rn, cn = loops[loop.start_byte]
        edits.append((idx.start_byte, idx.end_byte, f"{rn}][{cn}"))
    return edits


def _counter_edits(loop: Node, var: str, stride: Node, wide: str, names: tuple[str, str],
                   access: Node) -> list[tuple[int, int, str]]:
    """The locals ``row = var / stride, col = var % stride`` at the top of ``loop``'s body
    and each ``var / stride`` / ``var % stride`` of the body (outside ``access``) read as
    them."""
    body = loop.child_by_field_name("body")
    assert body is not None and body.type == "compound_statement"
    r, c = names
    edits = [(body.start_byte + 1, body.start_byte + 1,
              f" const int {r} = {var} / {wide}, {c} = {var} % {wide};")]
    for n in walk(body):
        parts = binary(n) if n.type == "binary_expression" else None
        if parts is None or parts[1] not in ("/", "%") or text(strip(parts[0])) != var or \
                not _same(parts[2], stride) or \
                access.start_byte <= n.start_byte < access.end_byte:
            continue
        edits.append((n.start_byte, n.end_byte, r if parts[1] == "/" else c))
    return edits


def _counter_loop(access: Node, idx: Node) -> Node | None:
    """The ``for`` loop around ``access`` that declares ``idx`` (one name) as its counter,
    with a braced body that assigns it nowhere, else None."""
    if strip(idx).type != "identifier" or strip(idx) != idx:
        return None
    var = text(idx)
    p = access.parent
    while p is not None and p.type != "function_definition":
        if p.type == "for_statement":
            init = p.child_by_field_name("initializer")
            declared = [text(d.child_by_field_name("declarator") or d)
                        for d in (init.children_by_field_name("declarator")
                                  if init is not None and init.type == "declaration" else [])]
            body = p.child_by_field_name("body")
            if var in declared:
                writes = [n for n in walk(body) if n.type in ("assignment_expression",
                                                              "update_expression")
                          and text(n.child_by_field_name("left")
                                   or n.child_by_field_name("argument")) == var] \
                    if body is not None else [None]
                ok = body is not None and body.type == "compound_statement" and not writes
                return p if ok else None
        p = p.parent
    return None


def _row_form(idx: Node, stride: Node) -> _Row | None:
    """``idx`` as ``row * stride + col``: one added term of a sum a product with the stride
    (either way round), the column the other terms in their order (``(ty + i) * SW + tx +
    j``; under a cast to ``int``, as an inlined helper's ``(int)(r * SW + c)``), else None."""
    terms = _terms(_int_core(idx), "+")
    if len(terms) < 2:
        return None
    for k, (sign, term) in enumerate(terms):
        mul = binary(term) if _bare(term).type == "binary_expression" else None
        if sign != "+" or mul is None or mul[1] != "*":
            continue
        for row, f in ((mul[0], mul[2]), (mul[2], mul[0])):
            if _same(f, stride):
                rest = terms[:k] + terms[k + 1:]
                col = "".join(("-" if s == "-" else "") + text(t) if i == 0 else
                              f" {s} {text(t)}" for i, (s, t) in enumerate(rest))
                return _Row(row, col, tuple(t for _s, t in rest))
    return None


def _terms(node: Node, sign: str) -> list[tuple[str, Node]]:
    """The added and subtracted terms of ``node`` (a chain of ``+`` and ``-``), in order, as
    written (:func:`~.analysis.terms` strips casts, which the rewritten index must keep): a
    cast's operand is one term."""
    parts = binary(node) if _bare(node).type == "binary_expression" else None
    if parts is None or parts[1] not in ("+", "-"):
        return [(sign, node)]
    flip = {"+": "-", "-": "+"}
    right = sign if parts[1] == "+" else flip[sign]
    return _terms(parts[0], sign) + _terms(parts[2], right)


def _int_core(node: Node) -> Node:
    """``node`` under its parentheses and casts to ``int``."""
    while True:
        node = _bare(node)
        kind = node.child_by_field_name("type") if node.type == "cast_expression" else None
        value = node.child_by_field_name("value")
        if kind is None or text(kind) != "int" or value is None:
            return node
        node = value


def _signed(part: str) -> str:
    """A row or column with a subtraction as ``(int)(part)``: where it is unsigned
    (``threadIdx.x - 1``), its own index must not wrap to 2^32 - 1 as the flat sum's
    32-bit arithmetic did harmlessly."""
    return f"(int)({part})" if "-" in part else part


def _bare(node: Node) -> Node:
    """``node`` under its parentheses (casts kept)."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def _same(a: Node, b: Node) -> bool:
    """The same stride: equal text under parentheses, or the same integer."""
    if text(strip(a)) == text(strip(b)):
        return True
    va, vb = int_value(a), int_value(b)
    return va is not None and va == vb




def _reads(sub: Node) -> bool:
    """Whether ``sub`` is read (not the left of a plain assignment)."""
    p = sub.parent
    return not (p is not None and p.type == "assignment_expression"
                and p.child_by_field_name("left") == sub
                and text(p.child_by_field_name("operator")) == "=")


def _mentions(node: Node, dim: str, values: dict[str, Node], depth: int = 0) -> bool:
    """Whether ``node`` reads ``threadIdx.<dim>``, single-assignment locals followed."""
    if depth > 20:
        return False
    for n in walk(node):
        if n.type == "field_expression" and builtin(n, "threadIdx") == dim:
            return True
        if n.type == "identifier" and text(n) in values and \
                _mentions(values[text(n)], dim, values, depth + 1):
            return True
    return False


def _declares(n: Node, decl: Node) -> bool:
    return decl.start_byte <= n.start_byte < decl.end_byte
