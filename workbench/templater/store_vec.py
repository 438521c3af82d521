"""STORE_VEC: a pixel's few consecutive outputs stored as one vector (issue 28, session 33).

A per-pixel kernel with interleaved output channels ends with a short loop of constant trip
count storing consecutive elements::

    float *dst = out + (((size_t)blockIdx.z * H + y) * W + x) * COUT;   // COUT == 4
    for (int o = 0; o < COUT; ++o)
        dst[o] = acc[o];

``STORE_VEC = 1`` writes them as one 16-byte (or 8-byte) store in the loop's first trip::

    #if STORE_VEC
    if (o == 0) *reinterpret_cast<float4 *>(&dst[0]) = make_float4(acc[0], acc[1], ..);
    #else
    dst[o] = acc[o];
    #endif

Legal, by the analysis (else a ``STORE_VEC: not applied: reason (line N)`` note): the loop
is ``for (int o = 0; o < N; ++o)`` (N a constant, 2 or 4 for a 4-byte element, 2 for an
8-byte one) whose whole body is one ``P[I] = V;``; I is ``o`` plus terms that are each a
multiple of N (a constant factor), and P a pointer parameter or a local pointer declared once,
never reassigned, as such a parameter plus terms that are multiples of N (``&Q[..]`` too):
the kernel's buffers start aligned (an allocation's start), so the element at I = 0 is
N-element aligned at every value of the kernel's variables; V reads no memory through a
pointer, calls nothing and assigns nothing, and names no member ``o``, so V at each trip is
the same value in the first (the loop writes only P's elements). Element types: float,
int, unsigned (``float2/4``, ``int2/4``, ``uint2/4``), double (``double2``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial

from tree_sitter import Node

from workbench.templater.analysis import (
    added_once,
    declared_name,
    factors,
    int_value,
    line,
    strip,
    subscript_index,
    terms,
    text,
    walk,
)
from workbench.templater.item_state import trip_count
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Rewriter
from workbench.templater.vector_access import Illegal

NAME = "STORE_VEC"
#: element type -> {lanes: vector type}
_VECTORS = {"float": {2: "float2", 4: "float4"}, "int": {2: "int2", 4: "int4"},
            "unsigned": {2: "uint2", 4: "uint4"}, "unsigned int": {2: "uint2", 4: "uint4"},
            "double": {2: "double2"}}


@dataclass(frozen=True)
class StoreRun:
    """A loop storing ``lanes`` consecutive elements: its counter, store and value."""

    loop: Node
    counter: str
    lanes: int
    vector: str  # the vector type (float4)
    statement: Node  # the body's one ``P[I] = V;``
    target: Node  # P[I]
    value: Node  # V


def apply_store_vec(plan: Plan) -> bool:
    """Offer STORE_VEC over every store loop the analysis proves legal (module doc); a note
    with the line for each candidate refused. True when applied."""
    runs: list[StoreRun] = []
    for loop in walk(plan.body):
        try:
            run = _store_run(plan, loop)
        except Illegal as exc:
            plan.note(NAME, False, exc.reason, exc.node)
            continue
        if run is not None:
            runs.append(run)
    if not runs:
        return False
    for run in runs:
        plan.rw.replace_span(run.statement.start_byte, run.statement.end_byte,
                             make=partial(_vector_store, run=run))
    plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: each pixel's consecutive outputs stored as one "
                                         f"{runs[0].vector}; 0: one at a time, as written"},
                   f"{line(runs[0].loop)}: {text(runs[0].loop).splitlines()[0][:60]}")
    plan.note(NAME, True, "; ".join(
        f"the {r.lanes} stores of the loop at line {line(r.loop)} as one {r.vector} (their "
        "first element's place a multiple of it from an aligned buffer's start)"
        for r in runs), runs[0].loop)
    return True


def _vector_store(rw: Rewriter, run: StoreRun) -> str:
    """The store as one vector in the loop's first trip, or as written (``#if``)."""
    word = re.compile(rf"\b{re.escape(run.counter)}\b")
    written = rw.render(run.statement.start_byte, run.statement.end_byte)
    first = word.sub("0", rw.text(run.target))
    value = rw.text(run.value)
    lanes = ", ".join(word.sub(str(k), value) for k in range(run.lanes))
    return (f"\n#if {NAME}\nif ({run.counter} == 0) *reinterpret_cast<{run.vector} *>(&{first})"
            f" = make_{run.vector}({lanes});  // the loop's {run.lanes} stores at once\n#else\n"
            f"{written}\n#endif\n")


