"""A thread's record read or written whole through a struct of one element type, read as
its elements before the analysis (issue 28: round 31c, verlet_orbit_tpl written with
``struct Particle { float x, y, vx, vy; };``).

Authors of array-of-structs kernels often view a kernel's ``float*`` as an array of their
record struct: ``Particle p = reinterpret_cast<const Particle*>(state)[i];`` at the top and
``reinterpret_cast<Particle*>(out)[i] = p;`` at the end. The families read elements of a
kernel pointer (STAGE stages ``state[4 * i + c]`` through shared memory); a struct read
through a cast pointer is none, so the record went unstaged ("`(state)` is not a record
access"). A struct whose R members all have the pointer's element type lies in memory as R
consecutive elements (no padding between members of one type, none after), so the read is
``Particle p{state[R * i + 0], .., state[R * i + R - 1]};`` (the members in order, an
aggregate's braced initializer) and the store is ``out[R * i + c] = p.m;`` for each member
in order: the same bytes read and written, the same program; the compiler emits R element
accesses for either (the struct's alignment is its element's).

Rewritten only where (else left as written, silently: the families then refuse with their
own line): the struct is defined once at file scope with data members only, each of the
pointer's element type (one or more plain declarators, no arrays, bit fields or default
values), without an alignment (``alignas``, ``__align__``, ``__attribute__``: an aligned
struct is one vector access as written, which R element accesses are not); the pointer is a
parameter of the kernel it never assigns; the cast is ``reinterpret_cast<S*>(P)`` or ``(S*)
P`` (``const`` allowed) subscripted once, ``[E]``, with an index that calls, assigns and
steps nothing (it is then read R times); a read is one declaration's value (``S v = ..;``
of the struct's type), a store a statement of its own in a block assigning a local's value
(``.. = v;``); and the access lies on one line. Every line keeps its number.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import text, tree_root, walk
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import entry_body


@dataclass(frozen=True)
class RecordStruct:
    """A file-scope struct of ``fields`` (in order), each of type ``element``."""

    name: str
    element: str
    fields: tuple[str, ...]


def record_structs(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each whole-record read or store through a record struct written as
    its elements (see the module doc); unchanged when there is none."""
    body = entry_body(current, entry)
    if body is None or body.parent is None:
        return current
    root = tree_root(body)
    structs = _structs(root)
    if not structs:
        return current
    pointers = _pointer_params(body.parent, body)
    edits: list[tuple[int, int, str]] = []
    for n in walk(body):
        access = _access(n, structs, pointers) if n.type == "subscript_expression" else None
        if access is None or n.start_point[0] != n.end_point[0]:
            continue
        record, pointer, index = access
        edit = _read(n, record, pointer, index) or _store(n, record, pointer, index)
        if edit is not None:
            edits.append(edit)
    return current.edited(edits) if edits else current


def _structs(root: Node) -> dict[str, RecordStruct]:
    """The file's record structs by name (see the module doc), each defined once."""
    found: dict[str, RecordStruct | None] = {}
    for n in walk(root):
        if n.type != "struct_specifier" or n.child_by_field_name("body") is None:
            continue
        name_node = n.child_by_field_name("name")
        if name_node is None:
            continue
        name = text(name_node)
        found[name] = None if name in found else _record(n, name)
    return {k: v for k, v in found.items() if v is not None}


def _record(n: Node, name: str) -> RecordStruct | None:
    """The struct ``n`` as a record struct, or None."""
    outer = n.parent
    if outer is None or outer.type not in ("translation_unit", "declaration") or \
            any(word in text(outer if outer.type == "declaration" else n)
                for word in ("alignas", "__align__", "__attribute__")):
        return None
    if outer.type == "declaration" and (outer.parent is None or
                                        outer.parent.type != "translation_unit"):
        return None
    body = n.child_by_field_name("body")
    assert body is not None
    element = ""
    fields: list[str] = []
    for member in body.named_children:
        if member.type == "comment":
            continue
        typ = member.child_by_field_name("type")
        declarators = member.children_by_field_name("declarator")
        if member.type != "field_declaration" or typ is None or not declarators or \
                typ.type != "primitive_type" or any(
                    c.type in ("type_qualifier", "storage_class_specifier", "bitfield_clause")
                    or c.type == "=" for c in member.children):
            return None
        if element and text(typ) != element:
            return None
        element = text(typ)
        for d in declarators:
            if d.type != "field_identifier":
                return None
            fields.append(text(d))
    return RecordStruct(name, element, tuple(fields)) if fields else None


