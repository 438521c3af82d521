"""A kernel's local as the pre-passes that respell locals before the analysis read it: its
declaration, its uses, the statement ``x = v;`` that sets it, and the loop that makes one
such rewrite at a time (issue 28).

:mod:`.late_init` (a local declared bare and set once later) and :mod:`.reassigned_locals`
(a local set again by later statements of its block) both start from a declaration that is
a statement of a block declaring one plain name, or a pointer to one, of a built-in type,
named nowhere else in the kernel nor in a macro, and used only after it
(:func:`local_decl`); each then asks its own of the qualifiers and the value. Both declare a
value where a statement ``x = v;`` sets it (:func:`set_in`, :func:`declared_at`), line for
line, and refuse a kernel with a ``goto``, label or ``case`` (:func:`rewrite_each`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource
from workbench.templater.analysis import text, walk
from workbench.templater.inline_bind import declared
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import entry_source, in_macros

#: Types whose local a statement ``x = v;`` sets whole (its default initialisation then
#: that assignment is the copy initialisation itself).
BUILTIN_TYPES = ("primitive_type", "sized_type_specifier")
#: Jumps that could pass a value's statement (a jump past a new initialisation is
#: ill-formed).
JUMPS = ("goto_statement", "labeled_statement", "case_statement")

#: One rewrite's edits: (start byte, end byte, new text).
Edits = list[tuple[int, int, str]]
#: A rule: the file, the kernel's function and a node of its body -> the edits that
#: respell the local that node declares, or None.
Rule = Callable[[CudaSource, Node, Node], Edits | None]


def rewrite_each(current: InlinedSource, entry: str | None, rule: Rule) -> InlinedSource:
    """``current`` with ``rule``'s edits made for the first node of ``entry``'s body it
    answers, re-parsed, until it answers none (unchanged where the kernel cannot be found,
    the analysis reports that itself, or has a ``goto``, label or ``case``)."""
    while True:
        found_source = entry_source(current, entry)
        fn = found_source[1].parent if found_source is not None else None
        if found_source is None or fn is None or any(n.type in JUMPS for n in walk(fn)):
            return current
        source, body = found_source
        found = next((e for s in walk(body) if (e := rule(source, fn, s)) is not None), None)
        if found is None:
            return current
        current = current.edited(found)


@dataclass(frozen=True)
class LocalDecl:
    """A declaration statement of one plain name (or a pointer to one) of a built-in type
    and the name's uses after it."""

    statement: Node
    #: The declarator as written (an ``init_declarator`` where ``valued``).
    declarator: Node
    #: The declarator without its value (``*src`` of ``const float *src = x;``).
    shape: Node
    ident: Node
    name: str
    valued: bool
    #: The texts of the statement's other specifiers (``const``, ``static``, ..).
    qualifiers: tuple[str, ...]
    #: Every identifier of the name in the kernel but the declarator's, in source order.
    uses: tuple[Node, ...]
    #: The statement's text before the declarator (``const float `` of ``const float *s;``).
    head: str


def local_decl(source: CudaSource, fn: Node, s: Node) -> LocalDecl | None:
    """``s`` read as a :class:`LocalDecl`: a declaration, a statement of a block, declaring
    one plain name or pointer of a built-in type, named once in the kernel ``fn`` and in no
    macro, every use after ``s``; None for anything else."""
    parent = s.parent
    if s.type != "declaration" or parent is None or parent.type != "compound_statement":
        return None
    typ, decls = s.child_by_field_name("type"), s.children_by_field_name("declarator")
    if typ is None or typ.type not in BUILTIN_TYPES or len(decls) != 1:
        return None
    valued = decls[0].type == "init_declarator"
    shape = decls[0].child_by_field_name("declarator") if valued else decls[0]
    ident = shape
    while ident is not None and ident.type == "pointer_declarator":
        ident = ident.child_by_field_name("declarator")
    if shape is None or ident is None or ident.type != "identifier":
        return None
    name = text(ident)
    if len(declared(fn).get(name, [])) != 1 or in_macros(source, name):
        return None
    uses = tuple(n for n in walk(fn) if n.type == "identifier" and text(n) == name and
                 n != ident)
    if not uses or uses[0].start_byte < s.end_byte:
        return None
    qualifiers = tuple(text(c) for c in s.named_children if c not in (typ, decls[0]))
    head = source.data[s.start_byte:decls[0].start_byte].decode()
    return LocalDecl(s, decls[0], shape, ident, name, valued, qualifiers, uses, head)


def set_in(use: Node, name: str) -> Node | None:
    """The block whose statement ``name = v;`` (``v`` not reading ``name``) ``use`` is the
    target of; None where ``use`` is anything else."""
    assign = use.parent
    stmt = assign.parent if assign is not None else None
    block = stmt.parent if stmt is not None else None
    if assign is None or stmt is None or block is None or \
            assign.type != "assignment_expression" or \
            assign.child_by_field_name("left") != use or \
            text(assign.child_by_field_name("operator")) != "=" or \
            stmt.type != "expression_statement" or block.type != "compound_statement":
        return None
    value = assign.child_by_field_name("right")
    if value is None or any(n.type == "identifier" and text(n) == name for n in walk(value)):
        return None
    return block


def declared_at(use: Node, head: str, declarator: str) -> tuple[int, int, str]:
    """The edit making the statement ``x = v;`` whose target is ``use`` (:func:`set_in`)
    the declaration ``{head}{declarator} = v;``."""
    assign = use.parent
    stmt = assign.parent if assign is not None else None
    value = assign.child_by_field_name("right") if assign is not None else None
    assert stmt is not None and value is not None  # set_in
    return stmt.start_byte, stmt.end_byte, f"{head}{declarator} = {text(value)};"
