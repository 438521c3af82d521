"""The work of an apron kernel's output that no output changes, made once a thread before
its outputs' loops (issue 28, set 23 first contact: ncc_patch8 sums its 8 x 8 template's
mean and energy for every output, so at OUT_Y = 4 a thread read the template 4 times over).

A top-level statement of the work after the barrier is hoisted where every name it reads is
a kernel scalar never written, an integer macro, a ``const`` pointer the kernel never writes
through (read at any index: no output changes the index, see below), a local one hoisted
statement declared or one declared inside the statement itself; it writes only such locals
(no memory), calls nothing, leaves nothing (no return, break, continue or goto), names no
thread or block built-in, reads no shared memory, and its locals are neither written nor
declared again by the rest of the kernel. Then it computes the same values for every
output, and before the outputs' loops it computes them once. Its reads come before the
outputs' exits: they read what every thread reads (no index names the thread or the output),
which the threads of the kernel as written that reach them read too, from memory no thread
writes.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import JUMPS, text, walk, write_target, writer
from workbench.templater.inline_bind import declarator_name, declared_counts, written
from workbench.templater.macros import integer_macros
from workbench.templater.plan import Plan

_BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")


def hoisted(plan: Plan, post: list[Node]) -> list[Node]:
    """The statements of ``post`` (the work after the barrier, in order) that compute the same
    values for every output (see the module doc)."""
    params = {p.name: p for p in plan.kernel.params}
    pointers_written = {text(b) for n in walk(plan.body) if (t := write_target(n)) is not None
                        and t.type in ("subscript_expression", "pointer_expression")
                        and (b := _base(t)) is not None}
    fixed = {name for name, p in params.items()
             if (p.is_pointer and p.is_const and name not in pointers_written) or
             (not p.is_pointer and not written(plan.body, name))} | \
        set(integer_macros(plan.source))
    declared_elsewhere = declared_counts(plan.body)
    out: list[Node] = []
    locals_: set[str] = set()
    for s in post:
        own = declared_counts(s)
        if s.type not in ("declaration", "expression_statement", "for_statement") or \
                not _invariant(s, fixed | locals_ | set(own)) or \
                not _writes_only(s, locals_ | set(own)):
            continue
        # a declaration's names move to the scope before the loops: each declared nowhere
        # else in the kernel (a loop's own names stay inside it)
        names = {text(d) for d in _declarators(s)} if s.type == "declaration" else set()
        if any(declared_elsewhere.get(n, 0) != 1 for n in names):
            continue
        out.append(s)
        locals_ |= names
    # a local the rest of the work writes (an accumulator declared ahead of its loop) stays,
    # and so does every hoisted statement that reads a local that stays
    removed: set[str] = set()
    while True:
        mine = {text(n): s for s in out if s.type == "declaration" for n in _declarators(s)}
        rest = [s for s in post if s not in out]
        stay = {mine[text(n)] for s in rest for n in walk(s) if n.type == "identifier"
                and text(n) in mine and _written(n)}
        stay |= {s for s in out for n in walk(s) if n.type == "identifier" and
                 text(n) in removed}
        if not stay:
            return out
        removed |= {text(n) for s in stay if s.type == "declaration" for n in _declarators(s)}
        out = [s for s in out if s not in stay]


def _written(name: Node) -> bool:
    """Whether the place ``name`` names, or an element or member of it (``acc[f] += v``,
    ``p.x = v``), is written or its address taken there."""
    place = name
    while place.parent is not None and (
            (place.parent.type in ("subscript_expression", "field_expression") and
            place.parent.child_by_field_name("argument") == place) or
            place.parent.type == "parenthesized_expression"):
        place = place.parent
    return writer(place, address=True) is not None


def _base(n: Node) -> Node | None:
    arg = n.child_by_field_name("argument")
    while arg is not None and arg.type in ("subscript_expression", "parenthesized_expression"):
        arg = arg.child_by_field_name("argument") or (arg.named_children[0]
                                                      if arg.named_children else None)
    return arg if arg is not None and arg.type == "identifier" else None


def _declarators(decl: Node) -> list[Node]:
    """The names ``decl`` declares (each declarator chain's identifier)."""
    return [n for d in decl.children_by_field_name("declarator")
            if (n := declarator_name(d)) is not None]


def _invariant(s: Node, allowed: set[str]) -> bool:
    for n in walk(s):
        if n.type in JUMPS or n.type == "call_expression" or n.type == "lambda_expression":
            return False
        if n.type == "field_expression":
            return False  # a built-in (threadIdx.x) or a member: neither is followed here
        if n.type == "identifier" and text(n) not in allowed:
            if n.parent is not None and n.parent.type in ("init_declarator", "declaration",
                                                          "array_declarator") and \
                    n.parent.child_by_field_name("declarator") == n:
                continue  # the name being declared
            return False
        if n.type == "identifier" and text(n) in _BUILTINS:
            return False
    return True


def _writes_only(s: Node, allowed: set[str]) -> bool:
    """``s`` assigns or steps only names in ``allowed`` (no memory)."""
    for n in walk(s):
        if n.type in ("assignment_expression", "update_expression"):
            target = write_target(n)
            if target is None or target.type != "identifier" or text(target) not in allowed:
                return False
    return True
