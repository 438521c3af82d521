"""Shared slots a lifted block size governs: per-warp partials and other thread-indexed arrays.

A ``__shared__`` array written at an index the thread gives (``threadIdx.x``, the warp id
``threadIdx.x / 32`` or ``>> 5``, through locals) holds ``B / d`` live entries at block size
``B`` (``d`` the index's divisor). When the block lift moves ``B``:

* an extent equal to ``B / d`` follows it (``slot[8]`` -> ``slot[(BLOCK_THREADS / 32)]``); a
  larger literal extent stays, constrained to hold every entry (``BLOCK_THREADS <= E * d``);
* every bound on an index that reads or writes such an array (``w < 8`` of a loop over the
  slots, ``lane < 8`` of the first warp's read, ``threadIdx.x < 8``), written as a number, a
  local constant, a ``#define`` or a file-scope constant equal to ``B / d``, follows it (the
  constant's definition where it is named, so every use follows);
* where the reading is not certain the block size stays as written, with the line: an entry
  read at a fixed index past the first (an unrolled ``slot[0] + ... + slot[7]``), per-warp
  slots read other than by a subscript (``const float* q = slot``), a bound or
  a start one short of ``B / d`` (``w <= 7``, ``for (w = 7; w >= 0; --w)``), or a warp id of
  a 2-D block (``(threadIdx.y * 32 + threadIdx.x) / 32``), whose count the lift of one
  dimension does not model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.templater.analysis import (
    DIMS,
    binary,
    int_expr_value,
    strip,
    subscript_index,
    text,
    walk,
)
from workbench.templater.block_table import through_locals
from workbench.templater.macros import file_constant_values, integer_macros
from workbench.templater.plan import Plan

_COMPARE = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


@dataclass
class SlotLift:
    """What the block lift must also do for the shared slots: ``ties`` (node, divisor d: the
    node becomes ``B / d``), ``bounds`` (largest block sizes an extent holds), ``multiples``
    (the ``d`` of a tie the block's sizes would not all divide), or why it cannot
    (``refusal``: the node and the reason)."""

    ties: list[tuple[Node, int]] = field(default_factory=list)
    bounds: list[int] = field(default_factory=list)
    multiples: set[int] = field(default_factory=set)
    refusal: tuple[Node, str] | None = None


def _constants(plan: Plan) -> dict[str, int]:
    """Locals never assigned whose value is a constant integer (``constexpr int W = 8``)."""
    out: dict[str, int] = {"warpSize": 32}
    for d in plan.facts.defs.values():
        if not d.assigned and d.value is not None and not d.is_shared:
            value = int_expr_value(d.value, out)
            if value is not None:
                out[d.name] = value
    return out


def _divisor(plan: Plan, index: Node, dim: str, names: dict[str, int]) -> int | None:
    """``d`` where ``index`` is the thread's ``dim`` index divided by ``d`` (1: the index
    itself; ``/ d``, ``>> k``), read through locals; None for any other index."""
    node = through_locals(plan, index)
    if plan.facts.is_thread(node, dim):
        return 1
    parts = binary(node)
    if parts is None or not plan.facts.is_thread(through_locals(plan, parts[0]), dim):
        return None
    k = int_expr_value(through_locals(plan, parts[2]), names)
    if parts[1] == "/" and k:
        return k
    return 1 << k if parts[1] == ">>" and k is not None and k < 11 else None


def _flat_warp(plan: Plan, index: Node, names: dict[str, int]) -> int | None:
    """``d`` where ``index`` divides (``/ d``, ``>> k``) an expression of two thread
    dimensions: a 2-D block's warp id (``d`` 32); None for any other index."""
    parts = binary(through_locals(plan, index))
    if parts is None or parts[1] not in ("/", ">>"):
        return None
    numerator = through_locals(plan, parts[0])
    seen = {d for d in DIMS for n in walk(numerator)
            if plan.facts.is_thread(through_locals(plan, n), d)}
    k = int_expr_value(through_locals(plan, parts[2]), names)
    if len(seen) < 2 or not k:
        return None
    return k if parts[1] == "/" else 1 << k if k < 11 else None


def _flat_refusal(plan: Plan, name: str, extents: list[Node], subscripts: list[tuple[Node, Node]],
                  names: dict[str, int]) -> tuple[Node, str] | None:
    """Where ``name`` is indexed by a 2-D block's warp id and a constant sizes it below a
    block of 1024 threads or bounds one of its indices: the entry count follows the product
    of the block's dimensions, which the lift of one of them does not model."""
    flat = next(((s, d) for s, i in subscripts if (d := _flat_warp(plan, i, names))), None)
    if flat is None:
        return None
    extent = int_expr_value(through_locals(plan, extents[0]), names) if extents else None
    variables = [v for _s, i in subscripts for v in _variables(plan, i, names)]
    sub, d = flat
    if (extent is not None and extent * d < 1024) or any(
            value > 1 for _n, _op, _o, value in _bounds(plan, variables, names)):
        return sub, (f"`{text(sub)}` indexes `{name}` by a warp id over a 2-D block, and a "
                     "constant sizes or bounds its entries: their count follows the block's "
                     "thread count, which the lift of one block dimension does not model")
    return None


