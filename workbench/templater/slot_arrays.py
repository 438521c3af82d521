"""An array of a few named slots, read and written only at literal subscripts, read as one
scalar per slot before the analysis (issue 28: respell round 30, moments_partials).

Authors keep a block's two totals as ``__shared__ double acc[2];`` with ``acc[0]`` the sum
and ``acc[1]`` the sum of squares (or a thread's ``float part[3]``): the same program as
``__shared__ double acc_0; __shared__ double acc_1;``, since nothing names an element but
by its literal subscript, so no index can reach another slot and no pointer to the array
escapes. The families read shared or local scalars (a shared atomic counter is
``atomicAdd(&C, E)`` on a ``__shared__`` scalar), so ``&acc[0]`` was no counter and the
block's totals lifted nothing. The declaration becomes one declaration a slot on its line
(``__shared__ double acc_0; __shared__ double acc_1;``, an initializer list's values given
slot by slot) and each ``acc[k]`` its slot's name; every line keeps its number.

Read so only (else left as written, silently: the families then read the array as before):
the array is declared once in the kernel, at the top level of its body, one declarator of
one dimension whose size is an integer literal of at most :data:`MAX_SLOTS`, with no value
or a brace list of exactly that many values; every other mention of its name in the body is
the argument of a subscript whose index is an integer literal below the size (``&acc[1]``
takes one slot's address: one scalar's, as written).
"""

from __future__ import annotations

from dataclasses import replace

from tree_sitter import Node

from workbench.core.cuda_source import CudaSourceError, parse_cuda
from workbench.templater.analysis import text, walk
from workbench.templater.inline_bind import fresh
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.records import Finding

TRANSFORM = "SLOT_ARRAYS"
#: The most slots an array may have to be read as scalars (a few named totals, not data).
MAX_SLOTS = 8


def slot_arrays(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each qualifying array of ``entry``'s body read as one scalar per
    slot (see the module doc); unchanged where there is none or the source does not parse."""
    try:
        source = parse_cuda(current.text, current.file)
        body = source.body(source.kernel(entry))
    except CudaSourceError:
        return current
    taken = {text(n) for n in walk(source.tree.root_node) if n.type in
             ("identifier", "field_identifier", "type_identifier")}
    declared: dict[str, int] = {}
    for n in walk(body.parent or body):
        if n.type in ("array_declarator", "init_declarator", "pointer_declarator",
                      "parameter_declaration", "declaration", "reference_declarator"):
            ident = n.child_by_field_name("declarator")
            if ident is not None and ident.type == "identifier":
                declared[text(ident)] = declared.get(text(ident), 0) + 1
    edits: list[tuple[int, int, str]] = []
    findings: list[Finding] = []
    for decl in body.named_children:
        found = _slots(decl)
        if found is None:
            continue
        name, size, values = found
        if declared.get(name, 0) != 1:
            continue
        uses = _uses(body, decl, name, size)
        if uses is None:
            continue
        slots = [fresh(f"{name}_{k}", taken) for k in range(size)]
        taken.update(slots)
        head = current.text.encode()[decl.start_byte:_declarator(decl).start_byte].decode()
        head = " ".join(head.split())
        written = " ".join(f"{head} {slot}{'' if values is None else f' = {values[k]}'};"
                           for k, slot in enumerate(slots))
        edits.append((decl.start_byte, decl.end_byte, written))
        edits += [(use.start_byte, use.end_byte, slots[k]) for use, k in uses]
        findings.append(Finding(TRANSFORM, True, f"`{name}` ({size} slots, each named only at "
                                "a literal subscript) is read as one scalar a slot",
                                current.baseline_line(decl.start_point[0] + 1)))
    if not edits:
        return current
    return replace(current.edited(edits), findings=current.findings + tuple(findings))


def _declarator(decl: Node) -> Node:
    d = decl.child_by_field_name("declarator")
    assert d is not None
    return d


def _slots(decl: Node) -> tuple[str, int, list[str] | None] | None:
    """(name, size, values or None) of ``T name[N];`` / ``T name[N] = {v0, ..};``."""
    if decl.type != "declaration" or len(decl.children_by_field_name("declarator")) != 1:
        return None
    d, values = _declarator(decl), None
    if d.type == "init_declarator":
        value = d.child_by_field_name("value")
        inner = d.child_by_field_name("declarator")
        if value is None or inner is None or value.type != "initializer_list":
            return None
        values = [" ".join(text(v).split()) for v in value.named_children
                  if v.type != "comment"]
        d = inner
    name, size = d.child_by_field_name("declarator"), d.child_by_field_name("size")
    if d.type != "array_declarator" or name is None or name.type != "identifier" or \
            size is None or size.type != "number_literal" or not text(size).isdigit():
        return None
    count = int(text(size))
    if not 0 < count <= MAX_SLOTS or (values is not None and len(values) != count):
        return None
    return text(name), count, values


def _uses(body: Node, decl: Node, name: str, size: int) -> list[tuple[Node, int]] | None:
    """Each ``name[k]`` of the body after ``decl`` with its slot; None where the name is
    mentioned otherwise."""
    out: list[tuple[Node, int]] = []
    for n in walk(body):
        if n.type != "identifier" or text(n) != name or decl.start_byte <= n.start_byte < \
                decl.end_byte:
            continue
        use = n.parent
        index = use.child_by_field_name("indices") if use is not None else None
        literal = index.named_children[0] if index is not None and \
            len(index.named_children) == 1 else index
        if use is None or use.type != "subscript_expression" or \
                use.child_by_field_name("argument") != n or literal is None or \
                literal.type != "number_literal" or not text(literal).isdigit() or \
                int(text(literal)) >= size:
            return None
        out.append((use, int(text(literal))))
    return out
