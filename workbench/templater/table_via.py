"""TABLE_VIA: a small read-only table the kernel takes as a pointer parameter, staged in
shared memory once a block (:mod:`.const_via`'s copy, for a global table).

A kernel that reads a small table through a global pointer at indices that depend only
on loop counters and constants (a correlation template ``tpl[dy * PATCH + dx]``, filter
taps) has every thread of the block load the same words from global memory (through L1
at best). The copy reads each word once per block and every later read is a shared load
(a broadcast: the block's threads read one index at once). The choice knob:

- ``TABLE_VIA = 0``: global memory, as written;
- ``TABLE_VIA = 1``: a shared-memory copy per block.

Legal where: the parameter's pointee is const-qualified (the kernel does not write it;
every written pointer is another parameter) and every use is a read ``p[index]`` (or
``__ldg(&p[index])``, a plain load of the copy under 1); every index is an integer
expression (``+ - *``) of the counters of enclosing ``for`` loops with constant bounds
(:func:`.apron_window.loop_range`) and integer constants, so it is uniform across the
block and its range is known: the copy holds elements 0 .. the largest index (the
smallest must be 0 or more), at most :data:`MAX_TABLE` bytes; the copy's bytes fit the
48 KiB of static shared memory beside the kernel's own (as written, or each other
transform's shared memory limit) and the copy goes first in the body (before any statement
a thread could leave by). The copy holds the same bits, so every read returns what it
returned: bit-identical at every value. The block reads the elements every thread reads
before it leaves (a thread that returns early reads none, so a launch whose threads all
leave before the table would read a buffer it did not read as written: the table's
extent is the kernel's own constant, so its buffer holds it).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from workbench.templater.analysis import subscript_index, text, walk
from workbench.templater.apron_window import loop_range
from workbench.templater.bounds import interval
from workbench.templater.const_lanes import const_eval, element_bytes
from workbench.templater.const_via import (
    STATIC_SMEM,
    Table,
    body_opening,
    emit_copies,
    limits_beside,
    own_shared_bytes,
)
from workbench.templater.inline_bind import declared_counts
from workbench.templater.plan import Plan
from workbench.templater.rules import literal
from workbench.templater.vector import Illegal

KNOB = "TABLE_VIA"
#: The largest table copied (a template or a filter's taps, not an input tile).
MAX_TABLE = 8192


def apply_table_via(plan: Plan, smem_bytes: str) -> None:
    """Offer TABLE_VIA for each const pointer parameter read only at loop-counter indices
    of a constant range; note every const pointer parameter considered and why not."""
    tables: list[Table] = []
    rewritten = _rewritten_constants(plan)
    for param in plan.kernel.params:
        if not param.is_pointer or not param.is_const:
            continue
        uses = [n for n in walk(plan.body)
                if n.type == "identifier" and text(n) == param.name]
        if not uses:
            continue
        try:
            tables.append(_table(plan, param.name, param.base_type, uses, rewritten))
        except Illegal as exc:
            plan.note(KNOB, False, exc.reason, exc.node or uses[0])
    if not tables:
        return
    try:
        if "CONST_VIA" in plan.params:
            raise Illegal("CONST_VIA stages a __constant__ table already: the two copies' "
                          "room is not counted together")
        copy = sum(table_bytes(t) for t in tables)
        dynamic = literal(smem_bytes)
        limits = limits_beside(plan, KNOB, str(copy), "copy's")
        try:
            own = own_shared_bytes(plan)
        except Illegal:
            if not limits:  # resized shared memory with no limit to add the copy to
                raise
            own = 0
        if own + copy + (dynamic or 0) > STATIC_SMEM:
            raise Illegal(f"a shared copy of {', '.join(t.name for t in tables)} ({copy} "
                          f"bytes) beside the kernel's {own + (dynamic or 0)} bytes of "
                          f"shared memory passes {STATIC_SMEM}")
        at = body_opening(plan)
    except Illegal as exc:
        plan.note(KNOB, False, exc.reason, exc.node or tables[0].uses[0])
        return
    before = list(plan.rw.edits)
    emit_copies(plan, KNOB, tables, at, 0, "the read-only tables")
    body = plan.rw.render(plan.body.start_byte, plan.body.end_byte)
    head = body[:body.index(f"#if {KNOB} == 1")]
    if re.search(r"\b(?:return|goto|break|continue)\b", head):  # a thread may leave first
        plan.rw.edits = before
        plan.note(KNOB, False, "another transform put a statement a thread can leave by "
                  "before the kernel's first statement: not every thread would reach the "
                  "copy's barrier", tables[0].uses[0])
        return
    missed = [t for t in tables if len(re.findall(rf"\b{t.name}\s*\[", body)) > 1]
    if missed:  # only the copy may read the table: another transform wrote a read anew
        plan.rw.edits = before
        plan.note(KNOB, False, f"another transform rewrote the reads of {missed[0].name} "
                  "(they render as written, not through the copy): the copy would serve "
                  "none of them", missed[0].uses[0])
        return
    names = ", ".join(t.name for t in tables)
    plan.add_param(KNOB, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": f"where the read-only table(s) {names} are read: "
                          "0 global memory (as written), 1 a shared-memory copy made once "
                          "per block"}, f"{tables[0].uses[0].start_point[0] + 1}: {names}")
    if dynamic is None:
        plan.constrain(f"{KNOB} == 0 or {own + copy} + ({smem_bytes}) <= {STATIC_SMEM}")
    for limit in limits:
        plan.constrain(limit)
    for t in tables:
        plan.note(KNOB, True, f"{t.name} (const, {t.extents[0]} elements read at indices "
                  "of constant-bound loop counters, the same for every thread of a block): "
                  "1 copies it to shared memory once per block", t.uses[0])


def table_bytes(t: Table) -> int:
    size = element_bytes(t.ctype)
    assert size is not None
    return size * t.extents[0]


def _table(plan: Plan, name: str, ctype: str, uses: list[Node], rewritten: set[str]
           ) -> Table:
    if element_bytes(ctype) is None:
        raise Illegal(f"{name}'s element type {ctype} has no size the templater knows",
                      uses[0])
    reads: list[Node] = []
    ldg: list[Node] = []
    hi = -1
    for use in uses:
        sub = use.parent
        if sub is None or sub.type != "subscript_expression" or \
                sub.child_by_field_name("argument") != use:
            raise Illegal(f"`{text(sub or use)[:60]}`: {name} is used other than as a read "
                          f"{name}[index]", use)
        ldg_callee = _ldg_around(sub)
        outer = sub.parent
        if ldg_callee is None and outer is not None and (
                outer.type in ("pointer_expression", "update_expression") or
                (outer.type == "assignment_expression" and
                 outer.child_by_field_name("left") == sub)):
            raise Illegal(f"`{text(outer)[:60]}`: {name}[..] is written or its address "
                          "taken", use)
        index = subscript_index(sub)
        moved = _knob_names(plan, index, sub, rewritten)
        if moved:
            raise Illegal(f"`{text(sub)[:60]}`: its range reads `{moved}`, which a knob now "
                          "sets: the table's extent would change with the config", use)
        span = _range(index, sub, plan.body)
        if span is None:
            raise Illegal(f"`{text(sub)[:60]}`: the index is not an expression of constant-"
                          "bound loop counters and constants: its range (and the table's "
                          "extent) is not known", use)
        if span[0] < 0:
            raise Illegal(f"`{text(sub)[:60]}` may read below the table ({span[0]})", use)
        hi = max(hi, span[1])
        reads.append(use)
        if ldg_callee is not None:
            ldg.append(ldg_callee)
    extent = hi + 1
    size = element_bytes(ctype)
    assert size is not None
    if extent * size > MAX_TABLE:
        raise Illegal(f"{name}'s reads span {extent} elements ({extent * size} bytes), "
                      f"more than {MAX_TABLE}: not a small table", uses[0])
    return Table(name, ctype, (extent,), tuple(reads), tuple(ldg))


def _ldg_around(sub: Node) -> Node | None:
    """The ``__ldg`` callee of ``__ldg(&sub)``, else None."""
    amp = sub.parent
    if amp is None or amp.type != "pointer_expression" or \
            text(amp.child_by_field_name("operator")) != "&":
        return None
    args = amp.parent
    call = None if args is None else args.parent
    if args is None or args.type != "argument_list" or call is None or \
            call.type != "call_expression" or len(args.named_children) != 1:
        return None
    fn = call.child_by_field_name("function")
    return fn if fn is not None and text(fn) == "__ldg" else None


def _range(node: Node, at: Node, body: Node) -> tuple[int, int] | None:
    """The smallest and largest value of an integer expression of the counters of the
    constant-bound ``for`` loops around ``at`` and constants, else None."""
    counters: dict[str, range] = {}
    p = at.parent
    while p is not None and p != body.parent:
        if p.type == "for_statement":
            got = loop_range(p)
            inner = p.child_by_field_name("body")
            if got is not None and got[0] not in counters and inner is not None and \
                    got[0] not in declared_counts(inner):  # no other variable of that name inside
                counters[got[0]] = got[1]
        p = p.parent
    locals_ = set(declared_counts(body))
    if any(text(n) in locals_ and text(n) not in counters for n in walk(node)
           if n.type == "identifier"):
        return None  # a local's value, not a constant of that name
    return interval(node, {name: (r[0], r[-1]) for name, r in counters.items() if r},
                    const_eval)


def _knob_names(plan: Plan, index: Node, at: Node, rewritten: set[str]) -> str:
    """The first name in ``index`` or in the bounds of the ``for`` loops around ``at`` that
    is one of the ``rewritten`` file constants (:func:`_rewritten_constants`), else ""."""
    spots = [index]
    p = at.parent
    while p is not None and p != plan.body.parent:
        cond = p.child_by_field_name("condition") if p.type == "for_statement" else None
        if cond is not None:
            spots.append(cond)
        p = p.parent
    return next((text(n) for spot in spots for n in walk(spot)
                 if n.type == "identifier" and text(n) in rewritten), "")


def _rewritten_constants(plan: Plan) -> set[str]:
    """The file-scope constants (a ``#define`` or a declaration outside the kernel's body)
    whose definition an earlier transform rewrote (``constexpr int kItems = 4;`` now reads a
    knob)."""
    out: set[str] = set()
    for d in walk(plan.source.tree.root_node):
        name = d.child_by_field_name("name") if d.type == "preproc_def" else \
            d.child_by_field_name("declarator") if d.type == "init_declarator" else None
        if name is None or (d.type == "init_declarator" and
                            plan.body.start_byte <= d.start_byte < plan.body.end_byte):
            continue
        if any(e.start < d.end_byte and d.start_byte < e.end for e in plan.rw.edits):
            out.add(text(name))
    return out
