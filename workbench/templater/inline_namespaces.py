"""A file's own namespaces opened, before :mod:`.inline_calls` inlines what the entry calls.

Authors group a kernel's helpers and constants in a namespace and call them qualified:
``namespace geo { enum { BLOCK = 256 }; template <int TILE> __device__ void body(..) }``
called as ``geo::body<geo::BLOCK>(..)`` (or through an alias, ``namespace g = geo;
g::body<..>``, or after ``using namespace geo;``). A namespace names nothing the compiler
runs: lookup finds the same entities when every namespace the file defines is opened into
the file scope and each qualifier naming one is dropped, so long as no name is then found
twice. Every pass after this one reads the file's scope (the inliner's callees and
template arguments, the named constants, the macros), so this pass writes the file so:
each ``namespace N {`` and its closing brace become blank text on their lines (every line
keeps its number), ``N::`` before a name is dropped where ``N`` is a namespace of the file
or an alias of one, and ``using namespace N;``, ``using N::x;`` and ``namespace a = N;``
become blank. A namespace the file does not define (``std::``, ``cub::``) stays. Only a
file whose entry calls a function through one of its namespaces is opened: a qualified
constant alone is read by :mod:`.reduce_consts`, which keeps the author's spelling.

Legal only when (else refused with the reason and the line, the source kept as written):
no name is declared in two of the scopes opened into one (the file's and each namespace's:
``geo::f`` beside a file-scope ``f``, ``a::N`` beside ``b::N``), and no qualified use's name
is declared again in the function that reads it (``geo::BLOCK`` read where a local
``BLOCK`` is declared would then read the local).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.cuda_source import parse_cuda
from workbench.core.errors import CudaSourceError
from workbench.templater.analysis import text, walk
from workbench.templater.inline_bind import Refused, declared, function_name
from workbench.templater.records import Finding

TRANSFORM = "NAMESPACE"
#: Children of a scope that declare names in it only through what they hold.
_HOLDERS = ("template_declaration", "linkage_specification", "declaration_list")
#: Type specifiers whose name (and, unscoped, whose enumerators) a scope declares.
_TYPES = ("struct_specifier", "class_specifier", "union_specifier", "enum_specifier")


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    new: str


def open_namespaces(source_text: str, entry: str | None,
                    file: str) -> tuple[str, tuple[Finding, ...]]:
    """``source_text`` with the namespaces it defines opened into its file scope (see the
    module doc), and what was done or refused; unchanged where ``entry`` calls nothing
    through a namespace of the file (a qualified constant it reads is
    :func:`~.reduce_consts.spell_members`'s, which keeps the author's spelling) or the
    source does not parse."""
    try:
        source = parse_cuda(source_text, file)
        kernel = source.function_node(source.kernel(entry))
    except CudaSourceError:
        return source_text, ()
    root = source.tree.root_node
    spaces = [n for n in walk(root) if n.type == "namespace_definition"]
    names = _own_names(root, spaces)
    if not any(n.type == "call_expression" and _dropped(n.child_by_field_name("function"),
                                                        names) for n in walk(kernel)):
        return source_text, ()
    try:
        edits, told = _opened(root, spaces)
    except Refused as refused:
        return source_text, (Finding(TRANSFORM, False, f"the file's namespaces are not opened: "
                                     f"{refused.reason}", refused.line),)
    if not edits:
        return source_text, ()
    data = source_text.encode()
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        data = data[:e.start] + e.new.encode() + data[e.end:]
    return data.decode(), (Finding(TRANSFORM, True, told, spaces[0].start_point[0] + 1),)


def _opened(root: Node, spaces: list[Node]) -> tuple[list[_Edit], str]:
    """The edits that open ``spaces`` and what they do; raises Refused (see the module doc)."""
    nested = next((n for n in spaces if (name := n.child_by_field_name("name")) is not None
                   and name.type != "namespace_identifier"), None)
    if nested is not None:
        raise Refused(f"namespace {text(nested.child_by_field_name('name'))} is nested in "
                      "one definition (a::b): open each level in its own", nested)
    names = _own_names(root, spaces)
    aliases = _own_aliases(root, spaces)
    _unique([root, *spaces])
    edits = [e for n in spaces for e in _braces(n)]
    blanked = aliases + [n for n in walk(root) if n.type == "using_declaration" and
                         _names_space(n, names)]
    edits += [_blank(n) for n in blanked]
    uses = [n for n in walk(root) if _dropped(n, names) and
            not any(b.start_byte <= n.start_byte < b.end_byte for b in blanked)]
    if not uses and not blanked:
        return [], ""  # every name is read unqualified already: the analysis sees them
    for use in uses:
        _not_shadowed(use)
        name = use.child_by_field_name("name")
        assert name is not None  # a qualified identifier always names what it qualifies
        edits.append(_Edit(use.start_byte, name.start_byte, ""))
    spelled = ", ".join(sorted(text(n.child_by_field_name("name")) for n in spaces
                               if n.child_by_field_name("name") is not None)) or "(unnamed)"
    return edits, (f"namespace(s) {spelled} opened into the file scope: {len(uses)} qualified "
                   f"use(s) read by their names" + (f", {len(aliases)} alias(es) dropped"
                                                    if aliases else ""))


def _own_aliases(root: Node, spaces: list[Node]) -> list[Node]:
    """The file's ``namespace a = N;`` whose ``N`` is a namespace the file defines (an alias
    of a header's namespace, ``namespace cg = cooperative_groups;``, stays as written)."""
    own = {text(name) for n in spaces if (name := n.child_by_field_name("name")) is not None}
    return [n for n in walk(root) if n.type == "namespace_alias_definition" and all(
        part in own for part in "".join(text(n.named_children[-1]).split())
        .removeprefix("::").split("::"))]  # a nested one's path too (sm = special::miller)


