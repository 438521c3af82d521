"""A variable in parentheses before a minus, read by the parser as a cast, written as the
variable before the analysis (issue 28: set 17's cbrt_newton_f64).

C's grammar cannot tell ``(y) - d`` from a cast of ``-d`` to a type ``y`` without knowing
whether ``y`` names a type; the compiler knows (``y`` is a ``double``), tree-sitter does
not and reads a cast to the type ``y``. A function-like macro writes every parameter in
parentheses (``#define NEWTON_STEP(y, x) ((y) - ((y) * (y) * (y) - (x)) / (3.0 * (y) *
(y)))``), so its expansion holds exactly this form, and the families then miss that read of
``y``: the items' rewrite gave each item its own ``y[wb_it]`` everywhere but there, and the
lift did not compile. Dropping the parentheses around such a name is the same program (a
name is a primary expression, so ``y - d`` groups as ``(y) - d`` does) and the tree the
families read then is the compiler's.

Rewritten only where the cast's type is one bare identifier that the file declares as a
variable or parameter and never uses as a type; every line keeps its number.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import text, tree_root, walk
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import entry_body

#: Declarator wrappers between a declaration and the name it declares.
_WRAPPERS = ("init_declarator", "pointer_declarator", "array_declarator",
             "reference_declarator", "parenthesized_declarator")


def value_casts(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each cast whose type is a variable of the file written as that
    variable (unchanged when there is none, or when the kernel cannot be found: the
    analysis reports that itself)."""
    body = entry_body(current, entry)
    if body is None:
        return current
    root = tree_root(body)
    casts = [(n, name) for n in walk(root) if (name := _cast_name(n)) is not None]
    if not casts:
        return current
    variables = _variables(root)
    cast_types = {n.child_by_field_name("type").start_byte for n, _ in casts}  # type: ignore[union-attr]
    types = {text(n) for n in walk(root)
             if n.type == "type_identifier" and n.start_byte not in cast_types}
    edits = [(n, name) for n, name in casts if name in variables and name not in types]
    if not edits:
        return current
    data = current.text.encode()
    for n, name in sorted(edits, key=lambda e: e[0].start_byte, reverse=True):
        close = n.child_by_field_name("type").end_byte  # type: ignore[union-attr]
        end = data.index(b")", close) + 1
        data = data[:n.start_byte] + name.encode() + data[end:]
    return InlinedSource(data.decode(), current.file, current.findings, current.origin)


def _cast_name(n: Node) -> str | None:
    """The name of a cast ``(name) v`` whose type is one bare identifier, else None."""
    if n.type != "cast_expression":
        return None
    t = n.child_by_field_name("type")
    if t is None or t.type != "type_descriptor" or t.named_child_count != 1:
        return None
    only = t.named_children[0]
    return text(only) if only.type == "type_identifier" and text(t) == text(only) else None


def _variables(root: Node) -> set[str]:
    """The names the file declares as variables or parameters."""
    out: set[str] = set()
    for decl in walk(root):
        if decl.type not in ("declaration", "parameter_declaration"):
            continue
        for d in decl.children_by_field_name("declarator"):
            while d.type in _WRAPPERS:
                inner = d.child_by_field_name("declarator")
                if inner is None:
                    inner = next((c for c in d.named_children if c.type in (
                        "identifier", *_WRAPPERS)), None)
                if inner is None:
                    break
                d = inner
            if d.type == "identifier":
                out.add(text(d))
    return out
