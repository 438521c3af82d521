"""A local struct whose fields are set once at the top of the kernel, read as one local per
field, before the analysis (issue 28: first contact of fir128_const, set 11).

Authors gather a thread's pointers and sizes in a struct (``Signal s; s.n = n; s.x = x +
blockIdx.y * stride; ...``) and pass it by value to the routine that computes an output;
once :mod:`.inline_calls` wrote that routine into the kernel, its reads are ``s.x[i + t]``
and ``if (i < s.n)``. Every family reads locals and parameters: a field is neither, so the
windowed read's element type, the bounds check's bound (``s.n`` is the launch's ``n``) and
the pointer a staged read needs were unknown, and the 1-D filter family refused. A pointer
field set once and only read afterwards is a local of the field's declared type: ``s.x =
v;`` becomes ``const float* s_x = v;`` and each read ``s.x`` becomes ``s_x``; a field set to
a kernel parameter the kernel never assigns reads as that parameter (``s.n`` is ``n``), its
assignment then dropped. Other fields (a value the thread computes, ``v.step = 3.0 /
height``) stay as written: the families read ``v.step`` as the thread's value already, so
the struct's declaration then stays too (else it becomes blank text on its line). Each line
keeps its number.

A struct built by a braced initializer, ``const Planes planes{luma, chroma, pitch};`` (round
31b's nv12_to_rgba_struct_helper), sets every field once where it is declared, in order: a
field of a never-assigned parameter's own type set to it reads as it, a pointer field as a
local declared with its value on the declaration's line; the initializer then holds a value
for every field, none a nested list, and the fields are only read after it (never written
or addressed). The lift reads a braced struct so only where that lifts strictly more knobs
(:func:`.semantic.lift_kernel`): set 13's conv3x3_c16_nchw, its sizes in ``ImageDims d =
{nb, h, w}``, lifts its channels a thread and items read as written, its output tiles read
so (another family, fewer knobs).

Legal only when (else left as written, silently: the families then refuse with their own
line): the struct is defined once at file scope with data members only (one or more plain
declarators each, no arrays, no default values, no bit fields); the kernel declares the
local once, at the top level of its body, with no value; the local is named nowhere but as
``s.f``; each field read is set exactly once, by a top-level statement ``s.f = v;`` of the
body before every read of it, and is never assigned, updated or addressed elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from tree_sitter import Node

from workbench.core.cuda_source import CudaSourceError, KernelParam, parse_cuda
from workbench.templater.analysis import text, walk
from workbench.templater.inline_bind import fresh
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.records import Finding

TRANSFORM = "STRUCT_LOCALS"
_UPDATES = ("assignment_expression", "update_expression")


@dataclass(frozen=True)
class _Field:
    """A data member: the text before its name and after it (``const float*`` / ``x``)."""

    head: str  # the declaration's text up to the declarator (type and qualifiers)
    declarator: str  # the declarator with the name marked ``{}`` (``* {}``)


def struct_locals(current: InlinedSource, entry: str | None, *,
                  braced: bool = True) -> InlinedSource:
    """``current`` with each qualifying local struct of ``entry``'s body read as one local
    per field (see the module doc); unchanged where there is none or the source does not
    parse. ``braced``: a struct built by a braced initializer too (the lift reads it so only
    where that lifts more, :func:`.semantic.lift_kernel`)."""
    try:
        source = parse_cuda(current.text, current.file)
        body = source.body(source.kernel(entry))
    except CudaSourceError:
        return current
    data = current.text.encode()
    structs = _structs(source.tree.root_node, data)
    params = {p.name: p for p in source.kernel(entry).params}
    taken = {text(n) for n in walk(source.tree.root_node) if n.type in
             ("identifier", "field_identifier", "type_identifier")}
    edits: list[tuple[int, int, str]] = []
    findings: list[Finding] = []
    for decl in body.named_children:
        found = _local(decl, structs)
        if found is None:
            continue
        name, fields, values = found
        if values is not None and not braced:
            continue
        made = _rewrite(body, decl, name, fields, params, taken, values)
        if made is not None:
            edits += made
            findings.append(Finding(TRANSFORM, True, f"the pointer and size fields of `{name}` "
                                    "(set once at the top, then only read) are read as "
                                    "locals and parameters",
                                    current.baseline_line(decl.start_point[0] + 1)))
    if not edits:
        return current
    for start, end, new in sorted(edits, reverse=True):
        data = data[:start] + new.encode() + data[end:]
    return replace(current, text=data.decode(), findings=current.findings + tuple(findings))


def _structs(root: Node, data: bytes) -> dict[str, dict[str, _Field]]:
    """File-scope structs of data members only, defined once: name -> field -> _Field."""
    seen: dict[str, int] = {}
    out: dict[str, dict[str, _Field]] = {}
    for n in walk(root):
        if n.type not in ("struct_specifier", "class_specifier"):
            continue
        name, fields = n.child_by_field_name("name"), n.child_by_field_name("body")
        if name is None or fields is None:
            continue
        seen[text(name)] = seen.get(text(name), 0) + 1
        members = _members(fields, data)
        if members is not None and n.type == "struct_specifier":
            out[text(name)] = members
    return {k: v for k, v in out.items() if seen[k] == 1}


def _members(fields: Node, data: bytes) -> dict[str, _Field] | None:
    out: dict[str, _Field] = {}
    for m in fields.named_children:
        if m.type == "comment":
            continue
        if m.type != "field_declaration" or any(
                c.type in ("bitfield_clause", "initializer_list") or text(c) == "="
                for c in m.children):
            return None
        decls = m.children_by_field_name("declarator")
        if not decls:
            return None
        head = data[m.start_byte:decls[0].start_byte].decode().strip()
        for d in decls:
            ident = d
            while ident.type == "pointer_declarator":
                inner = ident.child_by_field_name("declarator")
                if inner is None:
                    return None
                ident = inner
            if ident.type != "field_identifier":
                return None  # an array, a function or a reference member
            decl = (data[d.start_byte:ident.start_byte] + b"{}" +
                    data[ident.end_byte:d.end_byte]).decode()
            out[text(ident)] = _Field(head, decl)
    return out


def _local(decl: Node, structs: dict[str, dict[str, _Field]]
           ) -> tuple[str, dict[str, _Field], list[Node] | None] | None:
    """(the local's name, its struct's fields, the braced values or None) for ``Signal s;``
    / ``struct Signal s;``, or ``Signal s{a, b};`` / ``Signal s = {a, b};`` with a value for
    every field in order (an aggregate's members are initialised in declaration order, as
    one ``s.f = v;`` a field would set them)."""
    if decl.type != "declaration":
        return None
    typ = decl.child_by_field_name("type")
    decls = decl.children_by_field_name("declarator")
    if typ is None or len(decls) != 1:
        return None
    name = typ.child_by_field_name("name") if typ.type == "struct_specifier" else typ
    if name is None or typ.child_by_field_name("body") is not None or \
            text(name) not in structs:
        return None
    fields = structs[text(name)]
    if decls[0].type == "identifier":
        return text(decls[0]), fields, None
    local, braced = decls[0].child_by_field_name("declarator"), decls[0].child_by_field_name("value")
    if decls[0].type != "init_declarator" or local is None or local.type != "identifier" or \
            braced is None or braced.type != "initializer_list":
        return None
    values = [v for v in braced.named_children if v.type != "comment"]
    if len(values) != len(fields) or any(v.type in ("initializer_list", "initializer_pair")
                                         for v in values):
        return None
    return text(local), fields, values


def _rewrite(body: Node, decl: Node, name: str, fields: dict[str, _Field],
             params: Mapping[str, KernelParam],
             taken: set[str], values: list[Node] | None = None
             ) -> list[tuple[int, int, str]] | None:
    """The edits reading ``name``'s fields as locals, or None where a use breaks the rule.
    ``values``: the braced initializer's, one a field in order (none is then set again)."""
    if values is not None:
        return _braced(body, decl, name, fields, params, taken, values)
    sets: dict[str, Node] = {}  # field -> its one top-level `s.f = v;`
    reads: dict[str, list[Node]] = {}
    for n in walk(body):
        if n.type != "identifier" or text(n) != name or n.parent is None or \
                n.parent == decl:
            continue
        use = _member_use(n, fields)
        if use is None:
            return None
        field = text(use.child_by_field_name("field"))
        up = use.parent
        target = up is not None and up.type in _UPDATES and use in (
            up.child_by_field_name("left"), up.child_by_field_name("argument"))
        if not target:
            if up is not None and up.type == "pointer_expression" and text(up).startswith("&"):
                return None
            reads.setdefault(field, []).append(use)
            continue
        assert up is not None
        stmt = up.parent
        if up.type != "assignment_expression" or text(up.child_by_field_name("operator")) \
                != "=" or stmt is None or stmt.type != "expression_statement" or \
                stmt.parent != body or field in sets or stmt.start_byte < decl.end_byte:
            return None
        sets[field] = stmt
    if set(reads) - set(sets) or any(r.start_byte < sets[f].end_byte
                                     for f, rs in reads.items() for r in rs):
        return None
    assigned = {text(n.child_by_field_name("left") or n.child_by_field_name("argument"))
                for n in walk(body) if n.type in _UPDATES}
    edits: list[tuple[int, int, str]] = []
    kept = False  # a field left as written: the struct's declaration stays
    for field, stmt in sets.items():
        assign = stmt.named_children[0]
        value = assign.child_by_field_name("right")
        assert value is not None
        if value.type == "identifier" and text(value) in params and text(value) not in assigned:
            edits.append((stmt.start_byte, stmt.end_byte, ""))
            edits += [(r.start_byte, r.end_byte, text(value)) for r in reads.get(field, [])]
            continue
        if "*" not in fields[field].declarator:
            kept = True  # a value the families read as the thread's own: left as the field
            continue
        local = fresh(f"{name}_{field}", taken)
        f = fields[field]
        # the value keeps its place: the reads of other fields in it are edited too
        edits.append((stmt.start_byte, value.start_byte,
                      f"{f.head} {f.declarator.format(local)} = "))
        edits += [(r.start_byte, r.end_byte, local) for r in reads.get(field, [])]
    if not edits:
        return None
    return edits if kept else [(decl.start_byte, decl.end_byte, ""), *edits]


