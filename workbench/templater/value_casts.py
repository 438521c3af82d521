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

The same holds of a subscripted variable in parentheses: ``(tile[r][c]) + 2.0f * v`` reads
to tree-sitter as a cast of ``+2.0f`` to an array type ``tile[r][c]`` (an expression inlined
in parentheses, a lambda's ``return tile[..][..];`` at its call, a macro's body, makes it:
respell round 31's sobel_macro_lambda hid eight of its twelve tile reads from the apron
family so, and its USE_SMEM = 0 read the unfilled tile). A subscript is a postfix
expression: written without the parentheses it groups as it did.

Rewritten only where the cast's type is one bare identifier, or one followed by subscripts
only, that the file declares as a variable or parameter and never uses as a type; every
line keeps its number.
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
    for n, _name in sorted(edits, key=lambda e: e[0].start_byte, reverse=True):
        kind = n.child_by_field_name("type")
        assert kind is not None
        end = data.index(b")", kind.end_byte) + 1
        data = data[:n.start_byte] + text(kind).encode() + data[end:]
    return InlinedSource(data.decode(), current.file, current.findings, current.origin)


def _cast_name(n: Node) -> str | None:
    """The name of a cast ``(name) v`` whose type is one bare identifier, or one subscripted
    (``(tile[r][c]) + v``: an array type to the parser), else None."""
    if n.type != "cast_expression":
        return None
    t = n.child_by_field_name("type")
    if t is None or t.type != "type_descriptor":
        return None
    kind, shape = t.child_by_field_name("type"), t.child_by_field_name("declarator")
    if kind is None or kind.type != "type_identifier" or \
            [c for c in t.named_children if c not in (kind, shape)]:
        return None
    d = shape
    while d is not None and d.type == "abstract_array_declarator" and \
            d.child_by_field_name("size") is not None:
        d = d.child_by_field_name("declarator")
    if d is not None:
        return None
    return text(kind)


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
