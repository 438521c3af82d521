"""ILP for a warp family's segment loops: several independent sums per lane.

A segment loop (:mod:`.warp_segments`) ``for (j = base + lane; j < end; j += LANES) acc += E;``
reads its terms through run-time offsets (a CSR row's ``vals[j] * x[col_idx[j]]``), so it is
not vectorized; each step's loads wait on the previous step's add. Practice for such
gather-bound sums (sparse and segmented reductions) is several loads in flight per lane:
``ILP`` terms a step, each into its own sum (``acc`` and ``ILP - 1`` partial sums), the steps
``ILP * LANES`` apart, then the loop as written for the last terms, then the partial sums
added into ``acc``. Each lane adds the same terms, in another order (a reassociation the
gate's tolerance checks, as LANES does). ILP 1 is the loop as written.

Legal where the loop body is the one statement ``acc += E;`` with ``acc`` a scalar local of
an arithmetic type declared outside the loop, ``E`` free of ``acc``, assignments and calls
that are not pure (:func:`.purity.side_effect_free`; a read-only load ``__ldg(&p[k])`` is a
read like ``p[k]``: the loop writes no memory, so its terms read the same values in any
order), and the loop ``j < bound`` with ``j``
declared in its header; refused with the line otherwise. Where the term is the float
element the counter walks, VEC reads the segment's aligned middle as float4 ahead of these
loops (:mod:`.warp_seg_vec`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tree_sitter import Node

from workbench.templater.analysis import binary, declared_name, line, mentions, strip, text, walk
from workbench.templater.plan import Plan
from workbench.templater.purity import pure_calls, side_effect_free
from workbench.templater.rewrite import Rewriter, TextFn
from workbench.templater.vector import Illegal
from workbench.templater.warp_seg_vec import NAME as VEC
from workbench.templater.warp_seg_vec import SegmentWalk, segment_walk, vector_walk

NAME = "ILP"
_ARITHMETIC = ("float", "double", "int", "unsigned", "long", "long long", "unsigned int",
               "unsigned long long", "size_t")


@dataclass(frozen=True)
class _Chain:
    """One segment loop ILP splits: its node, counter (name, type), start, bound, the
    accumulator (name, type) and the added term."""

    loop: Node
    var: str
    var_type: str
    start: Node
    bound: Node
    acc: str
    acc_type: str
    term: Node
    vec: SegmentWalk | None  # the float4 middle's walk (VEC), None where refused


def apply_chains(plan: Plan, segments: list[Node], lanes: str, vec: bool) -> None:
    """Give each segment loop of the shape above ILP independent sums (the others, a
    pass scaling the row after its sum, say, stay as written: each of their steps is
    independent of the last already) and, where ``vec`` (every lane loop a segment loop)
    and every segment loop adds the float element it walks, VEC's float4 middle
    (:mod:`.warp_seg_vec`); notes why not."""
    chains: list[_Chain] = []
    for loop in segments:
        try:
            chains.append(_chain(plan, loop, vec))
        except Illegal as exc:
            plan.note(NAME, False, exc.reason, exc.node or loop)
            plan.note(VEC, False, exc.reason, exc.node or loop)
    if not chains:
        return
    # VEC's float4 middle only where every segment loop is a sum it reads (warp_seg_vec)
    vectors = len(chains) == len(segments) and all(c.vec is not None for c in chains)
    for c in chains:
        c = c if vectors else replace(c, vec=None)
        head = _line_start(plan, c.loop)
        indent = plan.rw.data[head:c.loop.start_byte].decode()
        opening = "" if plan.rw.data[head - 1:head] in (b"\n", b"") else "\n"
        plan.rw.replace_span(head, c.loop.start_byte, make=_maker(c, lanes, indent, opening))
        plan.rw.insert(c.loop.end_byte, "\n#endif")
        plan.note(NAME, True, f"`{c.acc} +=` over the segment loop: ILP independent sums a "
                  "lane, added after the loop", c.loop)
    plan.add_param(NAME, {"kind": "choice", "values": [1, 2, 4], "default": 1,
                          "description": "terms of a segment loop each lane loads a step, "
                                         "each into its own sum (as written: 1)"},
                   f"{line(chains[0].loop)}: segment loop")
    if vectors:
        for c in chains:
            plan.note(VEC, True, f"`{c.acc} +=` over the segment loop: its 16-byte-aligned "
                      "middle as float4 (ILP in flight a lane), the head before it and the "
                      "tail after it one float a lane", c.loop)
        plan.add_param(VEC, {"kind": "choice", "values": [1, 4], "default": 1,
                             "description": "floats a load in a segment's aligned middle: 1 "
                                            "(as written) or 4 (float4)"},
                       f"{line(chains[0].loop)}: segment loop")


def _chain(plan: Plan, loop: Node, vec: bool) -> _Chain:
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    body = loop.child_by_field_name("body")
    if init is None or cond is None or body is None:
        raise Illegal("the segment loop has no initializer, condition or body", loop)
    var, name, start = declared_name(init)
    # the words before the name: `int`, or `const float*` for a pointer walk
    var_type = text(init).encode()[:name.start_byte - init.start_byte].decode().strip() \
        if name is not None else text(init.child_by_field_name("type"))
    before = loop.prev_named_sibling
    if before is not None and before.type.startswith("preproc") and "pragma" in text(before):
        raise Illegal(f"`{text(before).strip()}` applies to the loop as written (the split "
                      "loops would not follow it)", before)
    parts = binary(cond)
    if parts is None or parts[1] != "<" or text(strip(parts[0])) != var or start is None:
        raise Illegal(f"the segment loop's condition `{text(cond)}` is not `{var} < bound`",
                      cond)
    bound = parts[2]
    stmt = body
    if stmt.type == "compound_statement":
        inner = [c for c in stmt.named_children if c.type != "comment"]
        if len(inner) != 1:
            raise Illegal("the segment loop's body is not one `acc += term;`", body)
        stmt = inner[0]
    expr = stmt.named_children[0] if stmt.type == "expression_statement" and \
        stmt.named_child_count == 1 else None
    if expr is None or expr.type != "assignment_expression" or \
            text(expr.child_by_field_name("operator")) != "+=":
        raise Illegal(f"the segment loop's body `{text(stmt)[:40]}` is not `acc += term;`",
                      stmt)
    target, term = expr.child_by_field_name("left"), expr.child_by_field_name("right")
    assert target is not None and term is not None and bound is not None
    acc = text(target)
    d = plan.facts.defs.get(acc) if target.type == "identifier" else None
    acc_type = _scalar_type(d.decl) if d is not None and not d.is_pointer and \
        not d.is_shared else None
    if d is None or acc_type is None or d.decl.start_byte >= loop.start_byte:
        raise Illegal(f"`{acc}` is not a scalar local of an arithmetic type declared before "
                      "the loop", target)
    if mentions(term, {acc}) or not _reads_only(plan, term) or \
            not side_effect_free(plan.source, bound):
        raise Illegal(f"the term `{text(term)[:40]}` reads `{acc}`, assigns or calls what is "
                      "not pure", term)
    walk: SegmentWalk | None = None
    if not vec:
        plan.note(VEC, False, "the kernel's other lane loops take the family's VEC", loop)
    else:
        try:
            walk = segment_walk(plan, var, var_type, term)
        except Illegal as exc:
            plan.note(VEC, False, exc.reason, exc.node or loop)
    return _Chain(loop, var, var_type, start, bound, acc, acc_type, term, walk)


#: Loads through the read-only or cache-hinted paths: reads of memory, as ``p[k]`` is.
_LOADS = ("__ldg", "__ldca", "__ldcg", "__ldcs", "__ldlu")


def _reads_only(plan: Plan, term: Node) -> bool:
    """``term`` is side-effect free, its load intrinsics read as the loads they are (their
    arguments checked in turn)."""
    pure = pure_calls(plan.source) | frozenset(_LOADS)
    for n in walk(term):
        if n.type == "call_expression" and text(n.child_by_field_name("function")) not in pure:
            return False
        if n.type in ("assignment_expression", "update_expression", "comma_expression"):
            return False
    return True


def _scalar_type(decl: Node) -> str | None:
    """The declared type of a one-variable declaration when it is arithmetic (qualifiers
    dropped), else None."""
    kind = decl.child_by_field_name("type")
    name = " ".join(text(kind).split()) if kind is not None else ""
    if any(n.type in ("array_declarator", "pointer_declarator", "reference_declarator")
           for n in walk(decl)):
        return None
    return name if name in _ARITHMETIC else None


def _line_start(plan: Plan, loop: Node) -> int:
    """The first byte of the loop's line when only blanks precede the loop there, else the
    loop's own first byte (the ``#if`` then opens a line of its own)."""
    data = plan.rw.data
    head = data.rfind(b"\n", 0, loop.start_byte) + 1
    return head if not data[head:loop.start_byte].strip() else loop.start_byte