def _rows_of_slots(plan: Plan, name: str, dim: str,
                   names: dict[str, int]) -> tuple[Node, str] | None:
    """A subscript of the many-dimensional shared array ``name`` (``slot[buf][warp]``) at an
    index the warp gives (the thread divided by more than 1): its entry count follows the
    block, which this lift ties for one-dimensional arrays only."""
    for n in walk(plan.body):
        if n.type != "subscript_expression":
            continue
        root = n.child_by_field_name("argument")
        while root is not None and root.type == "subscript_expression":
            root = root.child_by_field_name("argument")
        index = strip(subscript_index(n))
        if root is not None and text(root) == name and \
                (_divisor(plan, index, dim, names) or 1) > 1:
            return n, (f"`{text(n)}` indexes the many-dimensional shared array `{name}` by the "
                       f"warp (`{text(index)}`): its count of entries follows the block, which "
                       "the lift ties in one-dimensional arrays only, so the block size stays "
                       "as written")
    return None


def _subscripts(plan: Plan, array: str) -> list[tuple[Node, Node]]:
    """(subscript, index) of each ``array[index]`` in the kernel."""
    return [(n, strip(subscript_index(n))) for n in walk(plan.body)
            if n.type == "subscript_expression" and
            text(n.child_by_field_name("argument")) == array]


def _edit_site(plan: Plan, node: Node, divisor: int) -> Node:
    """Where a constant ``node`` is defined when it is named (a local's value, a ``#define``'s
    text, a file-scope constant's value: every use follows), else ``node`` itself. A
    ``#define`` or file-scope constant of the block size itself (``divisor`` 1) is tied at
    the use: :func:`.macros.lift_macros` then makes its definition the parameter."""
    node = strip(node)
    if node.type != "identifier":
        return node
    name = text(node)
    d = plan.facts.defs.get(name)
    if d is not None and d.value is not None and not d.assigned:
        return strip(d.value)
    if divisor == 1:
        return node
    macros = integer_macros(plan.source)
    if name in macros:
        return macros[name].value_node
    return file_constant_values(plan, macros).get(name, node)


def _variables(plan: Plan, index: Node, names: dict[str, int]) -> list[Node]:
    """What bounds an index's range: the index itself and each variable or thread index in it
    (not its named constants)."""
    out = [index]
    for n in walk(index):
        if n is not index and ((n.type == "identifier" and text(n) not in names) or
                               any(plan.facts.is_thread(n, d) for d in DIMS)):
            out.append(n)
    return out


def _same(plan: Plan, a: Node, b: Node) -> bool:
    a, b = strip(a), strip(b)
    return text(a) == text(b) or any(
        plan.facts.is_thread(a, d) and plan.facts.is_thread(b, d) for d in DIMS)


_GUARDS = ("for_statement", "while_statement", "do_statement", "if_statement",
           "conditional_expression")


def _conditions(plan: Plan, node: Node) -> list[Node]:
    """The conditions of the loops, ``if``s and ``?:`` around ``node`` in the kernel."""
    out = []
    while node.parent is not None and node != plan.body:
        parent = node.parent
        cond = parent.child_by_field_name("condition") if parent.type in _GUARDS else None
        if cond is not None and cond != node:
            out.append(cond)
        node = parent
    return out


def _bounds(plan: Plan, variables: list[Node], names: dict[str, int],
            roots: list[Node] | None = None) -> list[tuple[Node, str, Node, int]]:
    """(comparison, operator with the variable on the left, constant side, its value) of each
    comparison of one of ``variables`` with a constant in ``roots`` (the kernel's body)."""
    out = []
    for n in (m for root in (roots or [plan.body]) for m in walk(root)):
        parts = binary(n)
        if parts is None or parts[1] not in _COMPARE:
            continue
        for var, op, other in ((parts[0], parts[1], parts[2]),
                               (parts[2], _COMPARE[parts[1]], parts[0])):
            value = int_expr_value(through_locals(plan, other), names)
            if value is not None and any(_same(plan, var, v) for v in variables) and \
                    int_expr_value(through_locals(plan, var), names) is None:
                out.append((n, op, other, value))
    return out


def _starts(plan: Plan, variables: list[Node], names: dict[str, int]) -> list[tuple[Node, int]]:
    """(node, value) of each constant a variable among ``variables`` is set to (its
    declaration, an assignment, a loop's start)."""
    wanted = {text(strip(v)) for v in variables}
    out = []
    for n in walk(plan.body):
        if n.type == "init_declarator":
            target, value = n.child_by_field_name("declarator"), n.child_by_field_name("value")
        elif n.type == "assignment_expression" and text(n.child_by_field_name("operator")) == "=":
            target, value = n.child_by_field_name("left"), n.child_by_field_name("right")
        else:
            continue
        if target is not None and value is not None and text(target) in wanted:
            number = int_expr_value(through_locals(plan, value), names)
            if number is not None:
                out.append((n, number))
    return out


