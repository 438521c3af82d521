"""The partial sums a 2-D block's threads combine across a dimension (:mod:`.smem_rect`):
where a shared array is read across the threads of a dimension its extent is named by (a
loop ``for (k = 0; k < ROWS; ++k) s += part[k][tx]``, a halving tree's ``part[ty + s][tx]``),
each thread's slot must hold its share of a sum the threads of that dimension split (a loop
from the thread index stepping by the dimension's name or blockDim), so the total is the
same at every size, only added in another order."""

from __future__ import annotations

from tree_sitter import Node

from workbench.templater.analysis import (
    LOOPS,
    binary,
    builtin,
    declared_name,
    identifiers,
    strip,
    text,
    walk,
)
from workbench.templater.block import _shared_arrays
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused, subscript

#: The compound assignments that accumulate into a value (a loop holding one sums).
ACCUMULATE = ("+=", "-=", "*=", "|=", "^=", "&=")


def accesses(plan: Plan, array: str, rank: int) -> list[list[Node]]:
    """The index lists of every full subscript of ``array`` in the body."""
    out = []
    for n in walk(plan.body):
        if n.type == "subscript_expression" and (n.parent is None or
                                                 n.parent.type != "subscript_expression"):
            read = subscript(n)
            if read is not None and read[0] == array and len(read[1]) == rank:
                out.append(read[1])
    return out


def summing_loops(plan: Plan, names: set[str]) -> list[Node]:
    """Loops bounded by one of ``names`` that accumulate (``s += ..``)."""
    out = []
    for loop in walk(plan.body):
        cond = loop.child_by_field_name("condition") if loop.type == "for_statement" else None
        body = loop.child_by_field_name("body")
        if cond is None or body is None or not names & {text(n) for n in identifiers(cond)}:
            continue
        if any(n.type == "assignment_expression" and
               text(n.child_by_field_name("operator")) in ACCUMULATE
               for n in walk(body)):
            out.append(loop)
    return out


def partials_fold(plan: Plan, loop: Node, names: dict[str, str]) -> None:
    """Refuse unless ``loop`` (``for (k = 0; k < N; ++k) s += part[k][tx]``) adds the
    block's partial sums: N a dimension's name, ``part`` shared, read at ``k`` in the
    position of that dimension, every store to it writing there the thread index an
    accumulator whose every update adds terms in a loop from the thread index stepping by
    the name (or ``blockDim``): the rows split among the threads, the total the same."""
    init = loop.child_by_field_name("initializer")
    cond = binary(loop.child_by_field_name("condition"))  # type: ignore[arg-type]
    var = declared_name(init)[0] if init is not None and init.type == "declaration" else ""
    dim = next((d for d, n in names.items() if cond is not None and cond[1] == "<" and
                text(strip(cond[0])) == var and text(strip(cond[2])) == n), None)
    body = loop.child_by_field_name("body")
    why = f"`{text(loop.child_by_field_name('condition'))}` sums over a block size's name"
    if dim is None or body is None:
        raise Refused(f"{why}, not as a count of the block's partial sums", loop)
    shared = {a: len(e) for a, _d, e in _shared_arrays(plan)}
    for n in walk(body):
        if n.type != "assignment_expression" or \
                text(n.child_by_field_name("operator")) not in ACCUMULATE:
            continue
        if text(n.child_by_field_name("operator")) != "+=":
            raise Refused(f"{why}, combining them by other than +=", n)
        reads = [r for r in walk(n.child_by_field_name("right"))  # type: ignore[arg-type]
                 if r.type == "subscript_expression" and r.parent is not None and
                 r.parent.type != "subscript_expression"]
        if len(reads) != 1 or (read := subscript(reads[0])) is None or \
                read[0] not in shared or text(strip(reads[0])) != text(
                    strip(n.child_by_field_name("right"))):  # type: ignore[arg-type]
            raise Refused(f"{why}, adding no one shared partial sum", n)
        positions = [i for i, idx in enumerate(read[1]) if text(idx) == var]
        if len(positions) != 1:
            raise Refused(f"{why}, not reading the partial sums at {var}", n)
        _stored_partials(plan, read[0], shared[read[0]], positions[0], dim, names[dim])


