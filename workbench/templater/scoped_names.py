"""A name declared again in another scope, read under a name of its own before the analysis
(issue 28: first contact of held-back set 21's sobel_magdir_tile).

C and C++ let a block declare a name the kernel declares elsewhere: the CUDA samples' Sobel
loads its tile with ``int gx = min(max(bx + tx - 1, 0), w - 1);`` inside the load loop and
later computes ``float gx = ...`` (the gradient) in the kernel's body. The families read a
local by its one value (:func:`.regtile.single_assignment_values` and its kin look names up
kernel-wide), so a name declared twice had no value for any of them: the apron lift refused
the load ("`int gx = ...` in the tile load is assigned again") and nothing was lifted.
Which declaration a use reads is the language's scope rule, so each such declaration is
read under a name of its own (``gx_2``), its uses with it: the same program, every line in
its place (the line map holds).

Which declarations (else left as written, silently): the name is declared more than once in
the kernel (parameters included) and no macro of the file names it; the one kept is the
outermost (the least nested; the first of those): a parameter, else a local; each other
declaration is renamed where it declares one plain name (or a pointer or array of one) with
a value, as a statement of a block or a ``for`` loop's initializer, and no use it reaches
writes the name (``=``, a compound assignment, ``++``/``--``, ``&``): a local with one value
in its scope, the value the families read. A use is an identifier of that text after the
declarator and inside its block (its ``for`` statement), not inside the scope of another
declaration of the name nested in it (which shadows it there).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from workbench.templater.analysis import text, walk, writer
from workbench.templater.inline_bind import declared, fresh
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import entry_source, in_macros


def scoped_names(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each qualifying re-declaration of ``entry`` (see the module doc) and
    its uses renamed (unchanged when there is none, or the kernel cannot be found: the
    analysis reports that itself)."""
    found = entry_source(current, entry)
    fn = found[1].parent if found is not None else None
    if found is None or fn is None:
        return current
    source = found[0]
    taken = set(re.findall(r"\w+", current.text))
    edits: list[tuple[int, int, str]] = []
    for name, idents in declared(fn).items():
        if len(idents) < 2 or in_macros(source, name):
            continue
        scopes = [(ident, _extent(ident)) for ident in idents]
        reached = {ident.start_byte: _uses(name, ident, scope, [s for s in scopes
                                                               if s[0] != ident])
                   for ident, scope in scopes if _has_value(ident)}
        # one declaration keeps the name: the outermost of those that must (if any)
        stays = [s for s in scopes if reached.get(s[0].start_byte) is None] or scopes
        kept = min(stays, key=lambda s: (_depth(s[1]), s[0].start_byte))[0]
        for ident, _ in scopes:
            uses = reached.get(ident.start_byte)
            if ident == kept or uses is None:
                continue
            new = fresh(name, taken)
            edits += [(n.start_byte, n.end_byte, new) for n in (ident, *uses)]
    return current.edited(edits) if edits else current


#: The nodes whose end ends the scope of a name declared directly under them.
_SCOPES = ("compound_statement", "for_statement", "for_range_loop", "if_statement",
           "while_statement", "switch_statement", "catch_clause", "lambda_expression",
           "function_definition")


def _extent(ident: Node) -> Node:
    """The node that holds the scope of the name ``ident`` declares (its block, its ``for``
    or ``if`` statement, its function)."""
    p = ident.parent
    while p is not None and p.type not in _SCOPES:
        p = p.parent
    assert p is not None, text(ident)
    return p


def _has_value(ident: Node) -> bool:
    """Whether ``ident`` is the name of a declaration with a value that is a statement of a
    block or a ``for`` loop's initializer (a plain name, a pointer or an array of one)."""
    d = ident.parent
    while d is not None and d.type in ("pointer_declarator", "array_declarator"):
        d = d.parent
    decl = d.parent if d is not None and d.type == "init_declarator" else None
    holder = decl.parent if decl is not None and decl.type == "declaration" else None
    return holder is not None and (holder.type == "compound_statement" or (
        holder.type == "for_statement" and holder.child_by_field_name("initializer") == decl))


def _depth(node: Node) -> int:
    depth, p = 0, node.parent
    while p is not None:
        depth, p = depth + 1, p.parent
    return depth


def _uses(name: str, ident: Node, scope: Node,
          others: list[tuple[Node, Node]]) -> list[Node] | None:
    """The identifiers of ``name`` that the declaration of ``ident`` reaches: inside
    ``scope`` after it, none where a declaration nested in it shadows it; None where one
    of them is written or its address taken."""
    inner = [(i, s) for i, s in others if scope.start_byte <= s.start_byte and
             s.end_byte <= scope.end_byte and s != scope]
    out = []
    for n in walk(scope):
        if n.type != "identifier" or text(n) != name or n.start_byte < ident.end_byte or \
                any(i.end_byte <= n.start_byte < s.end_byte or i == n for i, s in inner):
            continue
        if writer(n, address=True) is not None:
            return None
        out.append(n)
    return out
