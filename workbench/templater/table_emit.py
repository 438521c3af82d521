"""TABLE: a loop's per-entry terms computed once per block into a ``__shared__`` table.

A per-element kernel summing over a small table (``for (int s = 0; s < NSRC; ++s)``)
evaluates each entry's own terms (:mod:`.table_terms`: ``lj(RCUT * RCUT, sig, eps)``,
``1.0f / b.mass``) once per element and entry. With ``TABLE = 1`` the block's threads first
fill one ``__shared__`` array per term (``float`` or ``double``, the term's type), entries ``t, t + nthreads, ...`` each (any
block size, any table length), meet at ``__syncthreads()``, and the loop reads
``wb_tab<k>_<j>[s]`` instead; ``TABLE = 0`` is the kernel as written (the term stays, via
``WB_TABLE(slot, term)``, a macro that picks one). The fill runs first in the kernel body,
before any early return, so every thread reaches the barrier.

Legal only where (each refusal names the line): the loop counts ``s`` from 0 up by one to a
length that is a compile-time constant or a scalar parameter never assigned (then bounded by
the extent of a ``__constant__`` table the terms read, else refused: the table would be
unbounded), or down by one between compile-time constants (Clenshaw's ``for (j = N - 1; j >
0; --j)``: the table holds entries 0 to N - 1, the fill writes those the loop reads); the counter is not assigned in the body; the body writes no memory and calls no
barrier or atomic (no state other threads see changes while the table is in use); every
table the terms read is read-only (``__constant__``, or a pointer the kernel never writes
through nor passes on, and ``const`` where the kernel writes other memory: they might
alias); the kernel declares no ``__shared__`` memory of its own; the tables fit in 48 KiB
of static shared memory.

A loop that is not a counted ``for`` but steps an open counter (a series ``do { term *= q /
(k * k); .. ++k; } while (term > eps * sum);``) gets, under the same knob, a table of ``1 /
d(k)`` for its division by a function of the counter (:mod:`.table_open`: the rule that
allows the reciprocal, the fill, the rewrite); one that has no such division is noted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    declared_name,
    int_value,
    line,
    strip,
    text,
    walk,
)
from workbench.templater.plan import Plan
from workbench.templater.rewrite import Rewriter
from workbench.templater.table_open import (
    CAP,
    TABLE_BYTES,
    OpenTable,
    note_open,
    open_fill,
    open_table,
    rewrite_open,
)
from workbench.templater.table_terms import (
    EntryScope,
    assigned_in,
    base_name,
    capacity,
    const_int,
    entry_scope,
    file_ints,
    hoistable_terms,
    table_reads,
    value_type,
    write_targets,
)
from workbench.templater.vector import Illegal

NAME = "TABLE"
STATIC_SMEM_BYTES = 48 * 1024  # static __shared__ per block (more needs dynamic memory)
_BYTES = {"float": 4, "double": 8}
_SHARED_STATE_CALLS = ("__syncthreads", "__syncwarp", "atomic", "__threadfence", "__shfl")
_MACRO = (f"#if {NAME}\n#define WB_TABLE(slot, ...) (slot)\n#else\n"
          "#define WB_TABLE(slot, ...) (__VA_ARGS__)\n#endif")


@dataclass(frozen=True)
class TableLoop:
    """A loop whose per-entry terms go to the per-block table."""

    loop: Node
    counter: str
    counter_type: str
    length: Node
    capacity: int
    terms: tuple[Node, ...]
    types: tuple[str, ...]  # per term: float or double
    locals: tuple[Node, ...]  # the entry locals the terms read, in the body's order
    low: int = 0  # the first entry the loop reads (a loop counting down: its last)
    extent: int | None = None  # a loop counting down: its first entry + 1 (else length's)


def apply_table(plan: Plan) -> bool:
    """Give every table loop with per-entry terms a TABLE form; True when one did."""
    if NAME in plan.params:
        return False
    found: list[TableLoop] = []
    opened: list[OpenTable] = []
    for loop in walk(plan.body):
        header = _header(loop) if loop.type == "for_statement" else None
        down = _down_header(loop, file_ints(plan)) if loop.type == "for_statement" and \
            header is None else None
        try:
            if header is None and down is None:
                opened += _open_loop(plan, loop)
                continue
            table = _table_loop(plan, loop, *header) if header is not None else \
                _down_loop(plan, loop, *down) if down is not None else None
        except Illegal as exc:
            plan.note(NAME, False, f"per-entry terms in a per-block table: {exc.reason}",
                      exc.node or loop)
            continue
        if table is not None:
            found.append(table)
    if not found and not opened:
        return False
    total = sum(_BYTES[kind] * t.capacity for t in found
                for kind in dict(zip(map(text, t.terms), t.types, strict=True)).values()) + \
        TABLE_BYTES * len(opened)
    if total > STATIC_SMEM_BYTES:
        plan.note(NAME, False, f"per-entry terms in a per-block table: {total} bytes of "
                  f"tables exceed {STATIC_SMEM_BYTES} bytes of static shared memory",
                  (found or opened)[0].loop)
        return False
    _emit(plan, found, opened)
    first = (found or opened)[0].loop
    plan.add_param(NAME, {"kind": "choice", "values": [0, 1], "default": 0,
                          "description": "1: the loop's per-entry terms computed once per "
                                         "block into a shared table; 0: per pair, as "
                                         "written"},
                   f"{line(first)}: {text(first).splitlines()[0][:60]}")
    for t in found:
        plan.note(NAME, True, f"{len(t.terms)} per-entry term(s) "
                  f"({'; '.join(text(n)[:40] for n in t.terms)}) of {t.capacity} entries "
                  "computed once per block", t.loop)
    for o in opened:
        plan.note(NAME, True, f"`{text(o.division)[:40]}` as a product with 1 / "
                  f"({text(o.divisor)[:30]}) from a table of {CAP} entries of the "
                  f"{o.counter.form} loop's counter `{o.counter.name}` (a double series of "
                  "terms >= 0 stored as float)", o.loop)
    return True


def _open_loop(plan: Plan, loop: Node) -> list[OpenTable]:
    """The reciprocal table of a loop with an open counter (:mod:`.table_open`), [] where it
    has none (noted where it counts)."""
    table = open_table(plan, loop)
    body = loop.child_by_field_name("body")
    if table is None:
        note_open(plan, loop, NAME)
        return []
    assert body is not None
    _check_shared_state(plan, body)
    return [table]


def _header(loop: Node) -> tuple[str, str, Node] | None:
    """(counter, its type, length) of ``for (T s = 0; s < L; ++s | s++ | s += 1)``."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or cond is None or update is None or init.type != "declaration":
        return None
    counter, _d, start = declared_name(init)
    parts = binary(cond)
    if not counter or int_value(start) != 0 or parts is None or parts[1] != "<" or \
            text(strip(parts[0])) != counter:
        return None
    if text(update).replace(" ", "") not in (f"++{counter}", f"{counter}++",
                                             f"{counter}+=1"):
        return None
    return counter, text(init.child_by_field_name("type")), parts[2]