def _pointer_params(fn: Node, body: Node) -> dict[str, str]:
    """The kernel's pointer parameters it never assigns or steps -> their element type."""
    out: dict[str, str] = {}
    declarator = fn.child_by_field_name("declarator")
    params = declarator.child_by_field_name("parameters") if declarator is not None else None
    for p in params.named_children if params is not None else ():
        typ, d = p.child_by_field_name("type"), p.child_by_field_name("declarator")
        if typ is None or d is None or d.type != "pointer_declarator" or \
                typ.type != "primitive_type":
            continue
        inner = d.child_by_field_name("declarator")
        if inner is not None and inner.type == "identifier":
            out[text(inner)] = text(typ)
    for n in walk(body):
        target = n.child_by_field_name("left") if n.type == "assignment_expression" else \
            n.child_by_field_name("argument") if n.type == "update_expression" else None
        if target is not None and target.type == "identifier":
            out.pop(text(target), None)
    return out


def _access(n: Node, structs: dict[str, RecordStruct], pointers: dict[str, str]
            ) -> tuple[RecordStruct, str, Node] | None:
    """(the struct, the pointer, the index) where ``n`` is ``cast<S*>(P)[E]``."""
    array, index = n.child_by_field_name("argument"), n.child_by_field_name("indices")
    if array is None or index is None or index.named_child_count != 1:
        return None
    inner = index.named_children[0]
    while array.type == "parenthesized_expression" and array.named_child_count == 1:
        array = array.named_children[0]
    cast = _cast(array)
    if cast is None:
        return None
    type_name, pointer = cast
    record = structs.get(type_name)
    if record is None or pointers.get(pointer) != record.element or any(
            m.type in ("call_expression", "assignment_expression", "update_expression",
                       "comma_expression") for m in walk(inner)):
        return None
    return record, pointer, inner


def _cast(node: Node) -> tuple[str, str] | None:
    """(S, P) where ``node`` is ``reinterpret_cast<S*>(P)`` or ``(S*)P`` (``const`` allowed)."""
    descriptor: Node | None
    value: Node | None
    if node.type == "call_expression":
        function, args = node.child_by_field_name("function"), \
            node.child_by_field_name("arguments")
        name = function.child_by_field_name("name") if function is not None else None
        if function is None or args is None or function.type != "template_function" or \
                name is None or text(name) != "reinterpret_cast" or \
                args.named_child_count != 1:
            return None
        targs = function.child_by_field_name("arguments")
        descriptor = targs.named_children[0] if targs is not None and \
            targs.named_child_count == 1 else None
        value = args.named_children[0]
    elif node.type == "cast_expression":
        descriptor, value = node.child_by_field_name("type"), node.child_by_field_name("value")
    else:
        return None
    if descriptor is None or value is None or descriptor.type != "type_descriptor" or \
            value.type != "identifier":
        return None
    typ, d = descriptor.child_by_field_name("type"), descriptor.child_by_field_name("declarator")
    if typ is None or d is None or typ.type != "type_identifier" or \
            d.type != "abstract_pointer_declarator" or d.named_child_count or \
            any(c.type == "type_qualifier" and text(c) != "const" for c in descriptor.children):
        return None
    return text(typ), text(value)


def _elements(record: RecordStruct, pointer: str, index: Node) -> list[str]:
    at = text(index) if index.type in ("identifier", "number_literal") else f"({text(index)})"
    width = len(record.fields)
    return [f"{pointer}[{width} * {at} + {c}]" for c in range(width)]


def _read(n: Node, record: RecordStruct, pointer: str, index: Node
          ) -> tuple[int, int, str] | None:
    """``S v = cast[E];`` -> ``S v{P[R * E + 0], ..};``."""
    init = n.parent
    decl = init.parent if init is not None else None
    if init is None or decl is None or init.type != "init_declarator" or \
            init.child_by_field_name("value") != n or decl.type != "declaration" or \
            len(decl.children_by_field_name("declarator")) != 1:
        return None
    typ = decl.child_by_field_name("type")
    name = init.child_by_field_name("declarator")
    if typ is None or name is None or text(typ) != record.name or name.type != "identifier":
        return None
    return name.end_byte, n.end_byte, "{" + ", ".join(_elements(record, pointer, index)) + "}"


def _store(n: Node, record: RecordStruct, pointer: str, index: Node
           ) -> tuple[int, int, str] | None:
    """``cast[E] = v;`` (a statement in a block) -> ``P[R * E + c] = v.m;`` a member."""
    assign = n.parent
    statement = assign.parent if assign is not None else None
    if assign is None or statement is None or assign.type != "assignment_expression" or \
            assign.child_by_field_name("left") != n or \
            text(assign.child_by_field_name("operator")) != "=" or \
            statement.type != "expression_statement" or statement.parent is None or \
            statement.parent.type != "compound_statement":
        return None
    value = assign.child_by_field_name("right")
    if value is None or value.type != "identifier":
        return None
    stores = [f"{element} = {text(value)}.{field};" for element, field in
              zip(_elements(record, pointer, index), record.fields, strict=True)]
    return statement.start_byte, statement.end_byte, " ".join(stores)