def combined_partials(plan: Plan, names: dict[str, str]) -> None:
    """Refuse unless every shared array read across the threads of a dimension its extent
    is named by (``part[k][tx]``, ``part[ty + s][tx]`` with ``part[ROWS][..]``) holds that
    dimension's split partial sums (:func:`_stored_partials`): their total is the same at
    every size."""
    for array, _decl, extents in _shared_arrays(plan):
        for pos, extent in enumerate(extents):
            named = {text(i) for i in identifiers(extent)}
            for dim in (d for d, n in names.items() if n in named):
                if any(not plan.facts.is_thread(idx[pos], dim)
                       for idx in accesses(plan, array, len(extents))):
                    _stored_partials(plan, array, len(extents), pos, dim, names[dim])


def _stored_partials(plan: Plan, array: str, rank: int, pos: int, dim: str,
                     name: str) -> None:
    """Every store to ``array`` writes at ``pos`` the thread index ``dim`` a local whose
    updates all add in a loop from that thread index stepping by ``name`` or blockDim, or
    adds one of its slots to another (``part[ty][tx] += part[ty + s][tx]``: a tree)."""
    stores = [n for n in walk(plan.body) if n.type == "assignment_expression" and
              (t := subscript(n.child_by_field_name("left"))) is not None and  # type: ignore[arg-type]
              t[0] == array]
    if not stores:
        raise Refused(f"{array}'s partial sums are never stored")
    for store in stores:
        target = subscript(store.child_by_field_name("left"))  # type: ignore[arg-type]
        assert target is not None
        value = strip(store.child_by_field_name("right"))  # type: ignore[arg-type]
        step = subscript(value)
        if text(store.child_by_field_name("operator")) == "+=" and step is not None and \
                step[0] == array:
            continue  # a tree's step: one slot adds another's
        if text(store.child_by_field_name("operator")) != "=" or \
                not plan.facts.is_thread(target[1][pos], dim) or value.type != "identifier":
            raise Refused(f"`{text(store)[:50]}` stores no thread's partial sum at its "
                          f"thread index {dim}", store)
        _split_accumulator(plan, text(value), dim, name)


def _split_accumulator(plan: Plan, acc: str, dim: str, name: str) -> None:
    """Every write of ``acc`` adds inside a loop from the thread index ``dim`` stepping by
    ``name`` or ``blockDim.dim`` (its declaration starts it at zero)."""
    d = plan.facts.defs.get(acc)
    if d is None or d.value is None or not _zero(d.value):
        raise Refused(f"{acc} does not start at zero", d.decl if d else None)
    for n in walk(plan.body):
        if n.type not in ("assignment_expression", "update_expression") or \
                text(strip(n.child_by_field_name("left") or  # type: ignore[arg-type]
                           n.child_by_field_name("argument"))) != acc:
            continue
        if n.type != "assignment_expression" or \
                text(n.child_by_field_name("operator")) != "+=" or \
                not _in_thread_stride(plan, n, dim, name):
            raise Refused(f"`{text(n)[:50]}`: {acc} is not a sum of a loop the thread rows "
                          "split", n)


def _zero(value: Node) -> bool:
    """``0``, ``0.0f``, ``0.``: a literal zero."""
    value = strip(value)
    try:
        return value.type == "number_literal" and float(text(value).rstrip("fFuUlL")) == 0
    except ValueError:
        return False


def _in_thread_stride(plan: Plan, node: Node, dim: str, name: str) -> bool:
    up = node.parent
    while up is not None and up != plan.body:
        if up.type == "for_statement":
            init, update = up.child_by_field_name("initializer"), up.child_by_field_name("update")
            step = update.child_by_field_name("right") if update is not None and \
                update.type == "assignment_expression" and \
                text(update.child_by_field_name("operator")) == "+=" else None
            if init is not None and step is not None and init.type == "declaration" and \
                    plan.facts.is_thread(declared_name(init)[2] or init, dim) and \
                    (text(strip(step)) == name or builtin(strip(step), "blockDim") == dim):
                return True
        elif up.type in LOOPS:
            return False
        up = up.parent
    return False


def steps_by(loop: Node, name: str) -> bool:
    """``loop``'s update is ``v += name``."""
    update = loop.child_by_field_name("update")
    return update is not None and update.type == "assignment_expression" and \
        text(update.child_by_field_name("operator")) == "+=" and \
        text(strip(update.child_by_field_name("right"))) == name  # type: ignore[arg-type]
