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

A point (or any value) kept in a CUDA vector local, ``const int2 o = make_int2(blockIdx.x *
blockDim.x + threadIdx.x, blockIdx.y * blockDim.y + threadIdx.y);`` read as ``o.x`` and
``o.y``, is the same as one scalar local per component (issue 28, first contact of
conv3x3_s2_sat, set 20): the families read locals, so a field was an index they could not
follow (no point index, a ``__constant__`` read at an index of unknown lanes). Such a local
is read as ``const int o_x = ...; const int o_y = ...;`` and each ``o.x`` as ``o_x``, one
statement a line. Legal only where (else left as written, silently): the local is one
declarator of a vector type (``int2``, ``uint3``, ``float4`` ..., or ``auto``) set by
``make_<type>(...)`` of that type or a braced list, one value per component; its values
assign nothing and call only pure functions (:func:`.purity.side_effect_free`: run in
order, one statement each, they give the same values), and hold no comment; the name is
declared nowhere else in the kernel, no macro names it, and every use of it reads a
component (never the whole value, never a write, a step or an address). A vector declared
bare and set field by field, ``int2 o; o.x = ..; o.y = ..;``, is the same: each component
set once, by ``=`` in a statement of the local's block, to a value that does not read the
local, and read only after it is set; ``int o_x = ..;`` takes that statement's place (line
for line) and the declaration goes.
"""

from __future__ import annotations

import re
from dataclasses import replace

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource, CudaSourceError, parse_cuda
from workbench.templater.analysis import text, walk
from workbench.templater.inline_bind import declared, fresh
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.purity import side_effect_free

#: the scalar type of each CUDA vector type's prefix (``uint`` of ``uint2``)
_COMPONENT = {
    "char": "signed char", "uchar": "unsigned char", "short": "short",
    "ushort": "unsigned short", "int": "int", "uint": "unsigned int", "long": "long",
    "ulong": "unsigned long", "longlong": "long long", "ulonglong": "unsigned long long",
    "float": "float", "double": "double"}
_FIELDS = "xyzw"


def entry_body(current: InlinedSource, entry: str | None) -> Node | None:
    """The body of ``entry`` in ``current``, the source a rewrite before the analysis edits;
    None when the kernel cannot be found (the analysis reports that itself)."""
    found = entry_source(current, entry)
    return found[1] if found is not None else None


def entry_source(current: InlinedSource, entry: str | None) -> tuple[CudaSource, Node] | None:
    """``current`` parsed and the body of ``entry`` in it (for a rewrite that also reads the
    file: its macros, its bytes); None when the kernel cannot be found."""
    try:
        source = parse_cuda(current.text, current.file)
        return source, source.body(source.kernel(entry))
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
        return _split_vectors(current, entry)
    lines = current.text.count("\n") + 1
    origin = [current.baseline_line(n) for n in range(1, lines + 1)]
    for s, parts in sorted(edits, key=lambda e: e[0].start_byte, reverse=True):
        row = s.start_point[0]  # 0-based line of the declaration (one line: see _split)
        indent = data[data.rfind(b"\n", 0, s.start_byte) + 1:s.start_byte].decode()
        indent = indent if not indent.strip() else " " * len(indent)
        new = f"\n{indent}".join(parts)
        data = data[:s.start_byte] + new.encode() + data[s.end_byte:]
        origin[row + 1:row + 1] = [origin[row]] * (len(parts) - 1)
    return _split_vectors(replace(current, text=data.decode(), origin=tuple(origin)), entry)


def _split_vectors(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each vector local of ``entry`` that qualifies (see the module doc)
    read as one scalar local per component, one at a time (a later one's values may read an
    earlier one's components)."""
    while True:
        found_source = entry_source(current, entry)
        if found_source is None:
            return current
        source, body = found_source
        data = current.text.encode()
        found = next((v for s in walk(body)
                      if (v := _vector(source, data, body, s)) is not None), None)
        if found is None:
            fields = next((f for s in walk(body)
                           if (f := _fields_set(source, body, s)) is not None), None)
            if fields is None:
                return current
            current = current.edited(fields)  # line for line: the map stays
            continue
        decl, parts, reads = found
        edits = [(r.start_byte, r.end_byte, name) for r, name in reads]
        for start, end, new in sorted(edits, reverse=True):
            data = data[:start] + new.encode() + data[end:]
        indent = data[data.rfind(b"\n", 0, decl.start_byte) + 1:decl.start_byte].decode()
        indent = indent if not indent.strip() else " " * len(indent)
        data = data[:decl.start_byte] + f"\n{indent}".join(p for p, _ in parts).encode() + \
            data[decl.end_byte:]
        lines = current.text.count("\n") + 1
        origin = [current.baseline_line(n) for n in range(1, lines + 1)]
        first, last = decl.start_point[0], decl.end_point[0]
        origin[first:last + 1] = [origin[row] for _, row in parts]
        current = replace(current, text=data.decode(), origin=tuple(origin))


