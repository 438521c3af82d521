"""File-scope integer constants the macro reader does not see, read where a family needs one.

:func:`workbench.templater.macros.integer_macros` reads ``#define NAME 264`` (a comment after the
value included) defined once; a reduction or warp-per-row kernel also names its grid or its
warps per block as ``constexpr int kWarps = 8;`` at file or namespace scope. :func:`constant` gives such a name's value when the file defines it
exactly once with an integer literal; anything else (two definitions, an expression, a
definition under ``#if`` branches) is None, so the caller refuses or looks no further.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.cuda_source import parse_cuda
from workbench.templater.analysis import int_expr_value, int_value, strip, text, walk
from workbench.templater.macros import macro_integer
from workbench.templater.plan import Plan

_CONST_TYPES = {"int", "unsigned", "unsigned int", "long", "long long", "size_t", "int32_t",
                "uint32_t"}


def _definitions(plan: Plan, name: str) -> list[int | None]:
    """The values of every file-level definition of ``name`` (None: not an integer)."""
    found: list[int | None] = []
    for node in walk(plan.source.tree.root_node):
        if node.type == "preproc_def" and text(node.child_by_field_name("name")) == name:
            value = node.child_by_field_name("value")
            found.append(None if value is None else macro_integer(text(value)))
        elif node.type == "declaration" and _file_scope(node, plan):
            words = {text(c) for c in node.children if c.type == "type_qualifier"}
            typ = " ".join(text(node.child_by_field_name("type")).split())
            for decl in node.children_by_field_name("declarator"):
                if decl.type != "init_declarator" or \
                        text(decl.child_by_field_name("declarator")) != name:
                    continue
                ok = typ in _CONST_TYPES and words & {"constexpr", "const"}
                found.append(_folded(plan, decl.child_by_field_name("value")) if ok else None)
    return found


def _folded(plan: Plan, value: Node | None) -> int | None:
    """The integer ``value`` folds to: literals, macros and the file's other constants over
    + - * / << >> (``constexpr int kWarps = kThreads / kWarp;``), else None."""
    if value is None:
        return None
    names = {text(n): v for n in walk(value)
             if n.type == "identifier" and (v := constant(plan, n)) is not None}
    return int_expr_value(value, names)


def _file_scope(node: Node, plan: Plan) -> bool:
    """``node`` is outside every function (the file or a namespace)."""
    up = node.parent
    while up is not None:
        if up.type == "function_definition":
            return False
        up = up.parent
    return True


def constant(plan: Plan, node: Node | None) -> int | None:
    """``node``'s integer value: a literal or a macro the reader knows (:func:`int_value`),
    else a name the file defines once as above; None otherwise."""
    value = int_value(node)
    if value is not None or node is None:
        return value
    node = strip(node)
    if node.type != "identifier":
        return None
    defs = _definitions(plan, text(node))
    return defs[0] if len(defs) == 1 else None



# -- named members: ``Tile::ROWS``, ``cfg::BW``, ``Dim::A`` ----------------------------------
#
# Every transform reads a constant through an ``identifier`` node (a literal's stand-in), so a
# use spelled ``Tile::ROWS`` is given, for the templater's passes only, the identifier of the
# same length ``Tile__ROWS`` (offsets unchanged), read like a file-scope constexpr; the
# rendered template and its notes get the author's spelling back.

#: Scopes a member's qualified name is built from (the struct's or the namespace's name).
_SCOPES = ("struct_specifier", "class_specifier", "namespace_definition", "enum_specifier")


@dataclass(frozen=True)
class MemberSpelling:
    """The source with each qualified constant use as one identifier, and the way back."""

    source_text: str
    values: dict[str, int]  # Tile__ROWS -> 16 (and a plain file-scope enum's bare names)
    back: dict[str, str]  # Tile__ROWS -> Tile::ROWS
    literals: dict[str, tuple[int, int]]  # Tile__ROWS -> the byte span of its 16

    def restore(self, rendered: str) -> str:
        if not self.back:
            return rendered
        names = "|".join(re.escape(k) for k in sorted(self.back, key=len, reverse=True))
        return re.sub(rf"\b(?:{names})\b", lambda m: self.back[m.group()], rendered)


def spell_members(source_text: str, file: str) -> MemberSpelling:
    """Read the file's named member constants (:func:`member_constants`) and give each of
    their qualified uses an identifier spelling (see above); a spelling that would collide
    with a name the source already has is left as written."""
    root = parse_cuda(source_text, file).tree.root_node
    table = _member_table(root)
    members = {k: v for k, (v, _) in table.items()}
    data = source_text.encode()
    edits: list[tuple[int, int, str]] = []
    values = {k: v for k, v in members.items() if "::" not in k}
    back: dict[str, str] = {}
    literals: dict[str, tuple[int, int]] = {}
    for n in walk(root):
        if n.type != "qualified_identifier" or (n.parent is not None and
                                               n.parent.type == "qualified_identifier"):
            continue
        raw = text(n)
        value = members.get("".join(raw.split()))
        name = re.sub(r"\W", "_", raw)
        if value is None or not raw.isascii() or \
                (name not in back and re.search(rf"\b{name}\b", source_text)):
            continue
        edits.append((n.start_byte, n.end_byte, name))
        values[name], back[name] = value, raw
        literal = table["".join(raw.split())][1]
        literals[name] = (literal.start_byte, literal.end_byte)  # offsets kept: same length
    for start, end, name in sorted(edits, reverse=True):
        data = data[:start] + name.encode() + data[end:]
    return MemberSpelling(data.decode(), values, back, literals)


def member_constants(root: Node) -> dict[str, int]:
    """Integer constants a kernel reads through a qualified name, keyed by that name without
    spaces: a file-scope struct's or class's ``static constexpr int ROWS = 16;`` (or
    ``static const``) as ``Tile::ROWS``, a namespace's ``constexpr int`` as ``cfg::BW``, an
    enumerator with an explicit value (``enum { DEPTH = 16 }`` in a struct: ``Tile::DEPTH``;
    ``enum class Dim { A = 8 }``: ``Dim::A``; a plain file-scope enum's also by its bare
    name). Left out: a name defined more than once, a value that is not an integer literal or an integer
    expression of literals and members defined before it (``W = 2 * R + 1``),
    anything inside a template (it may depend on a template parameter) or a function, an
    unnamed struct's members (no name reaches them)."""
    return {k: v for k, (v, _) in _member_table(root).items()}


