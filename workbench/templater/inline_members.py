"""A kernel's work in a static member function of a struct or class (template), read as the
free function template the compiler instantiates, before :mod:`.inline_calls` inlines it.

Authors group a tile routine with its compile-time sizes in a class template and export one
instance: ``template <int TILE> struct LowerTile { __device__ static void run(..) {..} };``
called as ``LowerTile<16>::run(C, A, n, k)`` by an ``extern "C" __global__`` entry (or a
plain ``struct Tiles { template <int T> __device__ static void run(..) }`` called as
``Tiles::run<16>(..)``). A static member function reads nothing of an object: it is a free
function whose template parameters are its class's followed by its own. This pass writes
it so, ``template <int TILE> __device__ void LowerTile_run(..)`` called as
``LowerTile_run<16>(..)``, which :mod:`.inline_calls` inlines like any function template
(``TILE`` becomes ``#define TILE 16``). Each line keeps its number (the class's head and
its closing brace become blank text on their lines).

Legal only when (else refused with the reason and the line, the source kept as written):
the class is defined once at file scope (no specialisation, no object of it declared with
the definition); its members are static member functions and static constants of a plain
type (``static constexpr int PAD = 1;``, written at the top of each free function's body;
a data member or a type is something the free functions would not see), no member
declaring a constant's name at its top; no member
names the class or another member (a sibling call would need the class's scope); the class
is named nowhere but at the scope of calls ``Class<..>::member(..)``; a call whose class
arguments lean on defaults names no member arguments (the free function's parameters are
the class's, then the member's: an omitted class argument would shift them).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.cuda_source import parse_cuda
from workbench.core.errors import CudaSourceError
from workbench.templater.analysis import inside, text, walk
from workbench.templater.inline_bind import (
    Refused,
    declared,
    fresh,
    names_in,
    template_params,
)
from workbench.templater.records import Finding

TRANSFORM = "INLINE"
_CLASSES = ("struct_specifier", "class_specifier")
_LABELS = frozenset({"{", "}", ":", "comment", "access_specifier"})


@dataclass(frozen=True)
class _Edit:
    """Bytes ``start``..``end`` of the file become ``new``."""

    start: int
    end: int
    new: str


def free_members(source_text: str, entry: str | None, file: str) -> tuple[str, tuple[Finding, ...]]:
    """``source_text`` with each class whose static member ``entry`` calls written as free
    function templates (see the module doc), and what was done or refused; unchanged where
    the entry calls none or the source does not parse."""
    try:
        source = parse_cuda(source_text, file)
        kernel = source.function_node(source.kernel(entry))
    except CudaSourceError:
        return source_text, ()
    root = source.tree.root_node
    data = source.data
    findings: list[Finding] = []
    for name in _called_classes(kernel, _classes(root)):
        try:
            edits, told = _free(root, name)
        except Refused as refused:
            findings.append(Finding(TRANSFORM, False, f"the static members of {name} are not "
                                    f"read as free functions: {refused.reason}", refused.line))
            continue
        for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
            data = data[:e.start] + e.new.encode() + data[e.end:]
        findings.append(Finding(TRANSFORM, True, told, _line(kernel, name)))
        root = parse_cuda(data.decode(), file).tree.root_node
        kernel = _entry(data, file, entry)
    return data.decode(), tuple(findings)


def _entry(data: bytes, file: str, entry: str | None) -> Node:
    source = parse_cuda(data.decode(), file)
    return source.function_node(source.kernel(entry))


def _line(kernel: Node, name: str) -> int:
    calls = [c for c in _member_calls(kernel) if _class_name(c) == name]
    return calls[0].start_point.row + 1 if calls else 0


def _member_calls(scope: Node) -> list[Node]:
    """The calls under ``scope`` whose callee is ``Class<..>::member`` or ``Class::member``."""
    return [n for n in walk(scope) if n.type == "call_expression" and _class_name(n)]


def _class_name(call: Node) -> str:
    function = call.child_by_field_name("function")
    if function is None or function.type != "qualified_identifier":
        return ""
    scope = function.child_by_field_name("scope")
    if scope is not None and scope.type == "template_type":
        scope = scope.child_by_field_name("name")
    if scope is None or scope.type not in ("namespace_identifier", "type_identifier"):
        return ""
    return text(scope)


def _called_classes(kernel: Node, classes: set[str]) -> list[str]:
    """The classes of the file whose members ``kernel`` calls (a namespace's function,
    ``std::min``, is no member)."""
    found: list[str] = []
    for call in _member_calls(kernel):
        if _class_name(call) in classes and _class_name(call) not in found:
            found.append(_class_name(call))
    return found


def _classes(root: Node) -> set[str]:
    return {_base_name(n.child_by_field_name("name")) for n in walk(root)
            if n.type in _CLASSES and n.child_by_field_name("body") is not None}


def _free(root: Node, name: str) -> tuple[list[_Edit], str]:
    """The edits writing class ``name``'s static members as free functions and its calls
    as theirs, and what to tell; raises Refused where that would change the meaning."""
    spec = _definition(root, name)
    outer = spec.parent if spec.parent is not None and \
        spec.parent.type == "template_declaration" else spec
    body = spec.child_by_field_name("body")
    assert body is not None  # _definition keeps definitions only
    tparams = outer.child_by_field_name("parameters") if outer is not spec else None
    class_params = template_params(outer)
    members = _members(body)
    constants = _constants(body, name, set(members))
    taken = {text(n) for n in names_in(root)} | \
        {text(n) for n in walk(root) if n.type == "field_identifier"}
    renamed = {m: fresh(f"{name}_{m}", taken) for m in members}
    _own_names(body, name, set(members))
    edits = [_Edit(outer.start_byte, body.children[0].end_byte,
                   _blank(text(outer)[:body.children[0].end_byte - outer.start_byte]))]
    for child in body.children:
        if child.type in ("access_specifier", ":", "}"):
            edits.append(_Edit(child.start_byte, child.end_byte, _blank(text(child))))
    for decl in constants:
        edits.append(_Edit(decl.start_byte, decl.end_byte, _blank(text(decl))))
    local = " ".join(_local_constant(d) for d in constants)
    after = spec.next_sibling
    if after is not None and after.type == ";":
        edits.append(_Edit(after.start_byte, after.end_byte, " "))
    head = text(tparams)[1:-1].strip() if tparams is not None else ""
    for member, (fn, own) in members.items():
        edits += _member_edits(fn, own, head, renamed[member])
        if local:
            _not_shadowed(fn, constants)
            inner = fn.child_by_field_name("body")
            assert inner is not None
            edits.append(_Edit(inner.children[0].end_byte, inner.children[0].end_byte,
                               f" {local}"))
    calls = _calls_of(root, spec, name)
    for call in calls:
        edits.append(_call_edit(call, renamed, len(class_params)))
    told = ", ".join(f"{name}::{m} as {renamed[m]}" for m in members)
    return edits, (f"the static member functions of {name} read as free function templates "
                   f"({told}): a static member reads no object, its template parameters are "
                   "its class's then its own")


def _definition(root: Node, name: str) -> Node:
    """The one file-scope definition of class ``name`` (refuses a specialisation, a second
    definition, one inside a namespace or function, or one declaring an object)."""
    found = [n for n in walk(root) if n.type in _CLASSES and
             n.child_by_field_name("body") is not None and
             _base_name(n.child_by_field_name("name")) == name]
    if len(found) != 1:
        lines = ", ".join(str(n.start_point.row + 1) for n in found) or "none"
        raise Refused(f"it is defined {len(found)} times (lines {lines}); one definition, "
                      "not specialised, reads as one set of free functions",
                      found[-1] if found else root)
    spec = found[0]
    named = spec.child_by_field_name("name")
    if named is not None and named.type == "template_type":
        raise Refused("its one definition is a specialisation", spec)
    after = spec.next_sibling
    if (spec.parent is not None and spec.parent.type == "declaration") or \
            after is None or after.type != ";":
        raise Refused("its definition declares an object too: its members may read it", spec)
    holder = spec.parent.parent if spec.parent is not None and \
        spec.parent.type == "template_declaration" else spec.parent
    if holder is None or holder.type != "translation_unit":
        raise Refused("it is not defined at file scope (a namespace, a function or a class "
                      "holds it): its members' names would resolve otherwise", spec)
    return spec


def _base_name(node: Node | None) -> str:
    if node is not None and node.type == "template_type":
        node = node.child_by_field_name("name")
    return text(node) if node is not None else ""


def _members(body: Node) -> dict[str, tuple[Node, Node]]:
    """Each static member function's name -> (its definition, the node that holds it: a
    ``template_declaration`` of its own or the definition); refuses any other member."""
    out: dict[str, tuple[Node, Node]] = {}
    for child in body.children:
        if child.type in _LABELS or _is_constant(child):
            continue
        fn = child.children[-1] if child.type == "template_declaration" else child
        if fn.type != "function_definition" or not any(
                c.type == "storage_class_specifier" and text(c) == "static" for c in fn.children):
            raise Refused(f"its member `{' '.join(text(child).split())[:60]}` is not a static "
                          "member function: the free functions would not see it", child)
        name = _function_name(fn)
        if name in out:
            raise Refused(f"its member function {name} is overloaded", child)
        out[name] = (fn, child)
    if not out:
        raise Refused("it has no static member function", body)
    return out


def _is_constant(child: Node) -> bool:
    """``static constexpr int PAD = 1, N = T * T;`` (or ``static const``): a static data
    member of a plain type, every name given its value where it is declared."""
    if child.type != "field_declaration":
        return False
    words = {text(c) for c in child.children if c.type in ("storage_class_specifier",
                                                           "type_qualifier")}
    kind = child.child_by_field_name("type")
    names = child.children_by_field_name("declarator")
    return "static" in words and bool({"const", "constexpr"} & words) and kind is not None \
        and kind.type in ("primitive_type", "sized_type_specifier") and bool(names) and \
        all(n.type == "field_identifier" for n in names) and \
        len(child.children_by_field_name("default_value")) == len(names)


def _constants(body: Node, name: str, members: set[str]) -> list[Node]:
    """The class's static constants (:func:`_is_constant`); their values name neither the
    class nor a member function."""
    out = [c for c in body.children if _is_constant(c)]
    for decl in out:
        for value in decl.children_by_field_name("default_value"):
            for n in names_in(value):
                if text(n) in members | {name}:
                    raise Refused(f"its constant `{' '.join(text(decl).split())}` names "
                                  f"{text(n)}: read in the class's scope", n)
    return out


def _local_constant(decl: Node) -> str:
    """The constant as a local of each free function (``constexpr int PAD = 1;``)."""
    return " ".join(text(c) for c in decl.children if c.type != "storage_class_specifier")\
        .replace(" ,", ",").replace(" ;", ";")


def _not_shadowed(fn: Node, constants: list[Node]) -> None:
    """No parameter or local of ``fn`` is named like a constant put at its top."""
    names = {text(n) for d in constants for n in d.children_by_field_name("declarator")}
    for found, nodes in declared(fn).items():
        if found in names:
            raise Refused(f"its member {_function_name(fn)} declares {found}, a name of the "
                          "class's constants put at the top of its body", nodes[0])


def _function_name(fn: Node) -> str:
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    ident = decl.child_by_field_name("declarator") if decl is not None else None
    return text(ident)


def _name_node(fn: Node) -> Node:
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    ident = decl.child_by_field_name("declarator") if decl is not None else None
    assert ident is not None  # _members kept named definitions only
    return ident


def _own_names(body: Node, name: str, members: set[str]) -> None:
    """No member's body names its class or a member (a sibling call, ``Class::member``)."""
    for child in body.children:
        if child.type in _LABELS or _is_constant(child):
            continue
        fn = child.children[-1] if child.type == "template_declaration" else child
        inner = fn.child_by_field_name("body")
        for n in walk(inner) if inner is not None else []:
            if n.type in ("identifier", "type_identifier", "namespace_identifier",
                          "field_identifier") and text(n) in members | {name}:
                if n.type == "field_identifier" and n.parent is not None and \
                        n.parent.type == "field_expression":
                    continue  # p.run: a field of another object
                raise Refused(f"its member {_function_name(fn)} names {text(n)}: read in the "
                              "class's scope, a free function would not see it", n)