def _own_names(root: Node, spaces: list[Node]) -> set[str]:
    """The qualifiers this pass drops: the file's namespaces and its aliases of them."""
    return {text(n.child_by_field_name("name")) for n in [*spaces, *_own_aliases(root, spaces)]
            if n.child_by_field_name("name") is not None}


def _unique(scopes: list[Node]) -> None:
    """Refuse a name declared in two of ``scopes`` (the file and its namespaces)."""
    owner: dict[str, Node] = {}
    for scope in scopes:
        body = scope.child_by_field_name("body") if scope.type == "namespace_definition" \
            else scope
        if body is None:
            continue
        for name, node in sorted(set(_declares(body)), key=lambda p: p[1].start_byte):
            first = owner.setdefault(name, scope)
            if first is not scope:
                raise Refused(f"{name} is declared in {_spelled(first)} and again in "
                              f"{_spelled(scope)}: opened, one would hide the other", node)


def _spelled(scope: Node) -> str:
    if scope.type != "namespace_definition":
        return "the file scope"
    name = scope.child_by_field_name("name")
    return f"namespace {text(name)}" if name is not None else "an unnamed namespace"


def _declares(body: Node) -> list[tuple[str, Node]]:
    """(name, node) of each name a scope's body declares itself (not its nested namespaces'
    names, which :func:`_unique` reads as scopes of their own; their own names are)."""
    out: list[tuple[str, Node]] = []
    for child in body.named_children:
        if child.type in _HOLDERS:
            out += _declares(child)
        elif child.type == "function_definition" and function_name(child):
            out.append((function_name(child), child))
        elif child.type == "namespace_definition" and child.child_by_field_name("name"):
            out.append((text(child.child_by_field_name("name")), child))
        elif child.type in ("declaration", "type_definition", "alias_declaration", *_TYPES):
            out += _declared_here(child)
    return out


