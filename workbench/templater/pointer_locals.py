"""A pointer local set once and only indexed, read as the array it points into, before the
analysis (issue 28: first contact, ncc_patch8 and nv12_to_rgba of held-back set 23).

``const float *src = img + (size_t)gy * W; .. src[gx]`` is ``img[(size_t)gy * W + gx]``;
``const float *wrow = &win[threadIdx.y + dy][threadIdx.x]; .. wrow[dx]`` is
``win[threadIdx.y + dy][threadIdx.x + dx]``; ``const float *row = tile[r]; .. row[c]`` is
``tile[r][c]``; ``*p`` is ``p[0]``. The families read a load, a tile read or a store through
the array it names and its index (a tile load is one assignment of a tile element; a tap
reads the tile at the thread's point plus an offset), so the same kernel lifted or was
refused by the spelling of its row pointers alone. Here each such pointer's reads and
writes name the array, and its declaration goes (blank, its lines kept, so every line keeps
its number).

Rewritten only where the two are the same program: the pointer is declared alone, with a
value, in a block (``T *p = ..;``, any qualifiers, one level of pointer); the value is
``A``, ``A + off`` (an additive chain of integer terms with one pointer term ``A`` of sign
+), ``&A[i]..[j]`` (every index of ``A``) or ``A[i]..`` (all but the last: a row), ``A`` a
pointer or an array the kernel declares once (a parameter, a local, a shared array); the
value calls nothing but ``min``/``max``, assigns nothing and reads no memory besides the
element whose address it is; in the rest of the block nothing writes, steps or takes the
address of a name the value reads, and nothing declares that name or the pointer again;
every mention of the pointer there is ``p[k]`` or ``*p`` (read or written: the same
element); and each index sum is the true sum (:meth:`.index_kinds.Kinds.sum_exact`:
``(size_t)gy * W + gx`` wraps as the address does; ``threadIdx.x + dx`` with ``dx`` never
negative; an unsigned offset with a term that may be negative is refused). A pointer that
escapes (passed to a call, compared, stored, offset) or whose sum may wrap stays as
written, with a note naming its line; one stepped or reassigned is a walk, which the walk
passes (:mod:`.pointer_taps`, :mod:`.pointer_rows`, :mod:`.loop_forms`) read, and stays
without one. A pointer whose value is another such pointer is read in a later round.

:func:`~.semantic.lift_kernel` lifts the kernel both ways and keeps the arrays' lift only
where it lifts strictly more knobs, losing none: some families read ``P = X + OFF``
themselves (the counting loop's VEC, a row copy's alignment), and a respelling that gains
nothing leaves the kernel's lift as it was, with a note.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tree_sitter import Node

from workbench.core.cuda_source import CudaSourceError, parse_cuda
from workbench.core.errors import WorkbenchError
from workbench.templater.analysis import text, walk, writer
from workbench.templater.index_kinds import Kinds, bare, sum_terms
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.loop_forms import Edit
from workbench.templater.macros import integer_macros
from workbench.templater.records import Finding

TRANSFORM = "POINTER_LOCAL"
_ROUNDS = 4  # a pointer set from a pointer set from ..: one level a round
_PURE = ("min", "max")
_GEOMETRY = ("threadIdx", "blockIdx", "blockDim", "gridDim")


class _Refused(WorkbenchError):
    """A pointer of the form left as written (caught in this pass, recorded as a note);
    ``note`` False: a walk, which the walk passes read and note."""

    def __init__(self, reason: str, note: bool = True) -> None:
        super().__init__(reason, reason=reason)
        self.reason, self.note = reason, note


@dataclass(frozen=True)
class _Target:
    """Where a pointer points: its element ``k`` is ``array[prefix..][terms + k]``, ``terms``
    the signed sum of the last index (``&A[i][j]``: ``j``; ``X + off``: off's terms; empty
    for a row ``A[i]`` or the array's start)."""

    array: str
    prefix: tuple[str, ...]
    terms: tuple[tuple[int, Node], ...]


def pointer_locals(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each pointer local of ``entry`` set once and only indexed read as
    the array it points into (see the module doc); unchanged where there is none."""
    notes: dict[tuple[int, str], Finding] = {}
    for _ in range(_ROUNDS):
        notes = {}
        edited = _round(current, entry, notes)
        if edited is None:
            break
        current = edited
    if not notes:
        return current
    return replace(current, findings=current.findings + tuple(notes.values()))


def _round(current: InlinedSource, entry: str | None,
           notes: dict[tuple[int, str], Finding]) -> InlinedSource | None:
    """``current`` with the pointers readable now rewritten (None: none is); the refusals
    noted in ``notes``."""
    try:
        source = parse_cuda(current.text, current.file)
        fn = source.function_node(source.kernel(entry))
        body = source.body(source.kernel(entry))
        macros = {m.name: m.value for m in integer_macros(source).values()}
    except CudaSourceError:
        return None
    ranks, types = _declared(fn)
    kinds = Kinds(body, types, macros)
    edits: list[Edit] = []
    for decl in walk(body):
        if decl.type != "declaration" or decl.parent is None or \
                decl.parent.type != "compound_statement":
            continue
        found = _pointer(decl)
        if found is None:
            continue
        name, value = found
        try:
            made = _rewrite(decl, name, value, ranks, kinds)
        except _Refused as exc:
            if exc.note:
                current.note(notes, TRANSFORM, False, f"`{text(decl)}`: {exc.reason}",
                             decl.start_point[0] + 1)
            continue
        if not any(a < e and s < b for s, e, _ in made for a, b, _ in edits):
            edits += made  # else it waits for the next round (a use inside another's)
    return current.edited(edits) if edits else None


def _declared(fn: Node) -> tuple[dict[str, int | None], dict[str, str]]:
    """(name -> levels of pointer or array, None where declared twice differently; name ->
    type text of the names declared once as integers or pointers) of ``fn``'s parameters
    and locals."""
    ranks: dict[str, int | None] = {}
    types: dict[str, str | None] = {}
    for d in walk(fn):
        if d.type not in ("parameter_declaration", "declaration"):
            continue
        ty = d.child_by_field_name("type")
        for dd in d.children_by_field_name("declarator"):
            node, rank = dd, 0
            if node.type == "init_declarator":
                node = node.child_by_field_name("declarator") or node
            while node.type in ("pointer_declarator", "array_declarator"):
                rank += 1
                node = node.child_by_field_name("declarator") or node
                if node.type not in ("pointer_declarator", "array_declarator", "identifier"):
                    break
            if node.type != "identifier":
                continue
            name = text(node)
            ranks[name] = rank if ranks.get(name, rank) == rank else None
            kind = f"{text(ty)}" if ty is not None and rank == 0 else None
            types[name] = kind if types.get(name, kind) == kind else None
    return ranks, {k: v for k, v in types.items() if v is not None}


def _pointer(decl: Node) -> tuple[str, Node] | None:
    """(name, value) of a declaration of one pointer (one level) with a value."""
    ds = decl.children_by_field_name("declarator")
    if len(ds) != 1 or ds[0].type != "init_declarator":
        return None
    d, value = ds[0].child_by_field_name("declarator"), ds[0].child_by_field_name("value")
    if d is None or value is None or d.type != "pointer_declarator":
        return None
    name = d.child_by_field_name("declarator")
    return (text(name), value) if name is not None and name.type == "identifier" else None


def _subscripts(node: Node) -> tuple[str, list[Node]] | None:
    """(array name, indices outermost first) of ``A[i]..[j]``, else None."""
    idx: list[Node] = []
    e = bare(node)
    while e.type == "subscript_expression":
        arg = e.child_by_field_name("argument")
        k = e.child_by_field_name("indices") or e.child_by_field_name("index")
        if arg is None or k is None:
            return None
        if k.type == "subscript_argument_list":
            if k.named_child_count != 1:
                return None
            k = k.named_children[0]
        idx.insert(0, k)
        e = bare(arg)
    return (text(e), idx) if e.type == "identifier" and idx else None


def _target(value: Node, ranks: dict[str, int | None]) -> _Target | None:
    """Where ``value`` points (see :class:`_Target`), else None (not of the pass's forms)."""
    e = bare(value)
    if e.type == "pointer_expression" and text(e.child_by_field_name("operator")) == "&":
        arg = e.child_by_field_name("argument")
        found = _subscripts(arg) if arg is not None else None
        if found is None or ranks.get(found[0]) != len(found[1]):
            return None
        *prefix, last = found[1]
        return _Target(found[0], tuple(text(i) for i in prefix), ((1, last),))
    found = _subscripts(e)
    if found is not None:  # a row of an array: A[i] of A[R][C]
        rank = ranks.get(found[0])
        return _Target(found[0], tuple(text(i) for i in found[1]), ()) \
            if rank is not None and rank == len(found[1]) + 1 else None
    terms = sum_terms(value)
    bases = [(s, t) for s, t in terms if bare(t).type == "identifier" and
             ranks.get(text(bare(t)), 0) != 0]
    if len(bases) != 1 or bases[0][0] < 0 or ranks.get(text(bare(bases[0][1]))) != 1:
        return None
    return _Target(text(bare(bases[0][1])), (), tuple(t for t in terms if t != bases[0]))


def _address_nodes(value: Node) -> set[Node]:
    """The subscripts of ``value`` that name the pointed-to element (``&A[i][j]``: ``A[i]``,
    ``A[i][j]``), which read no memory: the value is their address."""
    e = bare(value)
    if e.type == "pointer_expression":
        e = bare(e.child_by_field_name("argument") or e)
    found: set[Node] = set()
    while e.type == "subscript_expression":
        found.add(e)
        e = bare(e.child_by_field_name("argument") or e)
    return found


def _pure(value: Node) -> str | None:
    """Why ``value`` may not be read again at each use (a call, a write, a memory read
    besides the pointed-to element's address), else None."""
    address = _address_nodes(value)
    for n in walk(value):
        if n.type == "call_expression" and text(n.child_by_field_name("function")) \
                not in _PURE:
            return f"its value calls `{text(n.child_by_field_name('function'))}`"
        if n.type in ("assignment_expression", "update_expression"):
            return f"its value writes (`{text(n)}`)"
        if (n.type == "field_expression" and
                text(n.child_by_field_name("argument")) not in _GEOMETRY) or \
                (n.type == "pointer_expression" and n != bare(value)) or \
                (n.type == "subscript_expression" and n not in address):
            return f"its value reads `{text(n)}`"
    return None


def _rewrite(decl: Node, name: str, value: Node, ranks: dict[str, int | None],
             kinds: Kinds) -> list[Edit]:
    """The edits reading the pointer ``name`` as its array; raises _Refused."""
    target = _target(value, ranks)
    if target is None:
        raise _Refused("not of the forms read", note=False)
    block = decl.parent
    assert block is not None
    scope = [s for s in block.named_children if s.start_byte >= decl.end_byte]
    why = _pure(value)
    if why is not None:
        raise _Refused(f"{why}, so `{name}` is not read as `{target.array}[..]`")
    reads = {text(n) for n in walk(value) if n.type == "identifier"}
    for s in scope:
        for n in walk(s):
            if n.type == "identifier" and text(n) in reads and \
                    writer(n, address=True) is not None:
                raise _Refused(f"`{text(n)}` (its value reads it) is changed at line "
                               f"{n.start_point[0] + 1} while `{name}` lives")
            if n.type in ("declaration", "parameter_declaration") and \
                    _declares(n) & (reads | {name}):
                raise _Refused(f"a name it reads is declared again at line "
                               f"{n.start_point[0] + 1}")
    edits: list[Edit] = [(decl.start_byte, decl.end_byte, "\n" * text(decl).count("\n"))]
    for s in scope:
        for n in walk(s):
            if n.type == "identifier" and text(n) == name:
                edits.append(_use(n, name, target, kinds))
    return edits


def _declares(node: Node) -> set[str]:
    """The names a declaration (or a parameter's) declares."""
    found: set[str] = set()
    for d in node.children_by_field_name("declarator"):
        while d.type in ("pointer_declarator", "array_declarator", "init_declarator",
                         "reference_declarator"):
            inner = d.child_by_field_name("declarator") or \
                (d.named_children[0] if d.named_children else None)
            if inner is None:
                break
            d = inner
        if d.type == "identifier":
            found.add(text(d))
    return found


def _use(n: Node, name: str, target: _Target, kinds: Kinds) -> Edit:
    """The edit reading one mention ``n`` of the pointer through its array; raises
    _Refused where it is not ``p[k]`` or ``*p``."""
    place, up = n, n.parent
    while up is not None and up.type == "parenthesized_expression":
        place, up = up, up.parent
    at = f"line {n.start_point[0] + 1}"
    if up is not None and up.type == "subscript_expression" and \
            up.child_by_field_name("argument") == place:
        k = up.child_by_field_name("indices") or up.child_by_field_name("index")
        if k is not None and k.type == "subscript_argument_list":
            k = k.named_children[0] if k.named_child_count == 1 else None
        if k is None:
            raise _Refused(f"`{text(up)}` ({at}) is not read as an element")
        return up.start_byte, up.end_byte, _element(target, k, kinds, f"`{text(up)}` ({at})")
    if up is not None and up.type == "pointer_expression" and \
            text(up.child_by_field_name("operator")) == "*":
        return up.start_byte, up.end_byte, _element(target, None, kinds, "")
    if writer(n, address=True) is not None and (up is None or up.type != "pointer_expression"):
        raise _Refused(f"`{name}` is stepped or set again ({at}): a walk", note=False)
    role = "has its address taken" if up is not None and up.type == "pointer_expression" else \
        "is passed to a call" if up is not None and up.type == "argument_list" else \
        "is compared" if up is not None and up.type == "binary_expression" and \
        text(up.child_by_field_name("operator")) in ("<", "<=", ">", ">=", "==", "!=") else \
        "is offset" if up is not None and up.type == "binary_expression" else \
        "is stored"
    raise _Refused(f"`{name}` {role} (`{text(up or n)}`, {at}): it escapes, so it is not read "
                   f"as `{target.array}[..]`")


#: Expressions that read as one operand of ``+`` anywhere in a sum.
_PRIMARY = ("identifier", "number_literal", "field_expression", "subscript_expression",
            "call_expression", "parenthesized_expression", "cast_expression",
            "unary_expression", "pointer_expression")


def _operand(node: Node, first: bool) -> str:
    """``node``'s text as a term of a sum, parenthesized unless a product (or, as the first
    term, a sum) reads the same there."""
    e = node
    op = text(e.child_by_field_name("operator")) if e.type == "binary_expression" else ""
    safe = e.type in _PRIMARY or op in ("*", "/", "%") or (first and op in ("+", "-"))
    return text(node) if safe else f"({text(node)})"


def _element(target: _Target, k: Node | None, kinds: Kinds, where: str) -> str:
    """The text of ``target``'s element ``k`` on (None: the pointed-to element itself)."""
    zero = k is not None and k.type == "number_literal" and text(k) == "0"
    terms = [*target.terms, *(() if k is None or (zero and target.terms) else ((1, k),))]
    if len(terms) > 1 and not kinds.sum_exact(terms):
        raise _Refused(f"{where} read as `{target.array}[..]` adds "
                       f"`{' + '.join(text(t) for _s, t in terms)}` in a type that may wrap "
                       "where the pointer's steps do not (unsigned 32-bit, a term that may be "
                       "negative)")
    index = ""
    for j, (sign, t) in enumerate(terms):
        piece = _operand(t, j == 0 and sign > 0)
        index += (piece if j == 0 and sign > 0 else f"-{piece}" if j == 0 else
                  f" {'+' if sign > 0 else '-'} {piece}")
    rows = "".join(f"[{p}]" for p in target.prefix)
    return f"{target.array}{rows}[{index or '0'}]"