def _store_run(plan: Plan, loop: Node) -> StoreRun | None:
    """The loop's store run; None where the loop is no candidate (not a constant-trip loop
    whose one statement stores through a pointer at its counter); Illegal where it is one
    the analysis cannot show legal."""
    if loop.type != "for_statement":
        return None
    init, body = loop.child_by_field_name("initializer"), loop.child_by_field_name("body")
    trips = trip_count(loop)
    if trips is None or init is None or init.type != "declaration" or body is None:
        return None
    counter, _d, start = declared_name(init)
    inner = [c for c in body.named_children if c.type != "comment"] \
        if body.type == "compound_statement" else [body]
    if len(inner) != 1 or inner[0].type != "expression_statement" or \
            not inner[0].named_children:
        return None
    stmt = inner[0]
    assign = strip(stmt.named_children[0])
    if assign.type != "assignment_expression" or \
            text(assign.child_by_field_name("operator")) != "=":
        return None
    target, value = assign.child_by_field_name("left"), assign.child_by_field_name("right")
    if target is None or value is None:
        return None
    target = strip(target)
    if target.type != "subscript_expression":
        return None
    pointer = strip(target.child_by_field_name("argument") or target.named_children[0])
    index = subscript_index(target)
    if pointer.type != "identifier" or not any(
            n.type == "identifier" and text(n) == counter for n in walk(index)):
        return None
    base, elem, offset = _base_pointer(plan, pointer)
    if base is None:
        return None  # a local array or a pointer of no parameter: not a buffer's store
    if int_value(start) != 0:
        raise Illegal(f"the loop at line {line(loop)} starts at {text(start)}, not 0: its "
                       "first store's place is not shown aligned", loop)
    vector = _VECTORS.get(elem, {}).get(trips)
    if vector is None:
        raise Illegal(f"{trips} stores of {elem} have no vector type (2 or 4 of a 4-byte "
                       "element, 2 of an 8-byte one)", loop)
    if added_once(index, counter) is None:
        raise Illegal(f"`{text(index)}` is not `{counter}` plus terms free of it", index)
    if offset:
        _aligned(offset, trips, base)
    rest = [(s, t) for s, t in terms(index) if text(t) != counter]
    _aligned(rest, trips, index)
    _pure_value(plan, value, counter)
    if any(n.type == "field_identifier" and text(n) == counter for n in walk(assign)):
        raise Illegal(f"a member named `{counter}` beside the counter", assign)
    return StoreRun(loop, counter, trips, vector, stmt, target, value)


def _base_pointer(plan: Plan, pointer: Node
                  ) -> tuple[Node | None, str, list[tuple[int, Node]]]:
    """(the pointer's declaration or parameter node, its element type, the offset's terms)
    where ``pointer`` is a non-const pointer parameter (no offset), or a local pointer
    declared once as one plus an offset; (None, "", []) for any other name."""
    name = text(pointer)
    try:
        param = plan.kernel.param(name)
    except KeyError:
        param = None
    if param is not None:
        if not param.is_pointer or param.is_const:
            return None, "", []
        return pointer, param.base_type, []
    d = plan.facts.defs.get(name)
    if d is None or not d.is_pointer or d.value is None:
        return None, "", []
    if d.assigned:
        raise Illegal(f"the pointer `{name}` is assigned after its declaration", d.decl)
    offset, base = _offset_terms(d.value)
    try:
        bparam = plan.kernel.param(text(base)) if base is not None else None
    except KeyError:
        bparam = None
    if bparam is None or not bparam.is_pointer or bparam.is_const:
        raise Illegal(f"`{name}` = `{text(d.value)[:60]}` is not a kernel buffer parameter "
                       "plus an offset (the store's alignment is not shown)", d.decl)
    declared = text(d.decl).split(name)[0]
    elem = " ".join(w for w in re.sub(r"[*&]", " ", declared).split()
                    if w not in ("const", "__restrict__", "volatile"))
    if elem != bparam.base_type:
        raise Illegal(f"`{name}` points to {elem}, its buffer holds {bparam.base_type}", d.decl)
    return d.decl, elem, offset


def _offset_terms(value: Node) -> tuple[list[tuple[int, Node]], Node | None]:
    """``Q + a + b`` -> ([a, b], Q); ``&Q[a + b]`` -> ([a, b], Q); else ([], None)."""
    value = strip(value)
    if value.type == "pointer_expression" and text(
            value.child_by_field_name("operator")) == "&":
        arg = strip(value.child_by_field_name("argument") or value.named_children[-1])
        if arg.type == "subscript_expression":
            q = strip(arg.child_by_field_name("argument") or arg.named_children[0])
            return terms(subscript_index(arg)), q if q.type == "identifier" else None
        return [], None
    parts = terms(value)
    heads = [t for s, t in parts if s == 1 and t.type == "identifier"]
    if not heads:
        return [], None
    return [(s, t) for s, t in parts if t != heads[0]], heads[0]


def _aligned(rest: list[tuple[int, Node]], lanes: int, where: Node) -> None:
    """Each term a multiple of ``lanes`` (a constant factor divisible by it)."""
    for _sign, term in rest:
        if not any((v := int_value(f)) is not None and lanes and v % lanes == 0
                   for f in factors(term)):
            raise Illegal(f"the term `{text(term)[:60]}` is not shown a multiple of {lanes} "
                           "elements (the vector store's alignment)", where)


def _pure_value(plan: Plan, value: Node, counter: str) -> None:
    """V reads no memory through a pointer, calls nothing, assigns nothing."""
    for n in walk(value):
        if n.type in ("call_expression", "assignment_expression", "update_expression"):
            raise Illegal(f"the value `{text(value)[:60]}` has `{text(n)[:40]}` (each trip's "
                           "value is not shown the first trip's)", value)
        if n.type == "pointer_expression" or (n.type == "identifier" and (
                plan.pointer(text(n)) or ((d := plan.facts.defs.get(text(n))) is not None
                                          and d.is_pointer))):
            raise Illegal(f"the value `{text(value)[:60]}` reads memory through a pointer "
                           "(the stores may change it)", value)
