"""A local set again by later statements of its block, read as one local per value before
the analysis (issue 28: first contact of held-back set 21's pearson_cm_tiled).

A hand that declares its locals at the top reuses one for several values: the Pearson
kernel loads two shared tiles with ``col = ib + threadIdx.y + 1; if (.. col <= p) xi[..] =
X(.., col) ..; col = jb + threadIdx.y + 1; if (.. col <= p) xj[..] = ..;``. The families read
a local by its one value, so the register tile refused ("`col` depends on the thread index
and is reassigned") and the kernel kept one output a thread. Each value of such a local
lives from its statement to the next one, so the uses each value reaches are read under a
name of their own: the second ``col = v;`` becomes ``int col_2 = v;`` and the uses after it
``col_2``; the first value stays the local's own, a bare declaration moved to where it is
first set (as :func:`.late_init.late_inits` does for a local set once). The same program,
every line in its place.

Which locals (else left as written, silently): a declaration, a statement of a block,
declaring one plain name (or a pointer to one) of a built-in type, with or without a value,
no storage class nor qualifier but ``const`` of a pointer's target (``const float *src;``
set to one column, then another); the name is declared nowhere else in the kernel and no
macro names it; every use lies in one block B (the declaring one, or one inside it where
the declaration has no value and the first use sets it) after the declaration; each use
either sets it, as the statement ``x = v;`` of B itself with ``v`` not reading ``x`` (at
least two values: the declared one, if any, counts), or only reads it: not written,
stepped nor its address taken, not inside a lambda, not bound to a reference, not passed
to a function of the file taking a reference nor to a macro whose body writes or takes the
address of that parameter. A value set by a statement of B reaches exactly the uses up to
B's next such statement (none lies in a loop or branch holding another: those are B's own
statements), and the kernel has no ``goto``, label or ``case`` (nothing jumps between
them).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource
from workbench.templater.analysis import ancestors, text, walk, writer
from workbench.templater.inline_bind import fresh, function_name
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.inline_macros import function_macros
from workbench.templater.local_decls import (
    Edits,
    declared_at,
    local_decl,
    rewrite_each,
    set_in,
)

#: A write to or the address of the name ``{0}`` in a macro body.
_WRITES = (r"(\+\+|--|&)\s*\(?\s*\b{0}\b", r"\b{0}\b\s*\)?\s*(\+\+|--|(?:[-+*/%&|^]|<<|>>)?=(?!=))")


def split_reassigned(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each qualifying local of ``entry`` (see the module doc) read as one
    local per value, one local at a time (unchanged when there is none, or the kernel
    cannot be found: the analysis reports that itself)."""
    return rewrite_each(current, entry, _split)


def _split(source: CudaSource, fn: Node, s: Node) -> Edits | None:
    """The edits that read the local ``s`` declares as one local per value (each later
    value's statement declares its own, its uses renamed); None for anything else."""
    d = local_decl(source, fn, s)
    if d is None or (d.qualifiers and (d.shape == d.ident or
                                       any(q != "const" for q in d.qualifiers))):
        return None  # const only of a pointer's target: the pointer itself is set
    parent, name, uses = s.parent, d.name, d.uses
    block = parent if d.valued else set_in(uses[0], name)
    if block is None or parent is None or \
            not parent.start_byte <= block.start_byte < parent.end_byte or \
            any(not block.start_byte <= n.start_byte < block.end_byte for n in uses):
        return None
    sets = [u for u in uses if set_in(u, name) == block]
    if len(sets) + d.valued < 2 or \
            any(u not in sets and not _only_read(source, u) for u in uses):
        return None
    taken = set(re.findall(r"[A-Za-z_]\w*", source.data.decode()))
    free = [fresh(name, taken) for _ in range(len(sets) - (not d.valued))]
    later = sets if d.valued else sets[1:]
    # a bare declaration goes, the first value's statement declaring it (as late_init does)
    edits = [] if d.valued else [(s.start_byte, s.end_byte, ""),
                                 declared_at(sets[0], d.head, text(d.shape))]
    for k, u in enumerate(later):
        stmt = u.parent.parent  # type: ignore[union-attr]  # x = v;  (set_in)
        new = free[k]
        ends = later[k + 1].start_byte if k + 1 < len(later) else block.end_byte
        declarator = text(d.shape)[:d.ident.start_byte - d.shape.start_byte] + new
        edits.append(declared_at(u, d.head, declarator))
        edits += [(r.start_byte, r.end_byte, new) for r in uses
                  if r not in sets and stmt.end_byte <= r.start_byte < ends]  # type: ignore[union-attr]
    return edits


def _only_read(source: CudaSource, use: Node) -> bool:
    """Whether ``use`` only reads its local's value where it stands (see the module doc)."""
    at = use
    while at.parent is not None and at.parent.type == "parenthesized_expression":
        at = at.parent
    up = at.parent
    if up is None or any(a.type == "lambda_expression" for a in ancestors(use)):
        return False
    if writer(use, address=True) is not None:
        return False
    if up.type == "init_declarator" and any(n.type == "reference_declarator" for n in walk(up)):
        return False  # int &r = x; r reads whichever value x holds
    if up.type != "argument_list" or up.parent is None:
        return True
    callee = text(up.parent.child_by_field_name("function"))
    place = [c for c in up.named_children if c.type != "comment"].index(at)
    root = source.tree.root_node
    macro = function_macros(root).get(callee)
    if macro is not None:
        param = re.escape(macro.params[place]) if place < len(macro.params) else None
        return param is not None and not any(
            re.search(w.format(param), macro.body) for w in _WRITES)
    if any(n.type in ("preproc_def", "preproc_function_def") and
           text(n.child_by_field_name("name")) == callee for n in root.children):
        return False  # a macro not read as an expansion: its body may write the argument
    return all(_by_value(f, place) for f in walk(root) if f.type == "function_definition"
               and function_name(f) == callee)


def _by_value(fn: Node, place: int) -> bool:
    """Whether parameter ``place`` of the function ``fn`` takes its argument by value."""
    decl = fn.child_by_field_name("declarator")
    params = decl.child_by_field_name("parameters") if decl is not None else None
    if params is None:
        return False
    named = [p for p in params.named_children if p.type != "comment"]
    return place < len(named) and not any(
        n.type == "reference_declarator" for n in walk(named[place]))
