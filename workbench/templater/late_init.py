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
no value, no storage class nor qualifier; the name is declared nowhere else in the kernel
and no macro names it; its first use after the declaration is the statement ``x = v;`` of a
block B inside the declaring one, ``v`` not reading ``x``, and every other use lies in B
after it (so no value reaches B from before: where B is a loop's body, each trip sets ``x``
before any read, as the declaration with its value does); and the kernel has no ``goto``,
label or ``case`` (a jump past the new initialisation would be ill-formed).
:func:`.point_split.split_points` runs first, so ``int tx, ty;`` is two declarations here.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.core.cuda_source import CudaSource, CudaSourceError, parse_cuda
from workbench.templater.analysis import text, walk
from workbench.templater.inline_bind import declared
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.point_split import _in_macros

#: Types whose default initialisation then assignment is the copy initialisation itself.
_BUILTIN_TYPES = ("primitive_type", "sized_type_specifier")
#: Jumps that could pass the initialisation the rewrite adds.
_JUMPS = ("goto_statement", "labeled_statement", "case_statement")


def late_inits(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each qualifying local of ``entry`` (see the module doc) declared
    with its value where it is first set, one at a time (unchanged when there is none, or
    the kernel cannot be found: the analysis reports that itself)."""
    while True:
        try:
            source = parse_cuda(current.text, current.file)
            body = source.body(source.kernel(entry))
        except CudaSourceError:
            return current
        fn = body.parent
        if fn is None or any(n.type in _JUMPS for n in walk(fn)):
            return current
        found = next((e for s in walk(body) if (e := _late(source, fn, s)) is not None), None)
        if found is None:
            return current
        current = current.edited(found)


def _late(source: CudaSource, fn: Node, s: Node) -> list[tuple[int, int, str]] | None:
    """The two edits (blank the declaration ``s``, declare at the first assignment) that
    read a qualifying late-set local as declared with its value; None for anything else."""
    parent = s.parent
    if s.type != "declaration" or parent is None or parent.type != "compound_statement":
        return None
    typ, decls = s.child_by_field_name("type"), s.children_by_field_name("declarator")
    if typ is None or typ.type not in _BUILTIN_TYPES or len(decls) != 1 or \
            [c for c in s.named_children if c not in (typ, decls[0])]:
        return None
    ident = decls[0]
    while ident.type == "pointer_declarator" and ident.child_by_field_name("declarator"):
        ident = ident.child_by_field_name("declarator")  # type: ignore[assignment]
    name = text(ident)
    if ident.type != "identifier" or len(declared(fn).get(name, [])) != 1 or \
            _in_macros(source, name):
        return None
    uses = [n for n in walk(fn) if n.type == "identifier" and text(n) == name and n != ident]
    if not uses or uses[0].start_byte < s.end_byte:
        return None
    first = uses[0]
    assign = first.parent
    stmt = assign.parent if assign is not None else None
    block = stmt.parent if stmt is not None else None
    if assign is None or stmt is None or block is None or \
            assign.type != "assignment_expression" or \
            assign.child_by_field_name("left") != first or \
            text(assign.child_by_field_name("operator")) != "=" or \
            stmt.type != "expression_statement" or block.type != "compound_statement" or \
            not parent.start_byte <= block.start_byte < parent.end_byte:
        return None
    value = assign.child_by_field_name("right")
    if value is None or any(n.start_byte < value.end_byte and n.end_byte > value.start_byte
                            for n in uses) or \
            any(not block.start_byte <= n.start_byte < block.end_byte for n in uses):
        return None
    data = source.data
    head = data[s.start_byte:decls[0].start_byte].decode()
    new = f"{head}{text(decls[0])} = {text(value)};"
    return [(s.start_byte, s.end_byte, ""), (stmt.start_byte, stmt.end_byte, new)]