def _down_header(loop: Node, ints: dict[str, int]) -> tuple[str, str, Node, int, int] | None:
    """(counter, its type, first value, its value, the last entry) of ``for (T s = F; s > L;
    --s | s-- | s -= 1)`` (or ``s >= L``) with F and L compile-time integers, 0 <= L <= F."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or cond is None or update is None or init.type != "declaration":
        return None
    counter, _d, start = declared_name(init)
    parts = binary(cond)
    if not counter or start is None or parts is None or parts[1] not in (">", ">=") or \
            text(strip(parts[0])) != counter or text(update).replace(" ", "") not in (
                f"--{counter}", f"{counter}--", f"{counter}-=1"):
        return None
    first, end = const_int(start, ints), const_int(parts[2], ints)
    if first is None or end is None:
        return None
    low = end + 1 if parts[1] == ">" else end
    if not 0 <= low <= first:
        return None
    return counter, text(init.child_by_field_name("type")), start, first, low


def _down_loop(plan: Plan, loop: Node, counter: str, kind: str, start: Node, first: int,
               low: int) -> TableLoop | None:
    """A loop counting down over the constant entries ``low`` to ``first``: the table holds
    entries 0 to ``first`` and the fill writes those the loop reads."""
    found = _table_loop(plan, loop, counter, kind, start)
    return replace(found, low=low, extent=first + 1, capacity=first + 1) \
        if found is not None else None


def _table_loop(plan: Plan, loop: Node, counter: str, kind: str, length: Node
                ) -> TableLoop | None:
    body = loop.child_by_field_name("body")
    if body is None:
        return None
    scope = entry_scope(plan, loop, counter)
    terms = hoistable_terms(body, scope, plan)
    if not terms:
        return None
    if counter in assigned_in(body):
        raise Illegal(f"the loop assigns its counter `{counter}`", body)
    _check_length(plan, length)
    _check_shared_state(plan, body)
    needed = _needed_locals(terms, scope)
    reads = table_reads([*terms, *needed], scope)
    for name in dict.fromkeys(n for n, _i in reads):
        _check_read_only(plan, name)
    types = tuple(value_type(t, scope, plan) or "float" for t in terms)
    return TableLoop(loop, counter, kind, length, capacity(length, reads, scope),
                     tuple(terms), types, tuple(needed))


def _check_length(plan: Plan, length: Node) -> None:
    node = strip(length)
    if node.type == "identifier" and plan.facts.defs.get(text(node)) is None and \
            any(p.name == text(node) and p.is_scalar for p in plan.kernel.params):
        if text(node) in assigned_in(plan.body):
            raise Illegal(f"the loop's length `{text(node)}` is assigned in the kernel", length)
        return
    if not all(n.type in ("number_literal", "identifier", "binary_expression",
                          "parenthesized_expression") or not n.is_named for n in walk(node)):
        raise Illegal(f"the loop's length `{text(length)}` is not a constant or a scalar "
                      "parameter", length)
    if const_int(node, file_ints(plan)) is None:
        raise Illegal(f"the loop's length `{text(length)}` is not a constant or a scalar "
                      "parameter", length)


def _check_shared_state(plan: Plan, body: Node) -> None:
    """The loop body writes no memory and calls no barrier, atomic or shuffle."""
    local_arrays = {d.name for d in plan.facts.defs.values()
                    if not d.is_pointer and not d.is_shared}
    for target in write_targets(body):
        if base_name(target) not in local_arrays:
            raise Illegal(f"the loop writes `{text(target)[:40]}` (state other threads may "
                          "see) while the table is in use", target)
    for n in walk(body):
        callee = text(n.child_by_field_name("function")) if n.type == "call_expression" \
            else ""
        if callee.startswith(_SHARED_STATE_CALLS):
            raise Illegal(f"the loop calls `{callee}`", n)
    if any(d.is_shared for d in plan.facts.defs.values()):
        shared = next(d for d in plan.facts.defs.values() if d.is_shared)
        raise Illegal(f"the kernel declares __shared__ `{shared.name}` of its own (the "
                      "table would share its capacity)", shared.decl)


def _check_read_only(plan: Plan, name: str) -> None:
    """A pointer table is read-only: never written through, never passed on, and
    ``const`` where the kernel writes any other memory."""
    if not plan.pointer(name):
        return  # a file-scope __constant__ / __device__ array (the kernel's parse shows)
    for target in write_targets(plan.body):
        if base_name(target) == name:
            raise Illegal(f"the kernel writes `{text(target)[:40]}`: the table `{name}` "
                          "is not read-only", target)
    for n in walk(plan.body):
        if n.type == "identifier" and text(n) == name and n.parent is not None and \
                n.parent.type == "argument_list":
            raise Illegal(f"`{name}` is passed to a call: the table may be written", n)
        if n.type == "init_declarator" and any(
                c.type == "identifier" and text(c) == name
                for c in walk(n.child_by_field_name("value") or n)):
            d = n.child_by_field_name("declarator")
            pointee_const = n.parent is not None and any(
                text(c) == "const" for c in n.parent.children if c.end_byte <= n.start_byte)
            if d is not None and d.type == "pointer_declarator" and not pointee_const:
                raise Illegal(f"`{text(n)[:40]}`: a non-const pointer into the table", n)
    written = [t for t in write_targets(plan.body) if plan.pointer(base_name(t))]
    if written and not plan.kernel.param(name).is_const:
        raise Illegal(f"the table `{name}` is not const and the kernel writes "
                      f"`{text(written[0])[:40]}`: they may be the same memory", written[0])


def _needed_locals(terms: list[Node], scope: EntryScope) -> list[Node]:
    """The entry locals' declarations the terms read, directly or through each other."""
    needed: set[str] = set()
    pending = [n for t in terms for n in walk(t)]
    while pending:
        n = pending.pop()
        name = text(n) if n.type == "identifier" else ""
        if name in scope.locals and name not in needed:
            needed.add(name)
            pending.extend(walk(scope.locals[name]))
    return [decl for name, decl in scope.locals.items() if name in needed]