def _maker(c: _Chain, lanes: str, indent: str, opening: str) -> TextFn:
    """The lazy text of :func:`_split` (rendered with the edits inside the loop)."""
    return lambda rw: opening + _split(rw, c, lanes, indent)


def _split(rw: Rewriter, c: _Chain, lanes: str, indent: str) -> str:
    """The text put before the loop: the float4 walk under ``#if VEC > 1`` where the loop
    has one, the split loops under ``#if ILP > 1`` (``#elif``), then ``#else``
    and the loop's indent (the loop as written follows, closed by the ``#endif`` inserted
    after it)."""
    start, bound, term = rw.text(c.start), rw.text(c.bound), rw.text(c.term)
    t, v, acc = c.acc_type, c.var_type, c.acc
    frozen = f"{v} const" if v.endswith("*") else f"const {v}"  # a copy of the counter
    opening = f"#if {NAME} > 1\n" if c.vec is None else (
        f"#if {VEC} > 1\n" + vector_walk(rw, c.vec, c.start, c.bound, acc, term, lanes, NAME)
        + f"#elif {NAME} > 1\n")
    return opening + (
            "  {  // ILP independent sums a lane, the steps ILP * LANES apart\n"
            f"    {t} wb_part[{NAME} - 1];\n"
            "#pragma unroll\n"
            f"    for (int wb_u = 0; wb_u < {NAME} - 1; ++wb_u) wb_part[wb_u] = ({t})0;\n"
            f"    {v} {c.var} = {start};\n"
            f"    for (; {c.var} + ({NAME} - 1) * {lanes} < {bound}; "
            f"{c.var} += {NAME} * {lanes}) {{\n"
            f"      {acc} += {term};\n"
            "#pragma unroll\n"
            f"      for (int wb_u = 1; wb_u < {NAME}; ++wb_u) {{\n"
            f"        {frozen} wb_at = {c.var} + wb_u * {lanes};\n"
            f"        {{ {frozen} {c.var} = wb_at; wb_part[wb_u - 1] += {term}; }}\n"
            "      }\n"
            "    }\n"
            f"    for (; {c.var} < {bound}; {c.var} += {lanes}) {acc} += {term};\n"
            "#pragma unroll\n"
            f"    for (int wb_u = 0; wb_u < {NAME} - 1; ++wb_u) {acc} += wb_part[wb_u];\n"
            "  }\n"
            f"#else\n{indent}")
