"""File-scope integer constants the macro reader does not see, read where a family needs one.

:func:`workbench.templater.macros.integer_macros` reads ``#define NAME 264`` (a comment after the
value included) defined once; a reduction or warp-per-row kernel also names its grid or its
warps per block as ``constexpr int kWarps = 8;`` at file or namespace scope. :func:`constant` gives such a name's value when the file defines it
exactly once with an integer literal; anything else (two definitions, an expression, a
definition under ``#if`` branches) is None, so the caller refuses or looks no further.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import int_value, strip, text, walk
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
                found.append(int_value(decl.child_by_field_name("value")) if ok else None)
    return found


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