def _emit(plan: Plan, found: list[TableLoop], opened: list[OpenTable]) -> None:
    plan.helper(_MACRO)
    tid, nthreads = ("threadIdx.x", "blockDim.x") if len(plan.block) == 1 else (
        "(threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x",
        "blockDim.x * blockDim.y * blockDim.z")
    parts = [f"\n#if {NAME}  // per-entry terms, computed once per block\n"]
    for k, t in enumerate(found):
        compile_time = const_int(t.length, file_ints(plan)) is not None
        extent = text(t.length) if compile_time else str(t.capacity)
        bound = f"{t.counter} < {text(t.length)}" if compile_time else \
            f"{t.counter} < {text(t.length)} && {t.counter} < {t.capacity}"
        if t.extent is not None:  # counting down: entries t.low to t.extent - 1
            extent, bound = str(t.extent), f"{t.counter} < {t.extent}"
        # one slot per distinct term (`sig[g]` read twice is one slot)
        first = {text(term): j for j, term in reversed(list(enumerate(t.terms)))}
        slots = [f"wb_tab{k}_{first[text(term)]}" for term in t.terms]
        for kind in dict.fromkeys(t.types):
            mine = list(dict.fromkeys(s for s, each in zip(slots, t.types, strict=True)
                                      if each == kind))
            parts.append(f"  __shared__ {kind} {', '.join(f'{s}[{extent}]' for s in mine)};"
                         f"  // the loop `{_loop_head(t.loop)}`\n")
        begin = f"{t.low} + {tid}" if t.low else tid
        parts.append(f"  for ({t.counter_type} {t.counter} = {begin}; {bound}; "
                     f"{t.counter} += {nthreads}) {{\n")
        parts += [f"    {text(d)}\n" for d in t.locals]
        parts += [f"    {s}[{t.counter}] = {text(term)};\n" for s, term in
                  dict(zip(slots, t.terms, strict=True)).items()]
        parts.append("  }\n")
        for s, term in zip(slots, t.terms, strict=True):
            _replace_term(plan.rw, term, f"{s}[{t.counter}]")
    for k, o in enumerate(opened, len(found)):
        parts.append(open_fill(o, f"wb_tab{k}_0", tid, nthreads))
        rewrite_open(plan.rw, o, f"wb_tab{k}_0")
    parts.append("  __syncthreads();\n#endif\n")
    # the kernel body's `{` replaced by `{` + the fill: outside every statement, so a
    # transform rewriting the first statement (`{int i = ...` written tight) leaves it be
    start = plan.body.start_byte
    plan.rw.replace_span(start, start + 1, "{" + "".join(parts))


def _loop_head(loop: Node) -> str:
    """``for (...)`` of ``loop``: the comment names the loop as written (a line of the
    parsed source need not be the kernel's: the passes before the analysis respell it)."""
    body = loop.child_by_field_name("body")
    head = text(loop)[:body.start_byte - loop.start_byte] if body is not None else text(loop)
    return " ".join(head.split())


def _replace_term(rw: Rewriter, term: Node, slot: str) -> None:
    # a plain edit (not lazy): a transform rendering the term's node as a whole sees it
    rw.replace(term, f"WB_TABLE({slot}, {text(term)})")