def _member_table(root: Node) -> dict[str, tuple[int, Node]]:
    """:func:`member_constants` with each value's literal (the node a lift rewrites)."""
    found: dict[str, list[tuple[int, Node] | None]] = {}
    for node in walk(root):
        for name, literal in _member_values(node):
            scope = _scope(node)
            if scope is None:
                continue
            value = _literal(literal)
            if value is None and literal is not None:  # W = 2 * R + 1 over R = 2 before it
                value = int_expr_value(literal, _siblings(found, scope))
            for key in _keys(node, scope, name):
                found.setdefault(key, []).append(None if value is None or literal is None
                                                 else (value, literal))
    return {k: v[0] for k, v in found.items() if len(v) == 1 and v[0] is not None}


def _siblings(found: dict[str, list[tuple[int, Node] | None]],
              scope: list[str]) -> dict[str, int]:
    """The constants defined once so far that a member of ``scope`` reads: its siblings by
    their bare names and every member by its qualified name."""
    prefix = "::".join(scope) + "::"
    known = {k: v[0][0] for k, v in found.items() if len(v) == 1 and v[0] is not None}
    return {**known, **{k[len(prefix):]: v for k, v in known.items()
                        if k.startswith(prefix) and "::" not in k[len(prefix):]}}


def _member_values(node: Node) -> list[tuple[str, Node | None]]:
    """(name, value) of each constant ``node`` defines: a static const member's declarators,
    a namespace's const declaration's, or one enumerator (None: not a constant's value)."""
    if node.type == "enumerator":
        value = node.child_by_field_name("value")
        return [] if value is None else [(text(node.child_by_field_name("name")), value)]
    if node.type not in ("field_declaration", "declaration") or node.parent is None or \
            node.parent.type not in ("field_declaration_list", "declaration_list"):
        return []
    words = {text(c) for c in node.children if c.type in ("type_qualifier",
                                                          "storage_class_specifier")}
    typ = " ".join(text(node.child_by_field_name("type")).split())
    static = "static" in words or node.type == "declaration"  # a namespace's: one object
    ok = static and typ in _CONST_TYPES and bool(words & {"constexpr", "const"})
    out: list[tuple[str, Node | None]] = []
    for i, d in enumerate(node.children):
        field = node.field_name_for_child(i)
        if field == "declarator" and d.type == "field_identifier":  # its default_value follows
            out.append((text(d), None))
        elif field == "default_value" and out and out[-1][1] is None:
            out[-1] = (out[-1][0], d if ok else None)
        elif field == "declarator" and d.type == "init_declarator" and \
                (n := d.child_by_field_name("declarator")) is not None and n.type == "identifier":
            out.append((text(n), d.child_by_field_name("value") if ok else None))
    return out


def _literal(node: Node | None) -> int | None:
    """An integer literal's value (through parentheses and casts), not a macro's."""
    if node is None or strip(node).type != "number_literal":
        return None
    return int_value(node)


def _scope(node: Node) -> list[str] | None:
    """The names from the file down to ``node``'s struct/namespace/enum (``["cfg", "Dim"]``);
    None inside a function or a template, or in an unnamed struct/class."""
    names: list[str] = []
    up = node.parent
    while up is not None:
        if up.type in ("template_declaration", "function_definition"):
            return None
        if up.type in _SCOPES:
            name = up.child_by_field_name("name")
            if name is None and up.type in ("struct_specifier", "class_specifier"):
                return None
            if name is not None:
                names.append(text(name))
        up = up.parent
    return names[::-1]


def _keys(node: Node, scope: list[str], name: str) -> list[str]:
    """The names ``name`` is read by: its qualified name; an unscoped named enum's
    enumerators also by the enclosing scope's (``Tile::DEPTH`` beside ``Tile::E::DEPTH``,
    a file-scope ``enum E { DEPTH }``'s bare ``DEPTH``). A namespace's or the file's own
    declarations by their bare name are :func:`constant`'s."""
    keys = ["::".join([*scope, name])]
    enum = node.parent.parent if node.type == "enumerator" and node.parent else None
    if enum is not None and enum.type == "enum_specifier" and \
            not any(c.type in ("class", "struct") for c in enum.children) and \
            enum.child_by_field_name("name") is not None:
        keys.append("::".join([*scope[:-1], name]))
    return [k for k in keys if "::" in k or node.type == "enumerator"]