def _member_use(name: Node, fields: Mapping[str, object]) -> Node | None:
    """The ``s.f`` that the identifier ``s`` starts, ``f`` one of ``fields``; else None."""
    use = name.parent
    assert use is not None
    member = use.child_by_field_name("field")
    if use.type != "field_expression" or use.child_by_field_name("argument") != name or \
            text(use.child_by_field_name("operator")) != "." or member is None or \
            text(member) not in fields:
        return None
    return use


def _braced(body: Node, decl: Node, name: str, fields: dict[str, _Field],
            params: Mapping[str, KernelParam], taken: set[str], values: list[Node]
            ) -> list[tuple[int, int, str]] | None:
    """:func:`_rewrite` for ``S s{v1, v2, ..};``: a field set to a kernel parameter the
    kernel never assigns reads as it, a pointer field as a local declared with its value
    after the declaration, on its line; the declaration goes where no other field is read,
    else stays (the families read ``s.f`` as the thread's value)."""
    reads: dict[str, list[Node]] = {}
    for n in walk(body):
        if n.type != "identifier" or text(n) != name or n.parent is None or \
                n.start_byte < decl.end_byte:
            continue
        use = _member_use(n, fields)
        if use is None:
            return None
        up = use.parent
        if up is not None and ((up.type in _UPDATES and use in (
                up.child_by_field_name("left"), up.child_by_field_name("argument"))) or (
                up.type == "pointer_expression" and text(up).startswith("&"))):
            return None  # written or addressed: the field is no value set once
        reads.setdefault(text(use.child_by_field_name("field")), []).append(use)
    assigned = {text(n.child_by_field_name("left") or n.child_by_field_name("argument"))
                for n in walk(body) if n.type in _UPDATES}
    edits: list[tuple[int, int, str]] = []
    locals_: list[str] = []
    kept = False
    for (field, f), value in zip(fields.items(), values, strict=True):
        if field not in reads:
            continue
        param = params.get(text(value)) if value.type == "identifier" else None
        if param is not None and not param.is_pointer and text(value) not in assigned and \
                "*" not in f.declarator and \
                [w for w in f.head.split() if w != "const"] == param.base_type.split():
            # a size of the parameter's own type (another would convert it)
            edits += [(r.start_byte, r.end_byte, text(value)) for r in reads[field]]
        elif "*" in f.declarator and not any(t.type == "identifier" and text(t) == name
                                             for t in walk(value)):
            local = fresh(f"{name}_{field}", taken)
            locals_.append(f"{f.head} {f.declarator.format(local)} = {text(value)};")
            edits += [(r.start_byte, r.end_byte, local) for r in reads[field]]
        else:
            kept = True
    if not edits:
        return None
    spelled = " ".join(locals_)
    if kept:
        return [(decl.end_byte, decl.end_byte, f" {spelled}" if spelled else ""), *edits]
    return [(decl.start_byte, decl.end_byte, spelled), *edits]
