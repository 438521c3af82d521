"""The constants a helper's ``template <int N>`` parameter takes: the file's instantiations.

A helper written over a template parameter (``template <int N> __device__ int ring(int i) {
return i % N; }``) is, in the file, only ever the functions its instantiations make: each
use of its name is ``ring<A>(..)`` with the argument ``A`` spelled at the call. Where every
use spells it, and each ``A`` is a constant (a literal, an integer macro or file constant, a
``const``/``constexpr`` local of the calling function set to a constant) or the calling
helper's own template parameter (``ring<N>`` inside ``template <int N> catmull_rom``,
followed to that helper's instantiations in turn: ``catmull_rom<kKnots>(..)``), the parameter
takes exactly those values; a transform may read it as a constant of those values (the
remainder by it a power of two in every instantiation: :mod:`.index_mask`). A use that spells
no argument (deduced, or the name taken as a value), an argument of any other form, or a cycle
of helpers leaves the parameter unknown (None).
"""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from workbench.templater.analysis import _CONSTANTS, inside, int_expr_value, strip, text, walk

_INTEGRAL = ("int", "unsigned", "unsigned int", "long", "long long", "size_t", "short",
             "unsigned long", "unsigned long long")


def template_function(root: Node, name: str) -> Node | None:
    """The one ``function_definition`` of ``name`` that a ``template <..>`` declares."""
    found = [fn for fn in _definitions(root) if _name(fn) == name]
    return found[0] if len(found) == 1 and found[0].parent is not None and \
        found[0].parent.type == "template_declaration" else None


def template_values(root: Node, fn: Node, param: str,
                    seen: frozenset[str] = frozenset()) -> frozenset[int] | None:
    """The values the integral template parameter ``param`` of the template function ``fn``
    takes over the file's instantiations (above), or None where one is not known."""
    name = _name(fn)
    position = _position(fn, param)
    if name is None or position is None or name in seen or fn.parent is None:
        return None
    uses = [n for n in walk(root) if n.type == "identifier" and text(n) == name and
            not inside(n, fn.parent)]
    values: set[int] = set()
    for use in uses:
        spelled = use.parent
        args = spelled.child_by_field_name("arguments") if spelled is not None and \
            spelled.type == "template_function" else None
        given = [a for a in args.named_children if a.type != "comment"] if args else []
        caller = _enclosing(use)
        if position >= len(given) or caller is None or spelled is None or \
                spelled.parent is None or spelled.parent.type != "call_expression":
            return None
        got = _argument_values(root, caller, given[position], seen | {name})
        if got is None:
            return None
        values |= got
    return frozenset(values) if values else None


def _argument_values(root: Node, caller: Node, arg: Node,
                     seen: frozenset[str]) -> frozenset[int] | None:
    """The values a template argument spelled in ``caller`` stands for, or None."""
    node = strip(arg.named_children[0]) if arg.type == "type_descriptor" and \
        arg.named_child_count == 1 else strip(arg)
    value = int_expr_value(node)
    if value is not None:
        return frozenset({value})
    if node.type not in ("identifier", "type_identifier"):
        return None
    name = text(node)
    constants = _CONSTANTS.get() or {}
    if name in constants:
        return frozenset({constants[name]})
    if _position(caller, name) is not None:
        return template_values(root, caller, name, seen)
    local = _constant_local(caller, name)
    return None if local is None else frozenset({local})


def _constant_local(fn: Node, name: str) -> int | None:
    """The constant of ``const``/``constexpr`` integral ``name`` declared once in ``fn``."""
    body = fn.child_by_field_name("body")
    found = []
    for d in walk(body) if body is not None else ():
        if d.type != "declaration":
            continue
        for init in d.named_children:
            target = init.child_by_field_name("declarator") \
                if init.type == "init_declarator" else init
            if target is not None and text(target) == name:
                found.append((d, init))
    if len(found) != 1:
        return None
    decl, init = found[0]
    qualifiers = {text(c) for c in decl.children if c.type == "type_qualifier"}
    kind = decl.child_by_field_name("type")
    value = init.child_by_field_name("value") if init.type == "init_declarator" else None
    if not qualifiers & {"const", "constexpr"} or kind is None or \
            text(kind) not in _INTEGRAL or value is None:
        return None
    return int_expr_value(value)


def _position(fn: Node, param: str) -> int | None:
    """Where ``param`` stands in ``fn``'s template parameter list, an integral value
    parameter (``int N``), or None."""
    outer = fn.parent
    plist = outer.child_by_field_name("parameters") if outer is not None and \
        outer.type == "template_declaration" else None
    params = [c for c in plist.named_children if c.type != "comment"] if plist else []
    for k, p in enumerate(params):
        declarator, kind = p.child_by_field_name("declarator"), p.child_by_field_name("type")
        if p.type == "parameter_declaration" and declarator is not None and \
                text(declarator) == param and kind is not None and text(kind) in _INTEGRAL:
            return k
    return None


def _enclosing(node: Node) -> Node | None:
    """The function definition ``node`` stands in."""
    up = node.parent
    while up is not None and up.type != "function_definition":
        up = up.parent
    return up


def _definitions(root: Node) -> Iterator[Node]:
    return (n for n in walk(root) if n.type == "function_definition")


def _name(fn: Node) -> str | None:
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    ident = decl.child_by_field_name("declarator") if decl is not None else None
    return text(ident) if ident is not None else None