def _declared_here(node: Node) -> list[tuple[str, Node]]:
    """Names a declaration at a scope's top declares: its declarators (a variable, a
    function), the types it defines and an unscoped enum's enumerators."""
    out = [(name, nodes[0]) for name, nodes in declared(node).items()
           if nodes[0].parent is not None and _outermost(nodes[0], node)]
    if node.type == "alias_declaration" and node.child_by_field_name("name") is not None:
        out.append((text(node.child_by_field_name("name")), node))
    if node.type == "type_definition":
        out += [(text(d), d) for d in node.children_by_field_name("declarator")
                if d.type == "type_identifier"]
    for spec in [node] if node.type in _TYPES else \
            [c for c in node.children if c.type in _TYPES]:
        name = spec.child_by_field_name("name")
        if name is not None:
            out.append((text(name), spec))
        if spec.type == "enum_specifier" and not any(c.type in ("class", "struct")
                                                     for c in spec.children):
            out += [(text(e.child_by_field_name("name")), e) for e in walk(spec)
                    if e.type == "enumerator"]
    return out


def _outermost(name: Node, decl: Node) -> bool:
    """Whether ``name`` is declared by ``decl`` itself, not by a function's parameter or
    body under it."""
    up = name.parent
    while up is not None and up is not decl:
        if up.type in ("parameter_list", "compound_statement", "field_declaration_list"):
            return False
        up = up.parent
    return True


def _braces(space: Node) -> list[_Edit]:
    """``namespace N {`` and its closing brace as blank text (line breaks kept)."""
    body = space.child_by_field_name("body")
    if body is None or body.child_count < 2:
        raise Refused("a namespace without a body", space)
    head_end = body.children[0].end_byte  # the opening brace
    close = body.children[-1]
    return [_Edit(space.start_byte, head_end, _lines(space, space.start_byte, head_end)),
            _Edit(close.start_byte, close.end_byte, "")]


def _blank(node: Node) -> _Edit:
    return _Edit(node.start_byte, node.end_byte,
                 _lines(node, node.start_byte, node.end_byte))


def _lines(node: Node, start: int, end: int) -> str:
    """The line breaks of ``node``'s text from byte ``start`` to ``end``."""
    return "\n" * node.text[start - node.start_byte:end - node.start_byte].count(b"\n") \
        if node.text is not None else ""


def _names_space(using: Node, names: set[str]) -> bool:
    """``using namespace N;`` or ``using N::x;`` with ``N`` the file's."""
    if any(c.type == "namespace" for c in using.children):
        return any(text(c) in names for c in using.named_children)
    return any(_dropped(c, names) for c in using.named_children)


def _dropped(node: Node | None, names: set[str]) -> bool:
    """A qualified identifier whose scope is a namespace of the file (or an alias of one)."""
    scope = node.child_by_field_name("scope") if node is not None and \
        node.type == "qualified_identifier" else None
    return scope is not None and scope.type == "namespace_identifier" and text(scope) in names


def _not_shadowed(use: Node) -> None:
    """Refuse a qualified use whose bare name the function around it declares again."""
    name = use.child_by_field_name("name")
    while name is not None and name.type in ("qualified_identifier", "template_function",
                                             "template_type"):
        name = name.child_by_field_name("name")
    up = use.parent
    while up is not None and up.type != "function_definition":
        up = up.parent
    if name is None or up is None:
        return
    if text(name) in declared(up) or text(name) in _template_names(up):
        raise Refused(f"`{text(use)}` is read where {text(name)} is declared again: "
                      "unqualified, it would read that one", use)


def _template_names(fn: Node) -> set[str]:
    """The template parameters of ``fn``'s template declaration."""
    outer = fn.parent
    params = outer.child_by_field_name("parameters") if outer is not None and \
        outer.type == "template_declaration" else None
    if params is None:
        return set()
    types = {text(c) for p in params.named_children
             if p.type in ("type_parameter_declaration", "optional_type_parameter_declaration")
             for c in p.named_children if c.type == "type_identifier"}
    return types | set(declared(params))