def _member_edits(fn: Node, own: Node, head: str, new_name: str) -> list[_Edit]:
    """``static`` dropped, the name renamed and the class's template parameters put before
    the member's own."""
    edits = [_Edit(c.start_byte, c.end_byte, "") for c in fn.children
             if c.type == "storage_class_specifier" and text(c) == "static"]
    ident = _name_node(fn)
    edits.append(_Edit(ident.start_byte, ident.end_byte, new_name))
    if own.type == "template_declaration":
        plist = own.child_by_field_name("parameters")
        assert plist is not None
        if head:
            edits.append(_Edit(plist.start_byte + 1, plist.start_byte + 1, f"{head}, "))
    elif head:
        edits.append(_Edit(fn.start_byte, fn.start_byte, f"template <{head}> "))
    return edits


def _calls_of(root: Node, spec: Node, name: str) -> list[Node]:
    """The calls ``name<..>::member(..)`` in the file; refuses any other use of ``name``."""
    calls = [c for c in _member_calls(root) if _class_name(c) == name]
    scopes = [c.child_by_field_name("function") for c in calls]
    for n in walk(root):
        if n.type in ("identifier", "type_identifier", "namespace_identifier") and \
                text(n) == name and not inside(n, spec) and \
                not any(s is not None and inside(n, s) for s in scopes):
            raise Refused(f"it is named outside a call of a member (`"
                          f"{' '.join(text(n.parent or n).split())[:60]}`)", n)
    return calls


