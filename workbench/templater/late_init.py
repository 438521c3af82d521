"""A local declared first and set later, read as the declaration with its value, before the
analysis (issue 28: respellings of held-back set 20's gram_ata_ridge).

C89 asks for every local at the top of its block: ``int tx, ty, row; ... tx = threadIdx.x;
row = blockIdx.y * 16 + ty;``. The families read a thread's indices and state from a local's
declared value (``int tx = threadIdx.x;``), so the same kernel lifted a register tile written
one way and nothing written the other ("`sa[kk][ty]` does not read the tile at (thread
index, k)": ``ty`` had no value the analysis could read). Such a local is read as ``T x =
v;`` at the place of its first assignment, the declaration left blank (every line keeps its
number, so the line map holds).

The two are the same program where (else left as written, silently): the declaration is a
statement of a block declaring one plain name (or a pointer to one) of a built-in type with
no value, no storage class nor qualifier but ``const`` of a pointer's target (``const
unsigned *p, *end;``: the pointer itself is set); the name is declared nowhere else in the kernel
and no macro names it; its first use after the declaration is the statement ``x = v;`` of a
block B inside the declaring one, ``v`` not reading ``x``, and every other use lies in B
after it (so no value reaches B from before: where B is a loop's body, each trip sets ``x``
before any read, as the declaration with its value does); and the kernel has no ``goto``,
label or ``case`` (a jump past the new initialisation would be ill-formed).
:func:`.point_split.split_points` runs first, so ``int tx, ty;`` is two declarations here.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource
from workbench.templater.analysis import text
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.local_decls import (
    Edits,
    declared_at,
    local_decl,
    rewrite_each,
    set_in,
)


def late_inits(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each qualifying local of ``entry`` (see the module doc) declared
    with its value where it is first set, one at a time (unchanged when there is none, or
    the kernel cannot be found: the analysis reports that itself)."""
    return rewrite_each(current, entry, _late)


def _late(source: CudaSource, fn: Node, s: Node) -> Edits | None:
    """The two edits (blank the declaration ``s``, declare at the first assignment) that
    read a qualifying late-set local as declared with its value; None for anything else."""
    d = local_decl(source, fn, s)
    if d is None or d.valued or (d.qualifiers and (d.shape == d.ident or
                                                   any(q != "const" for q in d.qualifiers))):
        return None  # const only of a pointer's target (`const float *p;`): p itself is set
    first = d.uses[0]
    block = set_in(first, d.name)
    parent = s.parent
    if block is None or parent is None or \
            not parent.start_byte <= block.start_byte < parent.end_byte or \
            any(not block.start_byte <= n.start_byte < block.end_byte for n in d.uses):
        return None
    return [(s.start_byte, s.end_byte, ""), declared_at(first, d.head, text(d.declarator))]