def _vector(source: CudaSource, data: bytes, body: Node, s: Node
            ) -> tuple[Node, list[tuple[str, int]], list[tuple[Node, str]]] | None:
    """For a qualifying vector local's declaration ``s``: ``s``, the scalar declarations it
    becomes (text, the 0-based line of its value) and the component reads with the local
    each becomes; None for anything else."""
    if s.type != "declaration" or s.parent is None or s.parent.type != "compound_statement":
        return None
    decls = s.children_by_field_name("declarator")
    typ = s.child_by_field_name("type")
    if len(decls) != 1 or decls[0].type != "init_declarator" or typ is None:
        return None
    ident, value = decls[0].child_by_field_name("declarator"), \
        decls[0].child_by_field_name("value")
    if ident is None or ident.type != "identifier" or value is None:
        return None
    if value.type == "call_expression":
        made = text(value.child_by_field_name("function")).removeprefix("make_")
        args = value.child_by_field_name("arguments")
        values = [] if args is None else list(args.named_children)
        vtype = made if typ.type == "placeholder_type_specifier" else text(typ)
        if made != vtype:
            return None
    else:
        values, vtype = list(value.named_children), text(typ)
        if value.type != "initializer_list":
            return None
    component = _COMPONENT.get(vtype[:-1])
    if component is None or vtype[-1:] != str(len(values)) or len(values) > 4 or any(
            n.type == "comment" for n in walk(s)) or not all(
            side_effect_free(source, v) for v in values):
        return None
    name = text(ident)
    fn = body.parent
    if fn is None or len(declared(fn).get(name, [])) != 1 or in_macros(source, name):
        return None
    fields = _FIELDS[:len(values)]
    reads = _component_reads(fn, ident, name, fields)
    if reads is None:
        return None
    taken = {text(n) for n in walk(fn) if n.type in ("identifier", "type_identifier")}
    head = data[s.start_byte:typ.start_byte].decode() + component
    locals_ = {f: fresh(f"{name}_{f}", taken) for f in fields}
    parts = [(f"{head} {locals_[f]} = {' '.join(text(v).split())};", v.start_point[0])
             for f, v in zip(fields, values, strict=True)]
    return s, parts, [(r, locals_[f]) for r, f in reads]


def _fields_set(source: CudaSource, body: Node, s: Node) -> list[tuple[int, int, str]] | None:
    """For ``T v;`` (``s``, a vector type) whose components statements of its block set
    one each, ``v.x = ..;`` (see the module doc): the edits (``s`` gone, each such
    statement ``C v_x = ..;`` on its lines, each later ``v.x`` read ``v_x``); None for
    anything else."""
    typ = s.child_by_field_name("type")
    decls = s.children_by_field_name("declarator")
    block = s.parent
    if s.type != "declaration" or block is None or block.type != "compound_statement" or \
            typ is None or len(decls) != 1 or decls[0].type != "identifier" or \
            any(c.type not in ("primitive_type", "type_identifier", "identifier", ";")
                for c in s.children):
        return None
    vtype, name, fn = text(typ), text(decls[0]), body.parent
    component = _COMPONENT.get(vtype[:-1])
    width = int(vtype[-1]) if vtype[-1:] in "234" and vtype[-1:] else 0
    if component is None or not width or fn is None or \
            len(declared(fn).get(name, [])) != 1 or in_macros(source, name):
        return None
    sets: dict[str, tuple[Node, Node, Node]] = {}  # field -> (statement, its target, value)
    for stmt in block.named_children:
        top = stmt.named_children[0] if stmt.type == "expression_statement" and \
            stmt.named_children else None
        left = top.child_by_field_name("left") if top is not None and \
            top.type == "assignment_expression" and \
            text(top.child_by_field_name("operator")) == "=" else None
        if top is None or left is None or left.type != "field_expression" or \
                text(left.child_by_field_name("argument")) != name:
            continue
        field, value = text(left.child_by_field_name("field")), top.child_by_field_name("right")
        if stmt.start_byte < s.end_byte or field in sets or value is None or \
                any(text(n) == name for n in walk(value)) or not side_effect_free(source, value):
            return None  # before it, twice, or a value reading the vector or writing
        sets[field] = (stmt, left, value)
    if set(sets) != set(_FIELDS[:width]) or any(n.type == "comment" for n in walk(s)):
        return None
    reads = _component_reads(fn, decls[0], name, _FIELDS[:width],
                             {left.start_byte for _stmt, left, _value in sets.values()})
    if reads is None or any(r.start_byte < sets[f][0].end_byte for r, f in reads):
        return None  # a component read before it is set
    taken = {text(n) for n in walk(fn) if n.type in ("identifier", "type_identifier")}
    local = {f: fresh(f"{name}_{f}", taken) for f in sets}
    return [(s.start_byte, s.end_byte, ""),
            *((stmt.start_byte, stmt.end_byte, f"{component} {local[f]} = {text(value)};")
              for f, (stmt, _left, value) in sets.items()),
            *((r.start_byte, r.end_byte, local[f]) for r, f in reads)]


def in_macros(source: CudaSource, name: str) -> bool:
    """Whether a macro of the file names ``name`` (its uses there would lose the local)."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    return any(n.type in ("preproc_def", "preproc_function_def") and word.search(text(n))
               for n in walk(source.tree.root_node))


def _component_reads(fn: Node, ident: Node, name: str, fields: str, setting: frozenset[int]
                     | set[int] = frozenset()) -> list[tuple[Node, str]] | None:
    """Every use of ``name`` in ``fn`` but its declarator ``ident`` and the targets that set
    it (their start bytes: ``setting``), as (the ``name.f`` read, ``f``); None where a use
    is not a read of one of ``fields``."""
    reads: list[tuple[Node, str]] = []
    for n in walk(fn):
        if n.type != "identifier" or text(n) != name or n == ident or n.start_byte in setting:
            continue
        use, field = n.parent, n.parent and n.parent.child_by_field_name("field")
        if use is None or use.type != "field_expression" or field is None or \
                text(use.child_by_field_name("operator")) != "." or text(field) not in fields:
            return None
        up = use.parent
        if up is not None and (
                (up.type == "assignment_expression" and up.child_by_field_name("left") == use)
                or up.type == "update_expression" or
                (up.type == "pointer_expression" and text(up).startswith("&"))):
            return None
        reads.append((use, text(field)))
    return reads


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