def _call_edit(call: Node, renamed: dict[str, str], class_params: int) -> _Edit:
    """``Class<a>::m(..)``, ``Class::m<b>(..)``, ``Class<a>::template m<b>(..)`` ->
    ``Class_m<a, b>(..)``."""
    function = call.child_by_field_name("function")
    assert function is not None
    scope = function.child_by_field_name("scope")
    member = function.child_by_field_name("name")
    assert scope is not None and member is not None
    given = _arguments(scope.child_by_field_name("arguments")) if scope.type == "template_type" \
        else []
    if member.type == "dependent_name":
        member = member.named_children[-1]
    own: list[str] = []
    if member.type == "template_function":
        own = _arguments(member.child_by_field_name("arguments"))
        member = member.child_by_field_name("name")
    new = renamed.get(text(member))
    if new is None:
        raise Refused(f"the call names {text(member)}, which is no static member function "
                      "of the class", call)
    if own and len(given) < class_params:
        raise Refused(f"the call gives {len(given)} of the class's {class_params} template "
                      "arguments and names the member's: free, the member's would bind the "
                      "class's parameters", call)
    args = [*given, *own]
    spelled = f"<{', '.join(args)}>" if args or scope.type == "template_type" else ""
    return _Edit(function.start_byte, function.end_byte, new + spelled)


def _arguments(plist: Node | None) -> list[str]:
    return [" ".join(text(a).split()) for a in plist.named_children] if plist is not None else []


def _blank(raw: str) -> str:
    """``raw``'s line breaks alone: the lines after it keep their numbers."""
    return "\n" * raw.count("\n")