def slot_lift(plan: Plan, dim: str, size: int, arrays: list[tuple[str, Node, list[Node]]],
              taken: list[Node], multi: bool) -> SlotLift:
    """What lifting the block's ``dim`` size ``size`` must also do for ``arrays`` (the kernel's
    shared arrays: name, declaration, extents) beyond ``taken`` (the uses the lift already
    replaces); see the module doc."""
    names = _constants(plan)
    out = SlotLift()
    spans = {(n.start_byte, n.end_byte) for n in taken}
    tied: set[tuple[int, int]] = set()

    def tie(node: Node, d: int) -> None:
        site = _edit_site(plan, node, d)
        key = (site.start_byte, site.end_byte)
        if key in spans or key in tied or any(
                e.start < key[1] and key[0] < e.end for e in plan.rw.edits):
            return
        tied.add(key)
        out.ties.append((site, d))
        if 32 % d or (multi and d > 1):  # a 2-D block's x size may be 4
            out.multiples.add(d)

    for name, _decl, extents in arrays:
        subscripts = _subscripts(plan, name)
        flat = _flat_refusal(plan, name, extents, subscripts, names) if multi else None
        if flat is not None:
            out.refusal = flat
            return out
        ds = {d for _s, i in subscripts if (d := _divisor(plan, i, dim, names)) is not None}
        if multi:  # an entry per thread of a 2-D block: the tile lift's (:mod:`.block`)
            ds = {d for d in ds if d > 1}
        if len(extents) > 1:
            out.refusal = _rows_of_slots(plan, name, dim, names)
            if out.refusal is not None:
                return out
        if not ds or len(extents) != 1:
            continue
        refusal = _slot_refusal(plan, name, subscripts, size, ds, names)
        if refusal is not None:
            out.refusal = refusal
            return out
        d, extent = max(ds), int_expr_value(through_locals(plan, extents[0]), names)
        if extent is not None and d > 1 and extent == size // d:
            tie(extents[0], d)
        elif extent is not None and extent > size // d and extent * d < 1024:
            out.bounds.append(extent * d)
        for sub, index in subscripts:  # a bound around the access: the count it reads
            around = _conditions(plan, sub)
            for _n, _op, other, value in _bounds(plan, _variables(plan, index, names), names,
                                                 around) if around else []:
                for d in ds:
                    if size % d == 0 and value == size // d and value > 1:
                        tie(other, d)
    return out


def _slot_refusal(plan: Plan, name: str, subscripts: list[tuple[Node, Node]], size: int,
                  ds: set[int], names: dict[str, int]) -> tuple[Node, str] | None:
    """Why the entries of ``name`` that a block of ``size`` fills cannot be read as following
    the block size (see the module doc), or None."""
    counts = {size // d for d in ds if size % d == 0 and size // d > 1}
    if max(ds) > 1:
        decl = plan.facts.defs[name].decl
        subs = {s.start_byte for s, _i in subscripts}  # a subscript starts with its array
        for use in plan.uses(name):
            if use.start_byte not in subs and not decl.start_byte <= use.start_byte < decl.end_byte:
                return use.parent or use, (
                    f"`{text(use.parent or use)}` reads `{name}` (one entry per {max(ds)} "
                    "threads) other than by a subscript: the lift does not follow its entries "
                    "there, so the block size stays as written")
        for sub, index in subscripts:
            k = int_expr_value(through_locals(plan, index), names)
            if k is not None and k >= 1:
                return sub, (f"`{text(sub)}` reads entry {k} of `{name}` (one per "
                             f"{max(ds)} threads) at a fixed index: at another block size the "
                             "block fills another count of entries, so the block size stays "
                             "as written")
    for sub, index in subscripts:
        inner = [n for n in walk(index) if n is not index and
                 int_expr_value(through_locals(plan, n), names) in counts]
        if inner:
            return sub, (f"`{text(sub)}` offsets an index of `{name}` by `{text(inner[0])}`, "
                         "the block's count of its entries as written: the lift does not read "
                         "which entries it means, so the block size stays as written")
    variables = [v for _s, i in subscripts for v in _variables(plan, i, names)]
    around = {(c.start_byte, c.end_byte) for s, _i in subscripts for c in _conditions(plan, s)}
    for n, op, _other, value in _bounds(plan, variables, names):
        if value + 1 in counts and op in ("<=", ">") and value > 0:
            return n, (f"`{text(n)}` bounds an index of `{name}` by {value}, one short of the "
                       f"{value + 1} entries the block fills: a form the lift does not read, "
                       "so the block size stays as written")
        if value in counts and not any(a <= n.start_byte and n.end_byte <= b for a, b in around):
            return n, (f"`{text(n)}` compares an index of `{name}` with {value}, the block's "
                       "count of its entries, away from its accesses (an early exit, another "
                       "loop's counter): the lift does not read which, so the block size stays "
                       "as written")
    for n, value in _starts(plan, [v for v in variables if v.type == "identifier"], names):
        if value > 1 and (value in counts or value + 1 in counts):
            return n, (f"`{text(n)}` starts an index of `{name}` at {value}, the block's count "
                       "of its entries (or one short): a walk the lift does not read, so the "
                       "block size stays as written")
    return None
