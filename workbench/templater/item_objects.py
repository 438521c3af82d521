"""A local object as an item's state (:mod:`.ilp`): a local of a struct or class of the file,
its data members written through ``.`` and ``[]`` and its methods called on it.

Authors keep a thread's working state in a small struct with member functions (``Sym3 A;
A.a[0][0] = src[0]; ... A.rotate(0, 1);``): the state is the thread's registers, as a local
array is, and a method call changes the object it is called on, as an assignment does.
Given several items per thread, each item gets its own object (``Sym3 A[ITEMS]``, each call
``A[it].rotate(..)``), so a method may run per item, in any order among the items, when it
changes nothing but that object: :func:`.ilp_calls.method_effects` reads its body
(:func:`method_of`) as it reads a free function's (no memory write, no static or shared local, no
asm, no non-const reference parameter, calls only of functions free of effects), the
object's data members that are values or arrays counting as its own locals (a pointer
member's target is memory). Pure functions of the parse.
"""

from __future__ import annotations

from collections.abc import Mapping

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource
from workbench.templater.analysis import Definition, line, text, walk

_CLASSES = ("struct_specifier", "class_specifier")


def called_object(call: Node) -> Node | None:
    """The object a method call ``x.m(..)`` (``x[k].m(..)``, ``x.part.m(..)``) is made on:
    the identifier ``x``; None for any other call (``p->m(..)``, ``(x).m(..)`` included)."""
    function = call.child_by_field_name("function")
    if function is None or function.type != "field_expression" or \
            text(function.child_by_field_name("operator")) != ".":
        return None
    root = function.child_by_field_name("argument")
    while root is not None and (root.type == "subscript_expression" or (
            root.type == "field_expression" and
            text(root.child_by_field_name("operator")) == ".")):
        root = root.child_by_field_name("argument")
    return root if root is not None and root.type == "identifier" else None


def method_name(call: Node) -> str:
    """The method a call ``x.m(..)`` names (``m``); "" for any other call."""
    function = call.child_by_field_name("function")
    field = function.child_by_field_name("field") if called_object(call) is not None and \
        function is not None else None
    return text(field) if field is not None else ""


def method_of(source: CudaSource, type_name: str, call: Node) -> tuple[Node, frozenset[str]] | str:
    """(the method ``call`` reaches on an object of ``type_name``, that class's value and
    array data members), else why it cannot be read, with the line."""
    name = method_name(call)
    classes = _classes(source, type_name)
    if len(classes) != 1:
        return f"`{type_name}` is not a struct or class defined once in the file"
    body = classes[0].child_by_field_name("body")
    assert body is not None
    methods = [m for m in body.named_children if m.type == "function_definition" and
               _declared_name(m) == name]
    if len(methods) != 1:
        return f"`{type_name}` has {len(methods)} definitions of a method `{name}` " \
            f"(line {line(classes[0])})"
    return methods[0], _value_members(body)


def member_in_registers(source: CudaSource, defs: Mapping[str, Definition], array: Node) -> bool:
    """``array`` is ``x.m`` with ``x`` a local object (``defs``: the kernel's locals; not a
    pointer, not ``__shared__``) of a struct or class defined once in the file and ``m`` one of
    its value or array data members: ``x.m[i]`` is the thread's registers, as a local
    array's element is, not memory (a pointer member's target is memory)."""
    if array.type != "field_expression" or text(array.child_by_field_name("operator")) != ".":
        return False
    obj, member = array.child_by_field_name("argument"), array.child_by_field_name("field")
    local = defs.get(text(obj)) if obj is not None and obj.type == "identifier" else None
    if local is None or local.is_pointer or local.is_shared or member is None:
        return False
    typ = local.decl.child_by_field_name("type")
    classes = _classes(source, text(typ)) if typ is not None else []
    body = classes[0].child_by_field_name("body") if len(classes) == 1 else None
    return body is not None and text(member) in _value_members(body)


def _classes(source: CudaSource, type_name: str) -> list[Node]:
    """The definitions (with a body) of the struct or class ``type_name`` in the file."""
    return [n for n in walk(source.tree.root_node) if n.type in _CLASSES and
            (c := n.child_by_field_name("name")) is not None and text(c) == type_name and
            n.child_by_field_name("body") is not None]


def _declared_name(fn: Node) -> str:
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    ident = decl.child_by_field_name("declarator") if decl is not None else None
    return text(ident) if ident is not None else ""


def _value_members(body: Node) -> frozenset[str]:
    """The data members of a class body that hold values or arrays (not pointers or
    references, not static)."""
    out: set[str] = set()
    for m in body.named_children:
        if m.type != "field_declaration" or any(text(c) == "static" for c in m.children):
            continue
        for d in m.children_by_field_name("declarator"):
            while d.type == "array_declarator" and \
                    (inner := d.child_by_field_name("declarator")) is not None:
                d = inner
            if d.type == "field_identifier":
                out.add(text(d))
    return frozenset(out)
