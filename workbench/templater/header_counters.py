"""A local declared bare and used only as the counter of ``for`` loops that set it in their
headers, read as each loop's own counter before the analysis (session 29: held-back set
22's crc32_records).

C89 declares the counter at the top of the kernel: ``int i, k, b; ... for (b = 0; b < 4;
b++) {..}``. The families read a loop's counter from its header (``for (int b = 0; ..)``):
a counter declared with the thread's other locals is a name the analysis sees set under
the loops around it, so the crc kernel's byte loop, nested in a walk over the record,
made ``b`` "a name declared outside the item's statements" and refused ITEMS_PER_THREAD
with independent state. Such a local is read as declared in each loop's header (``for (int
b = 0; ..)``), the declaration left blank (every line keeps its number).

The same program where (else left as written, silently): the declaration is a statement of
a block declaring one plain name of a built-in type with no value, no storage class nor
qualifier; the name is declared nowhere else in the kernel and no macro names it (as
:func:`.local_decls.local_decl` reads it); every use lies in a ``for`` statement whose
initializer is the assignment ``x = v`` (``v`` not reading ``x``), and no two such loops
nest (a loop's counter in its header would shadow the outer one's, which the inner loop
stepped as written). The initializer runs before anything else of its loop, so every read
of ``x`` in a loop sees a value that loop set, and nothing outside the loops reads it: a
value left by one loop reaches no use. The kernel has no ``goto``, label or ``case``
(:func:`.local_decls.rewrite_each`).
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource
from workbench.templater.analysis import text, walk
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.local_decls import Edits, local_decl, rewrite_each


def header_counters(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each qualifying local of ``entry`` (see the module doc) declared in
    the header of each ``for`` that counts with it, one local at a time (unchanged when
    there is none, or the kernel cannot be found: the analysis reports that itself)."""
    return rewrite_each(current, entry, _headers)


def _headers(source: CudaSource, fn: Node, s: Node) -> Edits | None:
    """The edits (blank the declaration ``s``, declare in each loop's initializer) that read
    a qualifying counter as each loop's own; None for anything else."""
    d = local_decl(source, fn, s)
    if d is None or d.valued or d.qualifiers or d.shape != d.ident:
        return None
    loops: list[Node] = []
    for use in d.uses:
        loop = _counted_by(use, d.name)
        if loop is not None:
            loops.append(loop)
        elif not any(lp.start_byte <= use.start_byte < lp.end_byte for lp in loops):
            return None  # a use outside every loop that sets it first
    if any(a.start_byte <= b.start_byte < a.end_byte for a in loops for b in loops
           if a != b):
        return None  # nested: the inner loop's own counter would shadow the outer's
    head = source.data[s.start_byte:d.declarator.start_byte].decode()
    edits: Edits = [(s.start_byte, s.end_byte, "")]
    for loop in loops:
        init = loop.child_by_field_name("initializer")
        assert init is not None  # _counted_by
        edits.append((init.start_byte, init.start_byte, head))
    return edits


def _counted_by(use: Node, name: str) -> Node | None:
    """The ``for`` statement whose initializer is ``name = v`` with ``use`` its target and
    ``v`` not reading ``name``; None where ``use`` is anything else."""
    assign = use.parent
    loop = assign.parent if assign is not None else None
    if assign is None or loop is None or loop.type != "for_statement" or \
            loop.child_by_field_name("initializer") != assign or \
            assign.type != "assignment_expression" or \
            assign.child_by_field_name("left") != use or \
            text(assign.child_by_field_name("operator")) != "=":
        return None
    value = assign.child_by_field_name("right")
    if value is None or any(n.type == "identifier" and text(n) == name for n in walk(value)):
        return None
    return loop
